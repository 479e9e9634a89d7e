"""Restore: write a snapshot into a fresh browser, then land (SPEC §3 Restore).

Order: every unexpired cookie, then the storage, site by site, through spare pages in the
main tab, then the jar is checked against the snapshot (Chromium answers success for
cookies it drops) and the main tab lands on the URL (or ``about:blank``). Fully restored
when it returns. Best effort: nothing here raises; what could not be written is reported
in ``skipped``.

As few navigations as correctness allows:

* A spare page carries its writes inline: the top page and each same-site frame write
  their own origin's storage as they are parsed and acknowledge to the top, so a whole
  site costs one navigation and one ``script.callFunction`` — no round trip per origin.
* A spare response also carries, as ``Set-Cookie`` headers, the cookies it may store as
  they are (its host, its scheme): no ``storage.setCookie`` round trip for those. The rest
  (other hosts, CHIPS partitions) go through ``storage.setCookie``, pipelined; whatever
  the jar then does not hold exactly as saved is written again through it.
* When the landing origin is the only one with storage (one app, the common case), there
  is no spare page at all: a one-shot preload script writes its storage into the landing
  page before the page's own scripts run (``scripts.landing_preload``).
* Every navigation replaces the main tab's history entry (``location.replace``), so
  ``back()`` never reaches a spare page.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sitekeep.browser import wire
from sitekeep.browser.docs import read_cookies
from sitekeep.browser.live import LiveBrowser, Loads
from sitekeep.browser.scripts import ACKS, LANDED, REPLACE_LOCATION, inline_write, landing_preload
from sitekeep.browser.spare import SparePage, SpareResponder
from sitekeep.cookies import (
    as_stored,
    cookie_host,
    cookie_key,
    cookie_label,
    cookie_origin,
    is_unexpired,
    needs_header,
    set_by_response,
    to_bidi,
    to_set_cookie,
)
from sitekeep.errors import BidiError, BrowserUnavailable
from sitekeep.history import host_of, normal_host, origin_of
from sitekeep.model import BrowserKind, Cookie, SiteData, Skipped, TabStorage
from sitekeep.sites import group_by_site

__all__ = ["RestoreReport", "restore"]

Payloads = dict[str, dict[str, Any]]
"""origin → ``{local?: {k: v}, session?: {k: v}}``."""
Jar = dict[tuple[str, str, str], tuple[Any, ...]]
"""(name, domain, path) → the cookie as stored (``cookies.as_stored``)."""


@dataclass
class RestoreReport:
    """What a restore wrote (hosts) and what it could not (``{site, reason}``)."""

    restored: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    """What was written as saved but will not stay so (``{type, site, key, message}``)."""

    def add_host(self, host: str) -> None:
        if host not in self.restored:
            self.restored.append(host)

    def skip(self, site: str, reason: str) -> None:
        self.skipped.append(Skipped(site, reason))

    def as_json(self) -> dict[str, Any]:
        return {
            "restored": list(self.restored),
            "skipped": [s.as_json() for s in self.skipped],
        }


async def restore(
    browser: LiveBrowser, snapshot: SiteData, land: str | None, *, now: float
) -> RestoreReport:
    """Write ``snapshot`` into a fresh browser, then land on ``land`` (SPEC §3 Restore).

    Args:
        browser: a browser started moments ago (its storage is empty).
        snapshot: what to write.
        land: the URL to land on; None lands on ``about:blank``.
        now: seconds since the epoch; cookies expired by then are not written.

    Returns:
        The hosts written and what was skipped, never a value.
    """
    job = _Restore(browser, snapshot, now)
    browser.tracker.begin()
    async with browser.loads() as loads:
        job.loads = loads
        await job.run(land)
    for tab in snapshot.tabs:
        result = await _reopen_tab(browser, tab)
        if result == "ok":
            job.report.add_host(host_of(tab.origin))
        else:
            job.report.skip(host_of(tab.origin), f"a tab's sessionStorage not written: {result}")
    browser.tracker.wrote(job.written)
    return job.report


class _Restore:
    """One restore's state: what to write, what was written, the report."""

    def __init__(self, browser: LiveBrowser, snapshot: SiteData, now: float) -> None:
        self.browser = browser
        self.snapshot = snapshot
        self.now = now
        self.report = RestoreReport()
        kind = browser.ref.kind
        self.cookies: list[Cookie] = []
        for cookie in snapshot.cookies:
            if not is_unexpired(cookie, now):
                continue
            if needs_header(cookie, kind) and to_set_cookie(cookie, kind) is None:
                self.report.skip(cookie_host(cookie), _unwritable(cookie, kind))
                continue
            if cookie.partition_key and kind != "chromium":
                self.report.skip(cookie_host(cookie), _partitioned(cookie, kind))
                continue
            self.cookies.append(cookie)
            if kind == "chromium":  # the next save reads its SameSite as written here
                browser.same_site.note(cookie_key(cookie), cookie.same_site)
        self.payloads = _payloads(snapshot)
        self.report.warnings.extend(_keys_the_browser_changes(self.payloads, kind))
        self.report_pages: set[str] = set(self.payloads)
        self.written: dict[str, dict[str, str]] = {}
        self.loads: Loads | None = None
        self.fresh = browser.ref.kind == "firefox" and browser.tracker.pristine
        """The main tab still shows the document it was born with, and the browser is a
        Firefox: its first navigation goes by ``browsingContext.navigate`` (see
        :meth:`goto`)."""

    async def run(self, land: str | None) -> None:
        landing = origin_of(land) if land else None
        kind = self.browser.ref.kind
        headed = [c for c in self.cookies if needs_header(c, kind)]
        databases = any("idb" in p for p in self.payloads.values())  # async: a spare page
        one = set(self.payloads) == {landing}
        if land and landing is not None and one and not headed and not databases:
            # The preload script, the cookies and the jar read behind them go out at once.
            preload = asyncio.ensure_future(self.add_preload(land, self.payloads[landing]))
            try:
                stored = await _set_cookies(self.browser, self.cookies, read_back=self.now)
                await _check_cookies(self.browser, self.cookies, self.report, self.now, stored)
            finally:
                added = await preload
            await self.land_with_preload(land, self.payloads[landing], added)
            return
        for cookie in headed:  # a spare page of its own where no storage page can set it
            if not any(set_by_response(cookie, o) for o in self.payloads):
                self.payloads.setdefault(cookie_origin(cookie), {})  # a spare page: no connection
        carried = _carriers(self.cookies, list(self.payloads), kind)
        riding = {id(c) for cs in carried.values() for c in cs}
        await _set_cookies(self.browser, [c for c in self.cookies if id(c) not in riding])
        landed: asyncio.Task[None] | None = None
        if self.payloads:
            try:
                async with SpareResponder(self.browser.conn, [self.browser.context]) as spare:
                    await self.write_storage(spare, carried)
                    await _check_cookies(self.browser, self.cookies, self.report, self.now)
                    # The landing loads while the spare page's intercept is torn down: the
                    # intercept matches only the reserved path, so it cannot hold it up.
                    landed = asyncio.get_running_loop().create_task(self.land(land))
            except (BidiError, BrowserUnavailable) as exc:
                self.skip_unwritten(_code(exc))
        if landed is None:
            await _check_cookies(self.browser, self.cookies, self.report, self.now)
            await self.land(land)
        else:
            await landed

    def skip_unwritten(self, reason: str) -> None:
        for origin in self.payloads:
            if origin not in self.written:
                self.report.skip(host_of(origin), f"storage not written: {reason}")

    async def goto(self, url: str, timeout: float | None = None) -> None:
        """Navigate the main tab to ``url`` and wait for its load, leaving no history
        entry behind. The first navigation of a fresh Firefox goes by
        ``browsingContext.navigate``: leaving the initial ``about:blank`` replaces its entry
        anyway (HTML §Navigate, "initial about:blank"), and Firefox spends 50–130 ms
        making a script realm in that blank document for ``location.replace`` (issue #15,
        measured on a just-started Firefox ESR 153). Later ones: ``LiveBrowser.replace``."""
        browser = self.browser
        if self.fresh:
            self.fresh = False
            await wire.call(
                browser.conn,
                wire.browsing_context_navigate(browser.context, url, wait="complete"),
                timeout=timeout or browser.navigation_timeout,
            )
            return
        await browser.replace(url, timeout=timeout, loads=self.loads)

    async def land(self, land: str | None) -> None:
        try:
            await self.goto(land or "about:blank")
        except (BidiError, BrowserUnavailable) as exc:
            self.report.skip(land or "about:blank", f"landing failed: {_code(exc)}")

    async def write_storage(
        self, spare: SpareResponder, carried: Mapping[str, Sequence[Cookie]]
    ) -> None:
        """Each site's storage through one spare page in the main tab (frames for the
        rest), with the cookies ``carried`` on their responses."""
        session = self.snapshot.session
        for members in group_by_site(self.payloads).values():
            if session is not None and session.origin in members:
                members = [session.origin, *(m for m in members if m != session.origin)]
            acks = await self.write_site(spare, members, carried)
            for origin in members:
                result = acks.get(origin, "its spare page did not load")
                if result == "ok":
                    if origin in self.report_pages:
                        self.report.add_host(host_of(origin))
                    self.written[origin] = dict(self.payloads[origin].get("local") or {})
                elif origin in self.report_pages:
                    self.report.skip(host_of(origin), f"storage not written: {result}")

    async def write_site(
        self,
        spare: SpareResponder,
        members: Sequence[str],
        carried: Mapping[str, Sequence[Cookie]],
    ) -> dict[str, str]:
        """One navigation: the top page and a frame per other origin write as they parse."""
        browser = self.browser
        pages = {
            o: SparePage(
                script=inline_write(self.payloads[o], top=(i == 0)),
                set_cookie=tuple(
                    v for c in carried.get(o, ()) if (v := to_set_cookie(c, browser.ref.kind))
                ),
            )
            for i, o in enumerate(members)
        }
        url = spare.url(members[0], members[1:], pages)
        try:
            await self.goto(url, timeout=browser.conn.timeout)
            acks = await browser.evaluate_json(
                ACKS,
                len(members),
                _ack_wait_ms(browser, members, self.payloads),
                await_promise=True,
            )
        except BidiError as exc:
            return dict.fromkeys(members, _code(exc))
        return {str(k): str(v) for k, v in acks.items()}

    async def add_preload(self, land: str, payload: Mapping[str, Any]) -> str | BaseException:
        """``script.addPreloadScript`` writing ``payload`` into the landing page: its id,
        or the BiDi failure."""
        try:
            preload = wire.script_add_preload_script(
                landing_preload(origin_of(land) or "", payload), contexts=[self.browser.context]
            )
            added = await wire.call(self.browser.conn, preload)
        except (BidiError, BrowserUnavailable) as exc:
            return exc
        return str(added["script"])

    async def land_with_preload(
        self, land: str, payload: Mapping[str, Any], added: str | BaseException
    ) -> None:
        """Land, with the landing origin's storage written by the one-shot preload script
        ``added``; if the page never reached that origin (a redirect elsewhere), write it
        through a spare page in a background tab instead."""
        browser, report = self.browser, self.report
        conn = browser.conn
        origin = origin_of(land) or ""
        result = "not written"
        try:
            if isinstance(added, BaseException):
                raise added
            remove = wire.script_remove_preload_script(added)
            try:
                await self.goto(land)
            except BaseException:
                with contextlib.suppress(BidiError, BrowserUnavailable):
                    await wire.call(conn, remove)
                raise
            # The script goes while its result is read: one round trip, not two.
            landed: Any  # evaluate_json's JSON value, or the exception it raised
            _, landed = await asyncio.gather(
                wire.call(conn, remove),
                browser.evaluate_json(LANDED),
                return_exceptions=True,
            )
            if isinstance(landed, BaseException):
                raise landed
            result = str(landed)
        except (BidiError, BrowserUnavailable) as exc:
            report.skip(land, f"landing failed: {_code(exc)}")
        if result != "ok":
            result = await _write_in_background(browser, origin, payload)
        if result == "ok":
            report.add_host(host_of(origin))
        else:
            report.skip(host_of(origin), f"storage not written: {result}")


