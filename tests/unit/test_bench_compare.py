"""The bench's regression guard: targets judged from a summary, and ``bench/compare.py``
naming what got slower (by measure and N) against a baseline."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        import compare
        import targets
    finally:
        sys.path.remove(str(BENCH))
    return SimpleNamespace(compare=compare, targets=targets)


def _series(sk: float, pw: float, ff: float | None = None) -> SimpleNamespace:
    return SimpleNamespace(sitekeep=[sk], playwright=[pw], firefox=[ff] if ff else [])


def _summary(bench: Any, save_1: float, save_20: float, rt: float) -> dict[str, Any]:
    series = {
        1: {"save": _series(save_1, 6.0, 13.0)},
        20: {"save": _series(save_20, 800.0, 30.0)},
    }
    singles = {"BiDi round trip, chromium": {"p50_ms": rt}}
    return dict(bench.targets.summarise(series, singles))


def test_every_target_is_judged_at_the_sizes_it_names(bench: Any) -> None:
    summary = _summary(bench, save_1=5.0, save_20=60.0, rt=2.5)
    got = {(v["target"], v["n"]): v["met"] for v in summary["targets"]}
    every = "save vs storage_state() ≤ 1.0× at every N"
    assert got[(every, 1)] is True and got[(every, 20)] is True
    assert got[("save vs storage_state() ≤ 0.05× at N ≥ 20", 20)] is False  # 60/800
    assert ("save vs storage_state() ≤ 0.05× at N ≥ 20", 1) not in got
    assert got[("Firefox save vs PW-Chromium ≤ 2.0× at N = 1", 1)] is False  # 13/6
    assert got[('BiDi round trip script.evaluate("1"), Chromium p50 ≤ 2 ms', None)] is False
    assert got[("journal overhead on a navigate ≤ 5 % of its median", None)] is None


def test_compare_names_what_got_slower_by_measure_and_size(
    bench: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _summary(bench, save_1=5.0, save_20=30.0, rt=1.8)
    new = _summary(bench, save_1=5.1, save_20=36.0, rt=2.6)
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    (tmp_path / "new.json").write_text(json.dumps({"summary": new}), encoding="utf-8")

    status = bench.compare.main([str(tmp_path / "new.json"), str(tmp_path / "old.json")])

    out = capsys.readouterr().out
    slower = [line for line in out.splitlines() if line.startswith("SLOWER")]
    assert any("save N=20 ratio" in line for line in slower)  # 0.0375 → 0.045: ×1.2
    assert any("BiDi round trip, chromium p50_ms" in line for line in slower)
    assert not any("save N=1 " in line for line in slower)  # ×1.02: noise
    assert "LOST   target no longer met: BiDi round trip" in out
    assert status == 1


def test_compare_takes_the_latest_baseline_and_passes_an_equal_run(
    bench: Any, tmp_path: Path
) -> None:
    summary = _summary(bench, save_1=5.0, save_20=30.0, rt=1.8)
    older = _summary(bench, save_1=1.0, save_20=1.0, rt=0.1)
    (tmp_path / "a.json").write_text(json.dumps({**summary, "recorded": "2026-12-02"}), "utf-8")
    (tmp_path / "b.json").write_text(json.dumps({**older, "recorded": "2026-12-01"}), "utf-8")
    assert bench.compare.latest_baseline(tmp_path) == tmp_path / "a.json"
    (tmp_path / "new.json").write_text(json.dumps(summary), encoding="utf-8")
    assert bench.compare.main([str(tmp_path / "new.json"), str(tmp_path / "a.json")]) == 0


def test_compare_names_both_loads_and_warns_when_one_run_was_twice_as_busy(bench: Any) -> None:
    old = _summary(bench, 5.0, 20.0, 2.0) | {"load_1min": {"median": 20.0}}
    calm = _summary(bench, 5.0, 20.0, 2.0) | {"load_1min": {"median": 12.0}}
    quiet = _summary(bench, 5.0, 20.0, 2.0) | {"load_1min": {"median": 4.0}}

    assert bench.compare.load_note(calm, old) == [
        "load average (1 min, median): baseline 20.00, new 12.00"
    ]
    note = bench.compare.load_note(quiet, old)
    assert note[0] == "load average (1 min, median): baseline 20.00, new 4.00"
    assert note[1].startswith("WARNING: the two runs saw very different load")
    unknown = bench.compare.load_note(quiet, _summary(bench, 5.0, 20.0, 2.0))
    assert unknown == ["load average (1 min, median): baseline not recorded, new 4.00"]
