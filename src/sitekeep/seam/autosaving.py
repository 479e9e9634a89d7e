"""An automatic save, inside one seam call (SPEC §18; issue #26).

It is a save like ``save_site_data`` — the same read (the live pages directly, the copies
taken as the browser left each page, the rest through a background spare tab), so the
page is never reloaded or disturbed — journaled through the one operation context as
operation ``autosave`` with its reason, and guarded: a site that was signed in at the
last save and is not now keeps that save's data (``signin.guard``), and the result names
it in ``guarded``. It never reopens a browser, never moves the history and never counts
as a use of the session (``last_used_at`` stays, so the reaper still sees it idle).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sitekeep.args import AutosaveReason
from sitekeep.seam.context import run_operation
from sitekeep.seam.operations import Done
from sitekeep.seam.session import Session
from sitekeep.signin import guard

__all__ = ["autosave", "autosaves"]


def autosaves(s: Session) -> bool:
    """Whether the session saves by itself: a live browser is recorded, ``autosave`` is
    on and the browser is not insecure (restored cookies never meet a man in the middle,
    and what an insecure browser holds is not saved unasked)."""
    record = s.record
    return (
        record is not None
        and record.browser is not None
        and record.autosave
        and not record.insecure
    )


async def autosave(s: Session, reason: AutosaveReason) -> dict[str, Any] | None:
    """Save the session's browser by itself, guarded; the record is written (its
    ``sign_in`` as the browser was judged), its ``last_used_at`` untouched.

    Returns:
        ``{reason, saved: {cookies, sites, skipped, spare_reads}, uri, guarded: [{site,
        reason}], signed_out: []}`` — or None when nothing was saved: the session does not
        save by itself (:func:`autosaves`), or its browser is gone.

    Raises:
        JournalUnavailable: the begin could not be made durable; nothing was touched.
        StoreUnavailable: the snapshot could not be stored; the old one stands.
        BrowserUnavailable: the browser stopped answering mid-save; nothing was stored.
        SnapshotTooLarge: the cookies alone pass the cap; the old snapshot stands.
    """
    if not autosaves(s):
        return None
    record = s.require()
    assert record.browser is not None
    live = s.browser or await s.parts.browsers.attach(record.browser)
    if live is None:
        return None
    s.browser = live
    previous = await s.parts.records.load_snapshot(record.tenant, record.key)
    indexed_db = previous is not None and any(o.indexed_db for o in previous.origins.values())

    async def work() -> Done:
        read = await s.reader().read(live, full=False, indexed_db=indexed_db, previous=previous)
        kept, guarded = guard(previous, read.snapshot)
        stored = replace(read, snapshot=kept)
        return Done(
            {"reason": reason, **stored.result(guarded)},
            page=read.page,
            refs="reused",
            saved=stored.counts(len(guarded)),
            save=kept,
            sign_in=read.snapshot.sign_in,
        )

    reached, last = len(s.pages), s.last
    done = await run_operation(s, "autosave", {"reason": reason}, work)
    # It looked where the browser already was: the call's own pages and landing stay.
    del s.pages[reached:]
    s.last = last
    await s.put()
    return dict(done.result)