_LONE = re.compile("[\ud800-\udfff]")
_CHANGED_KEYS = {("firefox", "local"): "localStorage", ("chromium", "session"): "sessionStorage"}
"""Storage whose keys holding a lone UTF-16 surrogate the browser itself changes on a later
load (measured: Firefox 153's localStorage turns one into another character after a
cross-process load; Chromium 156's sessionStorage into U+FFFD after a cross-site
navigation; values, and the other storage, keep them)."""


def _keys_the_browser_changes(payloads: Payloads, kind: BrowserKind) -> list[dict[str, Any]]:
    """Warnings for the keys written as saved that ``kind`` will not keep so."""
    warnings = []
    for origin, payload in payloads.items():
        for storage in ("local", "session"):
            name = _CHANGED_KEYS.get((kind, storage))
            for key in payload.get(storage) or () if name else ():
                if _LONE.search(key):
                    warnings.append(
                        {
                            "type": "storage_key_changed_by_browser",
                            "site": origin,
                            "key": key,
                            "message": f"written as saved, but {kind}'s {name} changes a key "
                            "holding a lone UTF-16 surrogate on a later load",
                        }
                    )
    return warnings


def _ack_wait_ms(browser: LiveBrowser, members: Sequence[str], payloads: Payloads) -> int:
    """How long a spare page's acknowledgements may take: 1 s, or (when it writes
    IndexedDB, whose transactions complete later) as long as the BiDi call allows."""
    if any("idb" in payloads.get(o, {}) for o in members):
        return int(1000 * max(1.0, browser.conn.timeout - 0.5))
    return 1000


