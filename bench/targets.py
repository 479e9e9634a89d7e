"""The targets of issue #15 and the summary ``save_restore.py`` keeps per commit.

A *summary* is small JSON: per measure and size the medians (ms) and ratios of one run,
plus the single figures (open latency, BiDi round trip, journal overhead), and every
target's verdict. ``bench/baseline/<commit>.json`` holds one per commit;
``bench/compare.py`` compares a new one to it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCHEMA = 1


@dataclass(frozen=True)
class Target:
    """One row of the issue's table: ``value(summary) <= limit`` at the sizes it names."""

    measure: str
    column: str
    """``ratio`` (sitekeep/Playwright), ``firefox_ratio`` (sitekeep-Firefox/Playwright) or a
    key of a single figure (``p50_ms``, ``overhead``)."""
    limit: float
    sizes: str
    """``every``, ``1``, ``>=20`` (sizes measured), or ``-`` for a single figure."""
    text: str

    def applies(self, n: int) -> bool:
        if self.sizes == "every":
            return True
        if self.sizes.startswith(">="):
            return n >= int(self.sizes[2:])
        return str(n) == self.sizes


TARGETS = [
    Target("save", "ratio", 1.0, "every", "save vs storage_state() ≤ 1.0× at every N"),
    Target("save", "ratio", 0.05, ">=20", "save vs storage_state() ≤ 0.05× at N ≥ 20"),
    Target("save", "firefox_ratio", 2.0, "1", "Firefox save vs PW-Chromium ≤ 2.0× at N = 1"),
    Target("save", "firefox_ratio", 0.1, ">=20", "Firefox save vs PW-Chromium ≤ 0.1× at N ≥ 20"),
    Target("restore + land", "ratio", 0.33, "every", "restore + land, pooled, ≤ 0.33× at every N"),
    Target(
        "restore + land, cold browser",
        "ratio",
        0.4,
        "every",
        "restore + land, cold browser, ≤ 0.4× at every N",
    ),
    Target(
        "restore + land, cold browser",
        "firefox_ratio",
        0.4,
        "every",
        "restore + land, cold browser, Firefox ≤ 0.4× at every N",
    ),
    Target(
        "open_session, pool, no site data, chromium",
        "p50_ms",
        50.0,
        "-",
        "open_session from the pool, no site data, Chromium p50 ≤ 50 ms",
    ),
    Target(
        "open_session, pool, no site data, firefox",
        "p50_ms",
        100.0,
        "-",
        "open_session from the pool, no site data, Firefox p50 ≤ 100 ms",
    ),
    Target(
        "BiDi round trip, chromium",
        "p50_ms",
        2.0,
        "-",
        'BiDi round trip script.evaluate("1"), Chromium p50 ≤ 2 ms',
    ),
    Target(
        "journal overhead on a navigate",
        "overhead",
        0.05,
        "-",
        "journal overhead on a navigate ≤ 5 % of its median",
    ),
]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def summarise(
    series: Mapping[int, Mapping[str, Any]], singles: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """``series``: size → operation → an object with ``sitekeep``, ``playwright`` and
    ``firefox`` lists of ms. ``singles``: measure → its figures (``p50_ms``…)."""
    measures: dict[str, dict[str, dict[str, float]]] = {}
    for n, by_op in series.items():
        for op, s in by_op.items():
            sk, pw, ff = median(s.sitekeep), median(s.playwright), median(s.firefox)
            row = {"sitekeep_ms": sk, "playwright_ms": pw, "ratio": sk / pw}
            if s.firefox:
                row |= {"firefox_ms": ff, "firefox_ratio": ff / pw}
            measures.setdefault(op, {})[str(n)] = row
    figures = {
        name: {k: v for k, v in fig.items() if k != "values_ms"}  # raw values stay in results/
        for name, fig in singles.items()
    }
    summary: dict[str, Any] = {"schema": SCHEMA, "measures": measures, "singles": figures}
    summary["targets"] = verdicts(summary)
    return summary


def verdicts(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every target with its figure and ``met`` (None when the figure was not measured)."""
    out: list[dict[str, Any]] = []
    for target in TARGETS:
        if target.sizes == "-":
            figure = (summary["singles"].get(target.measure) or {}).get(target.column)
            out.append(_verdict(target, None, figure))
            continue
        rows = summary["measures"].get(target.measure, {})
        for n in sorted(rows, key=int):
            if target.applies(int(n)):
                out.append(_verdict(target, int(n), rows[n].get(target.column)))
    return out


def _verdict(target: Target, n: int | None, figure: float | None) -> dict[str, Any]:
    known = figure is not None and not math.isnan(figure)
    return {
        "target": target.text,
        "measure": target.measure,
        "column": target.column,
        "n": n,
        "value": figure if known else None,
        "limit": target.limit,
        "met": (figure <= target.limit) if known and figure is not None else None,
    }


def verdict_line(v: Mapping[str, Any]) -> str:
    where = f" N={v['n']}" if v["n"] is not None else ""
    if v["value"] is None:
        return f"target{where}: {v['target']} — not measured"
    shown = f"{v['value']:.3f}" if v["value"] < 10 else f"{v['value']:.0f}"
    word = "met" if v["met"] else "NOT MET"
    return f"target{where}: {v['target']} — {v['column']} {shown} → {word}"
