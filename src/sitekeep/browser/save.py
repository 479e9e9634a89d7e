"""Save: what the browser holds, read as cheaply as exactness allows (SPEC §3 Save).

A save reads the whole cookie jar, every live document (the main tab with its
sessionStorage, popups, frames), takes exact copies from the leave tracker for the origins
the browser has left, and reads only the rest through a background spare tab — every origin
of one site in one navigation. It reports what it read and what it could not;
``sitekeep.sitedata.compose`` applies the rules. No value is ever logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sitekeep.browser import wire
from sitekeep.browser.docs import (
    TIMEOUT,
    DocRead,
    frames_by_origin,
    live_reads,
    read_cookies,
    read_docs,
)
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.spare import SpareResponder, background_spare
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.cookies import cookie_host, cookie_key, cookie_label, settle_same_site
from sitekeep.errors import BidiError, BidiTimeout
from sitekeep.history import origin_of
from sitekeep.model import Cookie, SessionStorage, Skipped, TabStorage
from sitekeep.sites import group_by_site

__all__ = ["PARTITIONED", "SW_REASON", "SaveRead", "lost_reason", "save_read", "settle_jar"]

log = logging.getLogger(__name__)

SW_REASON = "a service worker answered: save while on this site"
PARTITIONED = (
    "its storage in a cross-site frame is partitioned by the frame's top-level site and "
    "was not carried (its own first-party storage was)"
)


@dataclass
class SaveRead:
    """What a save read. ``local`` holds every origin read (empty ones included);
    ``not_read`` maps each origin that failed or was not attempted to its reason."""

    cookies: list[Cookie]
    local: dict[str, dict[str, str]]
    session: SessionStorage | None
    not_read: dict[str, str]
    spare_reads: int = 0
    session_read: bool = True
    """False when the main tab could not be read: its last sessionStorage stands."""
    lost_cookies: list[Cookie] = field(default_factory=list)
    """Cookies the browser reported without some of their value's bytes: not saved."""
    tabs: list[TabStorage] = field(default_factory=list)
    """The sessionStorage of each other top-level tab (popups, ``target=_blank``)."""
    user_agent: str | None = None
    """``navigator.userAgent`` of the main tab (None when it could not be read)."""
    partitioned: list[str] = field(default_factory=list)
    """Origins of cross-site frames holding storage partitioned by their top-level site,
    which a save does not carry."""
    idb_origins: set[str] = field(default_factory=set)
    """Origins known to hold IndexedDB databases (a read found some, or a page opened one)."""
    page: PageInfo | None = None
    """Where the main tab is (None when neither a read nor ``page_info`` could tell)."""
    order: list[str] = field(default_factory=list)
    """The origins in visit order: the main tab's first, then the history's."""


async def save_read(
    browser: LiveBrowser,
    history_origins: Sequence[str],
    *,
    deadline: float,
    full: bool = False,
    journaled: Callable[[], Awaitable[None]] | None = None,
) -> SaveRead:
    """Read what a save needs (SPEC §3 Save steps 1–3), and where the main tab is.

    Args:
        browser: the live browser.
        history_origins: the session's history, newest first; the main tab's origin goes
            first in ``SaveRead.order`` whether it is there or not.
        deadline: seconds the spare-tab loop may take in all.
        full: read every origin through the spare tab, ignoring the leave tracker (the
            reference a fast save is compared against).
        journaled: awaited after the reads of the live documents and before the spare
            tab opens (the call's journal begin, written beside the first reads).

    Raises:
        BrowserUnavailable: BiDi is down (nothing is saved).
        BidiError: the main tab could neither be read nor tell where it is.
    """
    tracker = browser.tracker
    tracker.begin()
    lost: list[Cookie] = []
    jar, docs = await asyncio.gather(read_cookies(browser, lost), live_reads(browser))
    page, docs = await _main_page(browser, docs)
    order = _visit_order(page, history_origins)
    found = _LiveDocuments.sort(browser, docs)
    main = next((d for d in docs if d.context == browser.context), None)
    idb = {d.origin for d in docs if d.idb and d.origin is not None} | tracker.indexed_db
    tracker.reconcile({d.context: d.origin for d in docs if d.error is None})
    local, need = _known(tracker, order, found, main, full=full)
    not_read = await _read_rest(browser, local, need, deadline, idb, journaled)
    return SaveRead(
        jar,
        local,
        found.session,
        not_read,
        len(need),
        session_read=main is not None and main.error is None,
        lost_cookies=lost,
        tabs=found.tabs,
        user_agent=main.user_agent if main is not None else None,
        partitioned=found.partitioned,
        idb_origins=idb,
        page=page,
        order=order,
    )