def _code(exc: BaseException) -> str:
    return exc.code if isinstance(exc, BidiError) else type(exc).__name__


def _payloads(snapshot: SiteData) -> Payloads:
    payloads: Payloads = {
        origin: {"local": dict(s.local), **({"idb": list(s.indexed_db)} if s.indexed_db else {})}
        for origin, s in snapshot.origins.items()
        if s.local or s.indexed_db
    }
    session = snapshot.session
    if session is not None and session.items:
        payloads.setdefault(session.origin, {})["session"] = dict(session.items)
    return payloads


def _unwritable(cookie: Cookie, kind: str) -> str:
    return (
        f"{cookie_label(*cookie_key(cookie))} not restored: {kind} cannot store its name or value "
        "through BiDi, nor from a Set-Cookie header"
    )


def _partitioned(cookie: Cookie, kind: str) -> str:
    site = (cookie.partition_key or {}).get("topLevelSite", "its top-level site")
    return (
        f"{cookie_label(*cookie_key(cookie))} not restored: it is partitioned (CHIPS) "
        f"under {site}, and "
        f"{kind} reports no cookie's partition over BiDi, so it could not be checked; "
        "written unpartitioned it would be sent on every site"
    )


def _carriers(
    cookies: Sequence[Cookie], origins: Sequence[str], kind: BrowserKind
) -> dict[str, list[Cookie]]:
    """origin → the cookies its spare response sets with ``Set-Cookie`` headers: each
    cookie rides on the first spare page that may store it as it is (no extra round trip
    per cookie); the rest go through ``storage.setCookie``."""
    carried: dict[str, list[Cookie]] = {}
    for cookie in cookies:
        if to_set_cookie(cookie, kind) is None:
            continue
        origin = next((o for o in origins if set_by_response(cookie, o)), None)
        if origin is not None:
            carried.setdefault(origin, []).append(cookie)
    return carried


