"""docs/architecture.md cannot drift from the code (issue #25 item 5): every module it
names exists, every module of the package is named in its layers, every SPEC section has
a row, and the README links to it."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import sitekeep

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = Path(sitekeep.__file__).parent
NAMED = re.compile(r"`([a-z_][a-z0-9_]*(?:/[a-z_][a-z0-9_]*)*(?:\.py|/))`")


def _named(text: str) -> list[str]:
    return NAMED.findall(text)


def _where(name: str) -> Path:
    """A path the page names: the repository's for ``tests/…`` and ``src/…``, else the
    package's (the page names modules relative to ``src/sitekeep/``)."""
    return ROOT / name if name.startswith(("tests/", "src/")) else PACKAGE / name


def test_every_module_the_page_names_exists() -> None:
    names = _named(DOC.read_text(encoding="utf-8"))
    assert len(names) > 100
    assert [n for n in names if not _where(n).exists()] == []


def test_every_module_of_the_package_has_a_layer_on_the_page() -> None:
    text = DOC.read_text(encoding="utf-8")
    layers = text[text.index("## The layers") : text.index("## The direction of imports")]
    table = set(_named(layers))
    children = [
        f"{m.name}/" if m.ispkg else f"{m.name}.py" for m in pkgutil.iter_modules(sitekeep.__path__)
    ]
    assert len(children) > 30
    assert [c for c in children if c not in table] == []


def test_every_spec_section_has_an_owner_row() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| §(\d+) ", text, flags=re.MULTILINE)
    numbers = sorted({int(n) for n in rows})
    assert numbers == list(range(1, max(numbers) + 1))
    assert max(numbers) >= 21


def test_the_readme_links_to_the_page() -> None:
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
