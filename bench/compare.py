"""Compare a new ``save_restore.py`` run to a baseline and name what got slower.

Usage::

    .venv/bin/python bench/compare.py NEW.json [BASELINE.json] [--tolerance 0.15]

``NEW.json`` is a run's output (``bench/results/save_restore-*.json``) or a summary;
``BASELINE.json`` defaults to the latest summary under ``bench/baseline/`` (by its
``recorded`` time). Compared per measure and N: the ratio to Playwright in the same run
(sitekeep/Playwright on Chromium, sitekeep-Firefox/Playwright), which cancels most of the
machine's noise; single figures (open latency, BiDi round trip, journal overhead) by their
own value. A figure is *slower* when new/old exceeds ``1 + tolerance``. Targets that went
from met to not met are named too. Exit status 1 when anything got slower.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

BASELINES = Path(__file__).resolve().parent / "baseline"
COMPARED = ("ratio", "firefox_ratio")
SINGLE = ("p50_ms", "overhead")


def load_summary(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    summary: dict[str, Any] = data.get("summary", data)
    if "measures" not in summary:
        raise SystemExit(f"{path}: not a save_restore summary (no 'measures')")
    return summary


def latest_baseline(directory: Path = BASELINES) -> Path:
    found = sorted(
        directory.glob("*.json"),
        key=lambda p: json.loads(p.read_text(encoding="utf-8")).get("recorded", ""),
    )
    if not found:
        raise SystemExit(f"no baseline under {directory}")
    return found[-1]


def changes(new: dict[str, Any], old: dict[str, Any], tolerance: float) -> list[dict[str, Any]]:
    """Every figure both summaries hold: ``{measure, n, column, old, new, factor, slower}``."""
    rows: list[dict[str, Any]] = []
    for measure, by_n in new["measures"].items():
        for n, row in by_n.items():
            before = old["measures"].get(measure, {}).get(n, {})
            for column in COMPARED:
                rows.extend(
                    _row(measure, n, column, before.get(column), row.get(column), tolerance)
                )
    for measure, figures in new.get("singles", {}).items():
        before = old.get("singles", {}).get(measure, {})
        for column in SINGLE:
            rows.extend(
                _row(measure, None, column, before.get(column), figures.get(column), tolerance)
            )
    return rows


def _row(
    measure: str, n: str | None, column: str, old: Any, new: Any, tolerance: float
) -> list[dict[str, Any]]:
    if not _number(old) or not _number(new):
        return []
    factor = new / old if old else math.inf
    slower = factor > 1 + tolerance and new - old > _floor(column)
    return [
        {
            "measure": measure,
            "n": n,
            "column": column,
            "old": old,
            "new": new,
            "factor": factor,
            "slower": slower,
        }
    ]


def _floor(column: str) -> float:
    """A change smaller than this is noise whatever its factor (a ratio of 0.001 → 0.002
    doubles, and means nothing)."""
    return {"ratio": 0.005, "firefox_ratio": 0.005, "p50_ms": 0.2, "overhead": 0.01}[column]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not math.isnan(value)


def lost_targets(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    def key(v: dict[str, Any]) -> tuple[str, Any]:
        return v["target"], v["n"]

    before = {key(v): v["met"] for v in old.get("targets", [])}
    return [
        f"{v['target']}" + (f" (N={v['n']})" if v["n"] is not None else "")
        for v in new.get("targets", [])
        if v["met"] is False and before.get(key(v)) is True
    ]


def load_note(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    """The machine's load in both runs (median 1-minute load average), and a warning when
    one was more than twice as busy: ratios move with load (Playwright's multi-step
    restores slow down more than sitekeep's on a busy machine), so a ratio that grew
    beside a load that fell may be the load, not the code."""

    def median_load(summary: dict[str, Any]) -> float | None:
        value = (summary.get("load_1min") or {}).get("median")
        return float(value) if _number(value) else None

    before, after = median_load(old), median_load(new)
    shown = [f"{v:.2f}" if v is not None else "not recorded" for v in (before, after)]
    lines = [f"load average (1 min, median): baseline {shown[0]}, new {shown[1]}"]
    if before and after and max(before, after) > 2 * min(before, after):
        lines.append(
            "WARNING: the two runs saw very different load; ratios move with it — "
            "compare runs made under similar load before blaming the code"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("new", type=Path)
    parser.add_argument("baseline", type=Path, nargs="?")
    parser.add_argument("--tolerance", type=float, default=0.15)
    args = parser.parse_args(argv)
    base_path = args.baseline or latest_baseline()
    new, old = load_summary(args.new), load_summary(base_path)
    print(f"{args.new} against {base_path} (commit {old.get('commit', '?')})")
    for line in load_note(new, old):
        print(line)
    rows = changes(new, old, args.tolerance)
    for r in rows:
        where = f" N={r['n']}" if r["n"] is not None else ""
        mark = "SLOWER" if r["slower"] else "ok"
        print(
            f"{mark:6} {r['measure']}{where} {r['column']}: "
            f"{r['old']:.3f} → {r['new']:.3f} (×{r['factor']:.2f})"
        )
    slower = [r for r in rows if r["slower"]]
    lost = lost_targets(new, old)
    for text in lost:
        print(f"LOST   target no longer met: {text}")
    print(f"{len(slower)} slower of {len(rows)} compared; {len(lost)} targets lost")
    return 1 if slower or lost else 0


if __name__ == "__main__":
    sys.exit(main())