async def _set_cookies(
    browser: LiveBrowser, cookies: Sequence[Cookie], *, read_back: float | None = None
) -> Jar | None:
    """``storage.setCookie`` for each, pipelined; outcomes are judged by the jar after.

    With ``read_back`` (seconds since the epoch), the jar is read in the same pipeline,
    behind the writes, and returned (None when that read failed): a browser that ran the
    read before a write sent earlier only costs :func:`_check_cookies` a second read,
    never a wrong verdict.
    """
    kind = browser.ref.kind
    writes = [wire.call(browser.conn, wire.storage_set_cookie(to_bidi(c, kind))) for c in cookies]
    reads = [_jar(browser, read_back)] if read_back is not None and cookies else []
    done = await asyncio.gather(*writes, *reads, return_exceptions=True)
    jar = done[-1] if reads else None
    return jar if isinstance(jar, dict) else None


async def _check_cookies(
    browser: LiveBrowser,
    cookies: Sequence[Cookie],
    report: RestoreReport,
    now: float,
    stored: Jar | None = None,
) -> None:
    """Compare the jar with what was meant (Chromium answers success for cookies it
    drops); write again, through ``storage.setCookie``, each one it can write that is not
    stored as saved (a lifetime past 400 days counts as capped, as both browsers store
    it). What is still not as saved is removed and named: the browser never keeps a
    cookie changed, and the report never says "restored" for one that is not there, nor
    "refused" for one that is. ``stored``: the jar as already read after the writes."""
    if not cookies:
        return
    kind = browser.ref.kind
    try:
        if stored is None:
            stored = await _jar(browser, now)
        redo = [
            c
            for c in cookies
            if stored.get(cookie_key(c)) != as_stored(c, now, kind) and not needs_header(c, kind)
        ]
        if redo:
            await _set_cookies(browser, redo)
            stored = await _jar(browser, now)
    except (BidiError, BrowserUnavailable) as exc:
        for cookie in cookies:
            label = cookie_label(*cookie_key(cookie))
            report.skip(cookie_host(cookie), f"{label} unknown: {_code(exc)}")
        return
    changed: list[tuple[str, str, str]] = []
    for cookie in cookies:
        held = stored.get(cookie_key(cookie))
        if held == as_stored(cookie, now, kind):
            report.add_host(cookie_host(cookie))
        elif held is None:
            label = cookie_label(*cookie_key(cookie))
            report.skip(cookie_host(cookie), f"{label} was refused by the browser")
        else:
            changed.append(cookie_key(cookie))
    await _remove(browser, changed, report, "the browser stored it otherwise")
    # A cookie in the jar that was never meant is one the browser stored under another
    # name (Firefox reads some names from headers byte by byte): it goes too.
    meant = {cookie_key(c) for c in cookies}
    hosts = {cookie_host(c) for c in cookies}
    strays = [k for k in stored if k not in meant and normal_host(k[1].lstrip(".")) in hosts]
    await _remove(browser, strays, report, "the browser stored a cookie under another name")


