"""A save's reads composed into a snapshot: the one engine of ``save_site_data`` and of
:func:`sitekeep.attach.save_from` (SPEC §3 Save)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sitekeep import sitedata
from sitekeep.browser.indexeddb import NOT_CARRIED, read_databases
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.save import PARTITIONED, lost_reason, save_read, settle_jar
from sitekeep.model import SignIn, SiteData, Skipped

__all__ = ["Captured", "read_snapshot"]


@dataclass(frozen=True, slots=True)
class Captured:
    """A snapshot just read, what it left out (never a value), how many origins were
    read through the spare tab, the origins in visit order (the main tab's first) and
    where the main tab is (None when no read could tell)."""

    snapshot: SiteData
    skipped: list[Skipped]
    spare_reads: int
    order: list[str]
    page: PageInfo | None


async def read_snapshot(
    browser: LiveBrowser,
    history_origins: Sequence[str],
    previous: SiteData | Awaitable[SiteData | None] | None,
    *,
    deadline: float,
    cap: int,
    now: float,
    full: bool = False,
    indexed_db: bool = False,
    journaled: Callable[[], Awaitable[None]] | None = None,
    sign_in: Callable[[], Awaitable[Callable[[SiteData], Mapping[str, SignIn]]]] | None = None,
) -> Captured:
    """Read the browser's site data and compose it over ``previous`` (``sitedata.compose``).

    Args:
        history_origins: the origins to carry, newest first; the main tab's origin goes
            first whether it is there or not (found by the same round trip as the reads).
        previous: the last snapshot, whose values stand where a read failed — or an
            awaitable of it (a store read), awaited beside the browser's reads: a save
            waits on the slower of the two, not on both (issue #15).
        deadline: seconds the spare-tab loop may take. cap: the snapshot cap, bytes.
        now: seconds since the epoch, the snapshot's ``saved_at``.
        journaled: awaited after the first reads, before the spare tab or an IndexedDB
            read (a journal begin written beside the first reads, SPEC §8).
        sign_in: awaited once the reads are done, for what judges each host's sign-in
            state of the composed snapshot (``sitedata.compose``; SPEC §18).

    Raises:
        SnapshotTooLarge: the cookies alone pass ``cap``.
        BrowserUnavailable: BiDi is down; nothing was read.
    """
    if inspect.isawaitable(previous):
        loading = asyncio.ensure_future(previous)
        loading.add_done_callback(_retrieved)
        try:
            read = await save_read(
                browser, history_origins, deadline=deadline, full=full, journaled=journaled
            )
        except BaseException:
            loading.cancel()
            raise
        previous = await loading
    else:
        read = await save_read(
            browser, history_origins, deadline=deadline, full=full, journaled=journaled
        )
    order = read.order
    databases: dict[str, list[dict[str, Any]]] | None = None
    databases_failed: dict[str, str] = {}
    if indexed_db:
        if journaled is not None:
            await journaled()
        databases, databases_failed = await read_databases(browser, order, deadline=deadline)
    session = read.session if read.session_read or previous is None else previous.session
    cookies = settle_jar(browser, read.cookies, previous.cookies if previous else ())
    judge = await sign_in() if sign_in is not None else None
    snapshot, skipped = sitedata.compose(
        previous,
        cookies=cookies,
        read=read.local,
        session=session,
        not_read=read.not_read,
        visit_order=order,
        saved_at=now,
        cap=cap,
        tabs=read.tabs,
        user_agent=read.user_agent,
        indexed_db=databases,
        indexed_db_failed=databases_failed,
        sign_in=judge,
    )
    if not indexed_db:
        skipped.extend(Skipped(o, NOT_CARRIED) for o in order if o in read.idb_origins)
    skipped.extend(Skipped(o, PARTITIONED) for o in read.partitioned)
    skipped.extend(lost_reason(c) for c in read.lost_cookies)
    return Captured(snapshot, skipped, read.spare_reads, order, read.page)


def _retrieved(task: asyncio.Future[Any]) -> None:
    """A store read left behind by a failed browser read: its error is not the save's."""
    if not task.cancelled():
        task.exception()
