"""The site-data engine: what a save reads and how a restore writes (SPEC §3).

Save reads the whole cookie jar, the live documents (the main tab with its sessionStorage,
popups, frames), takes exact copies from the leave tracker for the origins the browser has
left, and reads only the rest through a spare tab — every origin of one site in one
navigation. Restore writes the cookies (pipelined, then checked against the jar), then the
storage of each site through spare pages in the main tab, then lands.

Nothing here decides what the snapshot becomes: it reports what it read and what it could
not; ``sitekeep.sitedata.compose`` applies the rules. No value is ever logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.scripts import READ, SPARE_PATH, WRITE
from sitekeep.browser.spare import SpareResponder
from sitekeep.cookies import cookie_host, from_bidi, is_unexpired, to_bidi
from sitekeep.errors import BidiError, BidiTimeout, BrowserUnavailable
from sitekeep.history import host_of, origin_of
from sitekeep.model import Cookie, SessionStorage, SiteData, Skipped
from sitekeep.sites import group_by_site

__all__ = ["RestoreReport", "SaveRead", "read_cookies", "restore", "save_read"]

log = logging.getLogger(__name__)

SW_REASON = "a service worker answered: save while on this site"
TIMEOUT = "timeout"


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


@dataclass
class RestoreReport:
    """What a restore wrote (hosts) and what it could not (``{site, reason}``)."""

    restored: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def add_host(self, host: str) -> None:
        if host not in self.restored:
            self.restored.append(host)

    def as_json(self) -> dict[str, Any]:
        return {
            "restored": list(self.restored),
            "skipped": [{"site": s.site, "reason": s.reason} for s in self.skipped],
        }


@dataclass(frozen=True, slots=True)
class _DocRead:
    context: str
    origin: str | None
    doc: str | None
    trusted: bool
    spare: bool
    local: dict[str, str] | None
    session: dict[str, str] | None
    error: str | None

    @classmethod
    def parse(cls, context: str, raw: Mapping[str, Any]) -> _DocRead:
        origin = raw.get("origin")
        return cls(
            context=context,
            origin=origin if origin and origin != "null" else None,
            doc=raw.get("doc"),
            trusted=bool(raw.get("trusted")),
            spare=bool(raw.get("spare")),
            local=raw.get("local"),
            session=raw.get("session"),
            error=raw.get("error"),
        )


async def read_cookies(browser: LiveBrowser) -> list[Cookie]:
    """The whole jar, httpOnly included, every domain (``storage.getCookies``)."""
    result = await browser.conn.send("storage.getCookies", {})
    return [from_bidi(raw, browser.ref.kind) for raw in result.get("cookies", [])]


def _contexts(tree: Iterable[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
    """(context, parent) of every context in a ``browsingContext.getTree`` result."""
    out: list[tuple[str, str | None]] = []
    stack: list[tuple[Mapping[str, Any], str | None]] = [(node, None) for node in tree]
    while stack:
        node, parent = stack.pop()
        out.append((str(node["context"]), parent))
        stack.extend((child, str(node["context"])) for child in node.get("children") or ())
    return out


async def _read_docs(browser: LiveBrowser, contexts: Sequence[str]) -> list[_DocRead]:
    """READ in each context, pipelined; each bounded by the BiDi timeout on its own (a
    timed-out one comes back with ``error="timeout"``; one that went away is left out)."""

    async def one(context: str) -> _DocRead | None:
        try:
            raw = await browser.evaluate_json(READ, context == browser.context, context=context)
        except BidiTimeout:
            return _DocRead(context, None, None, False, False, None, None, TIMEOUT)
        except BidiError:
            return None  # a frame that went away, or a page that cannot run script
        return _DocRead.parse(context, raw)

    reads = await asyncio.gather(*(one(c) for c in contexts))
    return [r for r in reads if r is not None]


async def _live_reads(browser: LiveBrowser, spare_contexts: Sequence[str] = ()) -> list[_DocRead]:
    tree = await browser.conn.send("browsingContext.getTree", {})
    contexts = [c for c, _ in _contexts(tree.get("contexts", [])) if c not in spare_contexts]
    return await _read_docs(browser, contexts)


async def save_read(
    browser: LiveBrowser, history_origins: Sequence[str], *, deadline: float, full: bool = False
) -> SaveRead:
    """Read what a save needs (SPEC §3 Save steps 1–3).

    Args:
        browser: the live browser.
        history_origins: the session's history, newest first.
        deadline: seconds the spare-tab loop may take in all.
        full: read every origin through the spare tab, ignoring the leave tracker (the
            reference a fast save is compared against).

    Raises:
        BrowserUnavailable: BiDi is down (nothing is saved).
    """
    tracker = browser.tracker
    tracker.begin()
    jar, docs = await asyncio.gather(read_cookies(browser), _live_reads(browser))
    live: dict[str, dict[str, str]] = {}
    tainted: set[str] = set()
    session: SessionStorage | None = None
    for doc in docs:
        if doc.origin is None or doc.local is None:
            continue
        if doc.trusted:
            live[doc.origin] = doc.local
        else:
            tainted.add(doc.origin)
        if doc.context == browser.context and doc.session:
            session = SessionStorage(doc.origin, doc.session)
    alive = [d.doc for d in docs if d.doc]
    local: dict[str, dict[str, str]] = {}
    need: list[str] = []
    for origin in history_origins:
        if origin in live:
            local[origin] = live[origin]
            continue
        copy = None if full or origin in tainted else tracker.copy(origin, alive)
        if copy is None:
            need.append(origin)
        else:
            local[origin] = copy
    main = next((d for d in docs if d.context == browser.context), None)
    if main is not None and main.origin is not None and main.origin in live:
        local[main.origin] = live[main.origin]
    if need:
        log.debug("save reads %d origins through the spare tab: %s", len(need), need)
    read, not_read = await _spare_read(browser, need, deadline)
    local.update(read)
    if not tracker.complete and not not_read:
        tracker.resync(local, {d.doc: (d.origin, d.trusted) for d in docs if d.doc and d.origin})
    session_read = main is not None and main.error is None
    return SaveRead(jar, local, session, not_read, len(need), session_read)


async def _spare_read(
    browser: LiveBrowser, origins: Sequence[str], deadline: float
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
    created = await conn.send("browsingContext.create", {"type": "tab", "background": True})
    tab = str(created["context"])
    try:
        async with SpareResponder(conn, [tab]) as spare:
            workers = await _read_sites(browser, spare, tab, origins, stop_at, read, not_read)
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
    finally:
        with contextlib.suppress(BidiError, BrowserUnavailable):
            await conn.send("browsingContext.close", {"context": tab})
    return read, not_read


async def _read_sites(
    browser: LiveBrowser,
    spare: SpareResponder,
    tab: str,
    origins: Sequence[str],
    stop_at: float,
    read: dict[str, dict[str, str]],
    not_read: dict[str, str],
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
            docs = {o: _DocRead("", o, None, False, False, None, None, TIMEOUT) for o in members}
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
        if any(d.error == TIMEOUT for d in docs.values()):
            _skip_rest(groups[index + 1 :], not_read, "not attempted: an earlier read timed out")
            break
    return workers


def _skip_rest(groups: Iterable[Sequence[str]], not_read: dict[str, str], reason: str) -> None:
    for members in groups:
        for origin in members:
            not_read.setdefault(origin, reason)


async def _frames_by_origin(
    browser: LiveBrowser, tab: str, members: Sequence[str]
) -> dict[str, str]:
    """origin → context of a spare page on ``members[0]`` with frames on the rest."""
    tree = await browser.conn.send("browsingContext.getTree", {"root": tab})
    by_origin: dict[str, str] = {}
    for node in tree.get("contexts", []):
        by_origin[members[0]] = str(node["context"])
        for child in node.get("children") or ():
            child_origin = origin_of(str(child.get("url", "")))
            if child_origin is not None:
                by_origin.setdefault(child_origin, str(child["context"]))
    return by_origin


async def _visit(
    browser: LiveBrowser, spare: SpareResponder, tab: str, members: Sequence[str]
) -> dict[str, _DocRead]:
    """Stand ``tab`` on the site of ``members`` (the first on top, the rest in frames) and
    read each; a read that timed out is kept, with ``error="timeout"``."""
    await browser.conn.send(
        "browsingContext.navigate",
        {"context": tab, "url": spare.url(members[0], members[1:]), "wait": "complete"},
    )
    by_origin = await _frames_by_origin(browser, tab, members)
    origin_of_context = {c: o for o, c in by_origin.items()}
    docs = await _read_docs(browser, [by_origin[o] for o in members if o in by_origin])
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
        await browser.conn.send(
            "browsingContext.reload", {"context": tab, "ignoreCache": True, "wait": "complete"}
        )
        reads = await _read_docs(browser, [tab])
    except BidiError:
        return None
    doc = reads[0] if reads else None
    if doc is None or not doc.spare or doc.origin != origin:
        return None
    return doc.local


async def restore(
    browser: LiveBrowser, snapshot: SiteData, land: str | None, *, now: float
) -> RestoreReport:
    """Write the snapshot into a fresh browser, then land (SPEC §3 Restore).

    Order: every unexpired cookie (``storage.setCookie``, pipelined, then checked against
    the jar — Chromium answers success for cookies it drops); then each site's
    localStorage, and the saved sessionStorage, through spare pages in the main tab;
    then the main tab lands on ``land`` (or ``about:blank``). Every navigation here
    replaces the main tab's history entry, so ``back()`` never reaches a spare page.
    Best effort: nothing here raises; what could not be written is in ``skipped``.
    """
    report = RestoreReport()
    await _restore_cookies(browser, snapshot.cookies, now, report)
    await _restore_storage(browser, snapshot, report)
    try:
        await browser.replace(land or "about:blank")
    except (BidiError, BrowserUnavailable) as exc:
        report.skipped.append(Skipped(land or "about:blank", f"landing failed: {_code(exc)}"))
    return report


def _code(exc: Exception) -> str:
    return exc.code if isinstance(exc, BidiError) else type(exc).__name__


async def _restore_cookies(
    browser: LiveBrowser, cookies: Sequence[Cookie], now: float, report: RestoreReport
) -> None:
    live = [c for c in cookies if is_unexpired(c, now)]
    if not live:
        return
    kind = browser.ref.kind
    results = await asyncio.gather(
        *(browser.conn.send("storage.setCookie", {"cookie": to_bidi(c, kind)}) for c in live),
        return_exceptions=True,
    )
    try:
        jar = {(c.name, c.domain, c.path) for c in await read_cookies(browser)}
    except (BidiError, BrowserUnavailable):
        jar = None
    for cookie, result in zip(live, results, strict=True):
        host = cookie_host(cookie)
        if isinstance(result, BaseException):
            reason = f"cookie {cookie.name!r} was refused: {_code(result)}"  # type: ignore[arg-type]
            report.skipped.append(Skipped(host, reason))
        elif jar is not None and (cookie.name, cookie.domain, cookie.path) not in jar:
            report.skipped.append(
                Skipped(host, f"cookie {cookie.name!r} was dropped by the browser")
            )
        else:
            report.add_host(host)


async def _restore_storage(browser: LiveBrowser, snapshot: SiteData, report: RestoreReport) -> None:
    payloads: dict[str, dict[str, Any]] = {
        origin: {"local": dict(s.local)} for origin, s in snapshot.origins.items() if s.local
    }
    session = snapshot.session
    if session is not None and session.items:
        payloads.setdefault(session.origin, {})["session"] = dict(session.items)
    if not payloads:
        return
    tracker = browser.tracker
    tracker.begin()
    written: dict[str, dict[str, str]] = {}
    try:
        async with SpareResponder(browser.conn, [browser.context]) as spare:
            for members in group_by_site(payloads).values():
                if session is not None and session.origin in members:
                    members = [session.origin, *(m for m in members if m != session.origin)]
                await _write_site(browser, spare, members, payloads, report, written)
    except (BidiError, BrowserUnavailable) as exc:
        for origin in payloads:
            if origin not in written and host_of(origin) not in report.restored:
                report.skipped.append(
                    Skipped(host_of(origin), f"storage not written: {_code(exc)}")
                )
    tracker.wrote(written)


async def _write_site(
    browser: LiveBrowser,
    spare: SpareResponder,
    members: list[str],
    payloads: Mapping[str, Mapping[str, Any]],
    report: RestoreReport,
    written: dict[str, dict[str, str]],
) -> None:
    try:
        await browser.replace(spare.url(members[0], members[1:]), timeout=browser.conn.timeout)
        docs = await _visit_written(browser, members, payloads)
    except BidiTimeout:
        for origin in members:
            report.skipped.append(Skipped(host_of(origin), "storage not written: timed out"))
        return
    for origin in members:
        doc = docs.get(origin)
        if doc is not None and doc.spare:
            report.add_host(host_of(origin))
            written[origin] = dict(payloads[origin].get("local") or {})
        else:
            reason = doc.error if doc is not None and doc.error else "its spare frame did not load"
            report.skipped.append(Skipped(host_of(origin), f"storage not written: {reason}"))


async def _visit_written(
    browser: LiveBrowser, members: Sequence[str], payloads: Mapping[str, Mapping[str, Any]]
) -> dict[str, _DocRead]:
    """Write each member's payload in the main tab's spare page (top) and its frames."""
    by_origin = await _frames_by_origin(browser, browser.context, members)
    targets = [o for o in members if o in by_origin]

    async def write(origin: str) -> _DocRead:
        try:
            result = await browser.evaluate_json(
                "(p) => JSON.stringify((" + WRITE + ")(p))",
                json.dumps(payloads[origin]),
                context=by_origin[origin],
            )
        except BidiError as exc:
            result = exc.code
        ok = result == "ok"
        return _DocRead(
            by_origin[origin], origin, None, True, ok, None, None, None if ok else str(result)
        )

    docs = await asyncio.gather(*(write(o) for o in targets))
    return {d.origin: d for d in docs if d.origin is not None}


def spare_url_of(origin: str) -> str:
    """The reserved URL on ``origin`` (for tests and diagnostics)."""
    return origin + SPARE_PATH


Clock = Callable[[], float]
