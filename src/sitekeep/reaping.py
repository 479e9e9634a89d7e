"""Pure rules of the reaper: which open run to end, and why (SPEC §13).

The reaper holds the session's lock while it decides, so no call of any replica is using
the session then: an open run that is not the session's current browser is left over from
a call that died (a replica killed between starting a browser and writing the record), and
a run whose browser never started is a reservation whose call died.
"""

from __future__ import annotations

from sitekeep.model import SessionRecord
from sitekeep.stores.base import ClosedReason, Run

__all__ = ["owns", "verdict"]


def owns(record: SessionRecord, run: Run) -> bool:
    """Whether ``run`` is the session's current browser."""
    return record.browser is not None and record.browser.session_id == run.webdriver_session


def verdict(
    run: Run, record: SessionRecord | None, *, now: float, idle: float
) -> ClosedReason | None:
    """Why the open ``run`` ends now, or None to keep it.

    Args:
        record: its session's record (None: the session expired or was deleted).
        now: seconds since the epoch. idle: ``browser_idle`` in seconds.

    Returns:
        ``expired`` — its session is gone; ``crashed`` — its browser never started;
        ``reaped`` — no session owns it, or it was unused for longer than ``idle``.
    """
    if record is None:
        return "expired"
    if run.webdriver_session is None:
        return "crashed"
    if not owns(record, run):
        return "reaped"
    if now - record.last_used_at > idle:
        return "reaped"
    return None
