"""``sitekeep --help``: wall and CPU time, beside a bare ``python -c pass`` (issue #14: under
0.5 s). CPU (user + system, from the children's rusage) is the figure that holds on a
loaded machine; wall is printed too. Run: ``.venv/bin/python bench/cli_help.py [N]``."""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SITEKEEP = str(Path(sys.executable).parent / "sitekeep")


def measure(argv: list[str], runs: int) -> tuple[float, float]:
    """Median wall and median CPU seconds of ``runs`` runs of ``argv``."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env={"COLUMNS": "100"})
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(f"{'command':<28} {'wall (median)':>14} {'CPU (median)':>13}   runs={runs}")
    for name, argv in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("sitekeep --help", [SITEKEEP, "--help"]),
        ("sitekeep token --help", [SITEKEEP, "token", "--help"]),
    ):
        wall, cpu = measure(argv, runs)
        print(f"{name:<28} {wall:>12.3f} s {cpu:>11.3f} s")


if __name__ == "__main__":
    main()
