"""The reaper's pure rules (``sitekeep.reaping``): which open run ends, and why."""

from __future__ import annotations

import pytest

from sitekeep.model import BrowserRef, SessionRecord
from sitekeep.reaping import owns, verdict
from sitekeep.stores.base import Run

NOW = 1_700_000_000.0
IDLE = 900.0


def run(webdriver_session: str | None = "wd-1") -> Run:
    return Run(
        "r1", "t1", "k", "chromium", NOW - 5000, "http://grid.example.test", webdriver_session
    )


def record(session_id: str | None = "wd-1", last_used: float = NOW - 10) -> SessionRecord:
    ref = (
        None
        if session_id is None
        else BrowserRef("chromium", "http://grid.example.test", session_id, "ws://x", NOW - 5000)
    )
    return SessionRecord("t1", "k", "agent", "chromium", NOW - 5000, last_used, browser=ref)


@pytest.mark.parametrize(
    ("the_run", "the_record", "expected"),
    [
        (run(), record(), None),  # in use recently: kept
        (run(), record(last_used=NOW - IDLE), None),  # exactly at the bound: kept
        (run(), record(last_used=NOW - IDLE - 0.001), "reaped"),  # idle past the bound
        (run(), None, "expired"),  # its session is gone
        (run(None), None, "expired"),
        (run(None), record(), "crashed"),  # reserved, never started: its call died
        (run("wd-2"), record("wd-1"), "reaped"),  # the session moved on to another browser
        (run(), record(None), "reaped"),  # the session's browser was let go, this one stayed
    ],
)
def test_verdict(the_run: Run, the_record: SessionRecord | None, expected: str | None) -> None:
    assert verdict(the_run, the_record, now=NOW, idle=IDLE) == expected


def test_a_run_is_owned_only_by_the_record_that_points_at_its_browser() -> None:
    assert owns(record("wd-1"), run("wd-1"))
    assert not owns(record("wd-1"), run("wd-2"))
    assert not owns(record(None), run("wd-1"))
    assert not owns(record("wd-1"), run(None))