async def _read_rest(
    browser: LiveBrowser,
    local: dict[str, dict[str, str]],
    need: Sequence[str],
    deadline: float,
    idb: set[str],
    journaled: Callable[[], Awaitable[None]] | None,
) -> dict[str, str]:
    """Read the origins ``need`` through the spare tab into ``local`` (``journaled``
    first, when there are any); after a full read, the leave tracker trusts it again.
    Returns the origins not read, with why."""
    if need:
        log.debug("save reads %d origins through the spare tab: %s", len(need), need)
        if journaled is not None:
            await journaled()
    read, not_read = await _spare_read(browser, need, deadline, idb)
    local.update(read)
    if not browser.tracker.complete and not not_read:
        browser.tracker.resync(local)
    return not_read


def _visit_order(page: PageInfo, history_origins: Sequence[str]) -> list[str]:
    """The main tab's origin, then the history's others, newest first."""
    current = origin_of(page.url)
    return ([current] if current else []) + [o for o in history_origins if o != current]


@dataclass
class _LiveDocuments:
    """What the live documents hold: each trusted origin's localStorage (``local``), the
    origins read untrusted (``tainted``; ``partitioned``: those whose frame held
    storage), the main tab's sessionStorage and the other tabs'."""

    local: dict[str, dict[str, str]] = field(default_factory=dict)
    tainted: set[str] = field(default_factory=set)
    partitioned: list[str] = field(default_factory=list)
    session: SessionStorage | None = None
    tabs: list[TabStorage] = field(default_factory=list)

    @classmethod
    def sort(cls, browser: LiveBrowser, docs: Iterable[DocRead]) -> _LiveDocuments:
        found = cls()
        for doc in docs:
            if doc.origin is None or doc.local is None:
                continue
            if doc.trusted:
                found.local[doc.origin] = doc.local
            else:
                found.tainted.add(doc.origin)
                if doc.local and doc.origin not in found.partitioned:
                    found.partitioned.append(doc.origin)
            if doc.context == browser.context and doc.session:
                found.session = SessionStorage(doc.origin, doc.session)
            elif doc.top and doc.session and doc.context != browser.context:
                found.tabs.append(TabStorage(doc.origin, doc.url, doc.session))
        return found


