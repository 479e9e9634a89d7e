"""Restore: write a snapshot into a fresh browser, then land (SPEC §3 Restore).

Order: every unexpired cookie (``storage.setCookie``, pipelined, then checked against the
jar — Chromium answers success for cookies it drops); then the storage, site by site,
through spare pages in the main tab; then the main tab lands on the URL (or
``about:blank``). Fully restored when it returns. Best effort: nothing here raises; what
could not be written is reported in ``skipped``.

As few navigations as correctness allows:

* A spare page carries its writes inline: the top page and each same-site frame write
  their own origin's storage as they are parsed and acknowledge to the top, so a whole
  site costs one navigation and one ``script.callFunction`` — no round trip per origin.
* When the landing origin is the only one with storage (one app, the common case), there
  is no spare page at all: a one-shot preload script writes its storage into the landing
  page before the page's own scripts run (``scripts.landing_preload``).
* Every navigation replaces the main tab's history entry (``location.replace``), so
  ``back()`` never reaches a spare page.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sitekeep.browser.docs import read_cookies
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.scripts import ACKS, LANDED, inline_write, landing_preload
from sitekeep.browser.spare import SpareResponder
from sitekeep.cookies import cookie_host, is_unexpired, to_bidi
from sitekeep.errors import BidiError, BrowserUnavailable
from sitekeep.history import host_of, origin_of
from sitekeep.model import Cookie, SiteData, Skipped
from sitekeep.sites import group_by_site

__all__ = ["RestoreReport", "restore"]

Payloads = dict[str, dict[str, Any]]
"""origin → ``{local?: {k: v}, session?: {k: v}}``."""


@dataclass
class RestoreReport:
    """What a restore wrote (hosts) and what it could not (``{site, reason}``)."""

    restored: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def add_host(self, host: str) -> None:
        if host not in self.restored:
            self.restored.append(host)

    def skip(self, site: str, reason: str) -> None:
        self.skipped.append(Skipped(site, reason))

    def as_json(self) -> dict[str, Any]:
        return {
            "restored": list(self.restored),
            "skipped": [{"site": s.site, "reason": s.reason} for s in self.skipped],
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
    report = RestoreReport()
    await _restore_cookies(browser, snapshot.cookies, now, report)
    payloads = _payloads(snapshot)
    landing = origin_of(land) if land else None
    written: dict[str, dict[str, str]] = {}
    browser.tracker.begin()
    if landing is not None and set(payloads) == {landing}:
        await _land_with_preload(browser, land or "", payloads[landing], report)
        return report
    if payloads:
        await _restore_storage(browser, payloads, snapshot, report, written)
    try:
        await browser.replace(land or "about:blank")
    except (BidiError, BrowserUnavailable) as exc:
        report.skip(land or "about:blank", f"landing failed: {_code(exc)}")
    browser.tracker.wrote(written)
    return report


def _code(exc: BaseException) -> str:
    return exc.code if isinstance(exc, BidiError) else type(exc).__name__


def _payloads(snapshot: SiteData) -> Payloads:
    payloads: Payloads = {
        origin: {"local": dict(s.local)} for origin, s in snapshot.origins.items() if s.local
    }
    session = snapshot.session
    if session is not None and session.items:
        payloads.setdefault(session.origin, {})["session"] = dict(session.items)
    return payloads


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
            report.skip(host, f"cookie {cookie.name!r} was refused: {_code(result)}")
        elif jar is not None and (cookie.name, cookie.domain, cookie.path) not in jar:
            report.skip(host, f"cookie {cookie.name!r} was dropped by the browser")
        else:
            report.add_host(host)


async def _land_with_preload(
    browser: LiveBrowser, land: str, payload: Mapping[str, Any], report: RestoreReport
) -> None:
    """Land, with the landing origin's storage written by a one-shot preload script; if
    the page never reached that origin (a redirect elsewhere), write it through a spare
    page in a background tab instead."""
    conn = browser.conn
    origin = origin_of(land) or ""
    result = "not written"
    try:
        added = await conn.send(
            "script.addPreloadScript",
            {
                "functionDeclaration": landing_preload(origin, payload),
                "contexts": [browser.context],
            },
        )
        try:
            await browser.replace(land)
        finally:
            with contextlib.suppress(BidiError, BrowserUnavailable):
                await conn.send("script.removePreloadScript", {"script": added["script"]})
        result = str(await browser.evaluate_json(LANDED))
    except (BidiError, BrowserUnavailable) as exc:
        report.skip(land, f"landing failed: {_code(exc)}")
    if result != "ok":
        result = await _write_in_background(browser, origin, payload)
    if result == "ok":
        report.add_host(host_of(origin))
    else:
        report.skip(host_of(origin), f"storage not written: {result}")


async def _write_in_background(
    browser: LiveBrowser, origin: str, payload: Mapping[str, Any]
) -> str:
    """Write one origin's storage from a spare page in a background tab."""
    if "session" in payload:
        return "its sessionStorage belongs to a page the main tab did not reach"
    conn = browser.conn
    try:
        tab = str(
            (await conn.send("browsingContext.create", {"type": "tab", "background": True}))[
                "context"
            ]
        )
    except (BidiError, BrowserUnavailable) as exc:
        return _code(exc)
    try:
        async with SpareResponder(conn, [tab]) as spare:
            url = spare.url(origin, (), {origin: inline_write(payload, top=True)})
            await conn.send(
                "browsingContext.navigate", {"context": tab, "url": url, "wait": "complete"}
            )
            acks = await browser.evaluate_json(ACKS, 1, context=tab, await_promise=True)
            return str(acks.get(origin, "its spare page did not load"))
    except (BidiError, BrowserUnavailable) as exc:
        return _code(exc)
    finally:
        with contextlib.suppress(BidiError, BrowserUnavailable):
            await conn.send("browsingContext.close", {"context": tab})


async def _restore_storage(
    browser: LiveBrowser,
    payloads: Payloads,
    snapshot: SiteData,
    report: RestoreReport,
    written: dict[str, dict[str, str]],
) -> None:
    """Each site's storage through one spare page in the main tab (frames for the rest)."""
    session = snapshot.session
    try:
        async with SpareResponder(browser.conn, [browser.context]) as spare:
            for members in group_by_site(payloads).values():
                if session is not None and session.origin in members:
                    members = [session.origin, *(m for m in members if m != session.origin)]
                acks = await _write_site(browser, spare, members, payloads)
                for origin in members:
                    result = acks.get(origin, "its spare page did not load")
                    if result == "ok":
                        report.add_host(host_of(origin))
                        written[origin] = dict(payloads[origin].get("local") or {})
                    else:
                        report.skip(host_of(origin), f"storage not written: {result}")
    except (BidiError, BrowserUnavailable) as exc:
        for origin in payloads:
            if origin not in written:
                report.skip(host_of(origin), f"storage not written: {_code(exc)}")


async def _write_site(
    browser: LiveBrowser, spare: SpareResponder, members: Sequence[str], payloads: Payloads
) -> dict[str, str]:
    """One navigation: the top page and a frame per other origin write as they parse."""
    scripts = {o: inline_write(payloads[o], top=(i == 0)) for i, o in enumerate(members)}
    url = spare.url(members[0], members[1:], scripts)
    try:
        await browser.replace(url, timeout=browser.conn.timeout)
        acks = await browser.evaluate_json(ACKS, len(members), await_promise=True)
    except BidiError as exc:
        return dict.fromkeys(members, _code(exc))
    return {str(k): str(v) for k, v in acks.items()}
