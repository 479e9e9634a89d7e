"""``bench/journal.py`` measures the replay child's own peak RSS (issue #25): Linux counts
a parent's resident memory at the fork in its child's ``ru_maxrss``, so the bench's own
size (the generated ids, the decode sample, the modules it imports) must not be read as
the replay's."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "journal.py"
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_journal", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _resident() -> int:
    """This process's resident memory now, in bytes."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


def test_a_childs_peak_rss_is_its_own_not_the_bench_processs(bench: Any, tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 10)
    ballast = b"x" * (256 * MiB)  # written, so resident in this process
    assert _resident() > 256 * MiB
    measured = bench.measure("naive", path)
    del ballast
    assert measured["records"] == 10
    assert 0 < measured["rss"] < 64 * MiB, f"{measured['rss'] / MiB:.0f} MiB"