def _known(
    tracker: LeaveTracker,
    order: Sequence[str],
    found: _LiveDocuments,
    main: DocRead | None,
    *,
    full: bool,
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """The localStorage of each origin of ``order`` known without the spare tab — read
    live, else the leave tracker's exact copy (none with ``full``, nor for an origin
    read untrusted) — and the origins still to read. The main tab's own read stands
    whether its origin is in ``order`` or not."""
    local: dict[str, dict[str, str]] = {}
    need: list[str] = []
    for origin in order:
        if origin in found.local:
            local[origin] = found.local[origin]
            continue
        copy = None if full or origin in found.tainted else tracker.copy(origin)
        if copy is None:
            need.append(origin)
        else:
            local[origin] = copy
    if main is not None and main.origin is not None and main.origin in found.local:
        local[main.origin] = found.local[main.origin]
    return local, need


async def _main_page(browser: LiveBrowser, docs: list[DocRead]) -> tuple[PageInfo, list[DocRead]]:
    """Where the main tab is, from its read; when that read failed (a document being
    replaced has no realm for a moment), ``page_info`` waits it out and the tab is read
    once more."""
    main = next((d for d in docs if d.context == browser.context), None)
    if main is not None and main.title is not None:
        return PageInfo(main.url, main.title), docs
    page = await browser.page_info()
    if main is None:
        docs = [d for d in docs if d.context != browser.context]
        docs.extend(await read_docs(browser, [browser.context]))
    return page, docs


def settle_jar(
    browser: LiveBrowser, cookies: Sequence[Cookie], previous: Sequence[Cookie]
) -> list[Cookie]:
    """Chromium's cookies with the SameSite each was set with (``browser.samesite``):
    what its ``Set-Cookie`` header said, else the last snapshot's word, never wider."""
    if browser.ref.kind != "chromium":
        return list(cookies)
    before = {cookie_key(c): c for c in previous}
    return [
        settle_same_site(c, browser.same_site.said(cookie_key(c)), before.get(cookie_key(c)))
        for c in cookies
    ]


def lost_reason(cookie: Cookie) -> Skipped:
    """The save's report of a cookie whose value the browser could not report."""
    return Skipped(
        cookie_host(cookie),
        f"{cookie_label(*cookie_key(cookie))} not saved: its value holds bytes that are not UTF-8, "
        "which the browser reports without them",
    )


async def _spare_read(
    browser: LiveBrowser, origins: Sequence[str], deadline: float, idb: set[str]
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Read each origin's localStorage in a background spare tab, a site per navigation.

    Each read is bounded by the BiDi timeout, the loop by ``deadline`` seconds, and the loop
    stops at the first timeout: what is left is named as not attempted.
    """
    if not origins:
        return {}, {}
    conn = browser.conn
    stop_at = time.monotonic() + deadline
    read: dict[str, dict[str, str]] = {}
    not_read: dict[str, str] = {}
    async with background_spare(conn) as (tab, spare):
        workers = await _read_sites(browser, spare, tab, origins, stop_at, read, not_read, idb)
        for origin in workers:
            if time.monotonic() > stop_at:
                not_read[origin] = "not attempted: the save's deadline passed"
                continue
            local = await _read_past_worker(browser, spare, tab, origin)
            if local is None:
                browser.tracker.invalidate(origin)
                not_read[origin] = SW_REASON
            else:
                read[origin] = local
    return read, not_read


async def _read_sites(
    browser: LiveBrowser,
    spare: SpareResponder,
    tab: str,
    origins: Sequence[str],
    stop_at: float,
    read: dict[str, dict[str, str]],
    not_read: dict[str, str],
    idb: set[str],
) -> list[str]:
    """Read site by site into ``read``/``not_read``; returns origins a worker answered."""
    workers: list[str] = []
    groups = list(group_by_site(origins).values())
    for index, members in enumerate(groups):
        if time.monotonic() > stop_at:
            _skip_rest(groups[index:], not_read, "not attempted: the save's deadline passed")
            break
        try:
            docs = await _visit(browser, spare, tab, members)
        except BidiTimeout:
            docs = {o: DocRead("", o, False, False, None, None, TIMEOUT) for o in members}
        except BidiError as exc:
            _skip_rest([members], not_read, f"could not be read: {exc.code}")
            continue
        for origin in members:
            doc = docs.get(origin)
            if doc is None:
                not_read[origin] = "could not be read: its frame did not load"
            elif doc.error == TIMEOUT:
                not_read[origin] = "timed out"
            elif not doc.spare:
                workers.append(origin)
            elif doc.local is None:
                not_read[origin] = f"could not be read: {doc.error or 'no storage'}"
            else:
                read[origin] = doc.local
                if doc.idb:
                    idb.add(origin)
        if any(d.error == TIMEOUT for d in docs.values()):
            _skip_rest(groups[index + 1 :], not_read, "not attempted: an earlier read timed out")
            break
    return workers


def _skip_rest(groups: Iterable[Sequence[str]], not_read: dict[str, str], reason: str) -> None:
    for members in groups:
        for origin in members:
            not_read.setdefault(origin, reason)


async def _visit(
    browser: LiveBrowser, spare: SpareResponder, tab: str, members: Sequence[str]
) -> dict[str, DocRead]:
    """Stand ``tab`` on the site of ``members`` (the first on top, the rest in frames) and
    read each; a read that timed out is kept, with ``error="timeout"``."""
    url = spare.url(members[0], members[1:])
    await wire.call(browser.conn, wire.browsing_context_navigate(tab, url, wait="complete"))
    by_origin = await frames_by_origin(browser, tab, members)
    origin_of_context = {c: o for o, c in by_origin.items()}
    docs = await read_docs(browser, [by_origin[o] for o in members if o in by_origin])
    return {origin_of_context[d.context]: d for d in docs}


async def _read_past_worker(
    browser: LiveBrowser, spare: SpareResponder, tab: str, origin: str
) -> dict[str, str] | None:
    """A service worker answered the spare frame. Stand on the origin at top level; on
    Chromium a reload with ``ignoreCache`` bypassed the worker in the spike (§6). None
    when the marker is still missing."""
    try:
        docs = await _visit(browser, spare, tab, [origin])
        doc = docs.get(origin)
        if doc is not None and doc.spare:
            return doc.local
        if browser.ref.kind != "chromium":
            return None  # Firefox rejects reload(ignoreCache)
        reload = wire.browsing_context_reload(tab, ignore_cache=True, wait="complete")
        await wire.call(browser.conn, reload)
        reads = await read_docs(browser, [tab])
    except BidiError:
        return None
    doc = reads[0] if reads else None
    if doc is None or not doc.spare or doc.origin != origin:
        return None
    return doc.local
