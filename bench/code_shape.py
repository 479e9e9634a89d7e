"""The house's shape (issue #25): function lengths (p90, max) and module sizes over
``src/sitekeep``, with the bars beside them (p90 <= 25, max <= 80 lines a function; <= 600
lines a module).

Usage::

    .venv/bin/python bench/code_shape.py [--top 10]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "sitekeep"
BARS = {"p90": 25, "max": 80, "module": 600}


def modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "node_modules" not in p.parts)


def functions(path: Path) -> list[tuple[int, str]]:
    """(lines, "file:line name") of every function and method in ``path``."""
    tree = ast.parse(path.read_text())
    where = path.relative_to(SRC.parent)
    return [
        (node.end_lineno - node.lineno + 1, f"{where}:{node.lineno} {node.name}")
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    lengths = sorted(length for path in modules() for length in functions(path))
    sizes = sorted(
        (len(p.read_text().splitlines()), str(p.relative_to(SRC.parent))) for p in modules()
    )
    p90 = lengths[int(len(lengths) * 0.9)][0]
    longest, biggest = lengths[-1], sizes[-1]
    print(f"functions: {len(lengths)}; p90 {p90} lines (bar {BARS['p90']});", end=" ")
    print(f"max {longest[0]} ({longest[1]}; bar {BARS['max']})")
    print(f"modules: {len(sizes)}; largest {biggest[0]} lines ({biggest[1]}; bar {BARS['module']})")
    for length, name in lengths[-args.top :][::-1]:
        print(f"  {length:4d}  {name}")
    ok = p90 <= BARS["p90"] and longest[0] <= BARS["max"] and biggest[0] <= BARS["module"]
    print("bars: met" if ok else "bars: NOT met")


if __name__ == "__main__":
    main()