async def _remove(
    browser: LiveBrowser,
    keys: Sequence[tuple[str, str, str]],
    report: RestoreReport,
    why: str,
) -> None:
    """Delete each cookie (name, domain, path) the browser stored otherwise than saved,
    and name it: the browser never keeps a changed cookie."""
    for name, domain, path in keys:
        try:
            cookie_filter: wire.CookieFilter = {"name": name, "domain": domain, "path": path}
            await wire.call(browser.conn, wire.storage_delete_cookies(cookie_filter))
            outcome = "removed"
        except (BidiError, BrowserUnavailable) as exc:
            outcome = f"left as the browser stored it ({_code(exc)})"
        label = cookie_label(name, domain, path)
        report.skip(domain.lstrip(".").lower(), f"{label} not restored: {why}; {outcome}")


async def _jar(browser: LiveBrowser, now: float) -> Jar:
    return {cookie_key(c): as_stored(c, now) for c in await read_cookies(browser)}


async def _reopen_tab(browser: LiveBrowser, tab: TabStorage) -> str:
    """Open another top-level tab in the background with its own sessionStorage written
    (a spare page on its origin), then send it to its page without waiting for the load:
    its page, not the restore, decides how long that takes."""
    return await _write_in_background(
        browser, tab.origin, {"session": dict(tab.items)}, then=tab.url
    )


async def _write_in_background(
    browser: LiveBrowser, origin: str, payload: Mapping[str, Any], *, then: str | None = None
) -> str:
    """Write one origin's storage from a spare page in a background tab; with ``then``,
    the tab stays open and goes on to that URL (same origin: its sessionStorage stays)."""
    if "session" in payload and then is None:
        return "its sessionStorage belongs to a page the main tab did not reach"
    conn = browser.conn
    keep = False
    try:
        tab = str((await wire.call(conn, wire.browsing_context_create(background=True)))["context"])
    except (BidiError, BrowserUnavailable) as exc:
        return _code(exc)
    try:
        async with SpareResponder(conn, [tab]) as spare:
            page = SparePage(script=inline_write(payload, top=True))
            url = spare.url(origin, (), {origin: page})
            await wire.call(conn, wire.browsing_context_navigate(tab, url, wait="complete"))
            acks = await browser.evaluate_json(ACKS, 1, context=tab, await_promise=True)
        result = str(acks.get(origin, "its spare page did not load"))
        if result == "ok" and then is not None:
            replace = wire.script_call_function(
                REPLACE_LOCATION,
                wire.context_target(tab),
                arguments=[wire.local_value(then)],
                await_promise=False,
                result_ownership=None,
            )
            await wire.call(conn, replace)
            keep = True
        return result
    except (BidiError, BrowserUnavailable) as exc:
        return _code(exc)
    finally:
        if not keep:
            with contextlib.suppress(BidiError, BrowserUnavailable):
                await wire.call(conn, wire.browsing_context_close(tab))
