"""The benchmark's phase tracer wraps engine steps by name: a renamed step must fail here,
not only when someone runs ``bench/save_restore.py --phases``."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_phase_tracer_wraps_every_step_it_names_and_puts_them_back() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import save_restore
    finally:
        sys.path.remove(str(BENCH))
    from sitekeep.browser import restore, save

    before = (restore._set_cookies, restore._Restore.write_site, save.live_reads)
    tracer = save_restore.Tracer()
    with tracer.active():
        during = (restore._set_cookies, restore._Restore.write_site, save.live_reads)
        assert all(d is not b for d, b in zip(during, before, strict=True))
    assert (restore._set_cookies, restore._Restore.write_site, save.live_reads) == before
