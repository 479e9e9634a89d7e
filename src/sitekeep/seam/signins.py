"""Sign-in state read from a live browser (SPEC §18): where its main tab landed, and the
per-site checks, each run in a background tab (``sitekeep.signin`` judges both).

A check's page loads in a tab of its own — made in the background like a save's spare tab
(``browser.spare.background_spare``: its intercept answers only the reserved spare path,
so the real page loads) and closed after — so the page the user or agent is on is never
touched: not its URL, title, scroll or focus. Nothing here writes the session's history.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import anyio

from sitekeep.browser.docs import read_cookies
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.spare import background_spare
from sitekeep.errors import BidiError, NavigationFailed, OwnAddress, SitekeepError
from sitekeep.model import SessionRecord, SignIn, SignInCheck, SiteData
from sitekeep.seam.browsers import Browsers
from sitekeep.signin import CheckOutcome, Landing, from_check, judge

__all__ = ["in_throwaway", "judge_now", "landing", "run_check", "run_checks"]

log = logging.getLogger(__name__)

_LANDING = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const visible = (e) => e.getClientRects().length > 0;
  return JSON.stringify([
    location.href,
    nav && nav.responseStatus ? nav.responseStatus : null,
    [...document.querySelectorAll("input[type=password]")].some(visible),
  ]);
}"""
"""Where a tab is, its document's HTTP status (Navigation Timing ``responseStatus``) and
whether it shows a password field — read, nothing changed."""

_PROBE = """(inSelector, inText, outSelector, outText) => {
  const shows = (selector, text) => {
    if (selector !== null) return document.querySelector(selector) !== null;
    if (text !== null) return (document.body ? document.body.innerText : "").includes(text);
    return null;
  };
  try {
    return JSON.stringify([shows(inSelector, inText), shows(outSelector, outText)]);
  } catch (err) {
    return JSON.stringify("bad_selector");
  }
}"""
"""Whether each marker shows: ``[signed_in, signed_out]`` (null: no such marker)."""


async def landing(browser: LiveBrowser, context: str | None = None) -> Landing | None:
    """Where ``context`` (the main tab) is, its status and whether it shows a password
    field; None when the page cannot tell (between documents, a closed socket)."""
    try:
        url, status, password = await browser.evaluate_json(_LANDING, context=context)
    except SitekeepError as exc:
        log.info("a landing could not be read: %s", type(exc).__name__)
        return None
    return Landing(str(url), status if isinstance(status, int) else None, bool(password))


async def run_check(browser: LiveBrowser, check: SignInCheck) -> CheckOutcome:
    """Load ``check.url`` in a background tab, see which marker shows, close the tab.

    Raises:
        BrowserUnavailable: the browser's socket closed (a page that could not load, or
            answered with an error, is an outcome: ``error``).
    """
    async with background_spare(browser.conn) as (tab, _):
        try:
            await browser.navigate(check.url, tab, field=None)
        except NavigationFailed as exc:
            return CheckOutcome(error=f"the page could not load ({exc.reason})")
        except OwnAddress:
            return CheckOutcome(error="the page reached sitekeep itself and was refused")
        except BidiError as exc:
            return CheckOutcome(error=f"the page did not load ({exc.code})")
        land = await landing(browser, tab)
        try:
            found = await browser.evaluate_json(_PROBE, *_probes(check), context=tab)
        except BidiError as exc:
            return CheckOutcome(land, error=f"the page could not be read ({exc.code})")
    if found == "bad_selector":
        return CheckOutcome(land, error="a selector is not valid CSS")
    return CheckOutcome(land, found[0], found[1])


def _probes(check: SignInCheck) -> tuple[Any, ...]:
    out = check.signed_out
    return (
        check.signed_in.selector,
        check.signed_in.text,
        out.selector if out else None,
        out.text if out else None,
    )


async def run_checks(
    browser: LiveBrowser, checks: Mapping[str, SignInCheck], now: float
) -> dict[str, SignIn]:
    """Every check, one after another, each judged (``signin.from_check``), by host.

    Raises:
        BrowserUnavailable: the browser's socket closed.
    """
    return {host: from_check(c, await run_check(browser, c), now) for host, c in checks.items()}


async def judge_now(
    browser: LiveBrowser, checks: Mapping[str, SignInCheck], known: Iterable[str], now: float
) -> dict[str, SignIn]:
    """Each site's state in ``browser`` now: every check run, then the heuristic over the
    whole jar and where the main tab is — for every host the jar holds cookies of, of
    ``known`` (the hosts judged before) and of ``checks``.

    Raises:
        BrowserUnavailable: the browser's socket closed.
    """
    checked = await run_checks(browser, checks, now)
    jar, land = await asyncio.gather(read_cookies(browser), landing(browser))
    return judge(SiteData(cookies=tuple(jar)), now, land, checked, also=known)


async def in_throwaway(
    browsers: Browsers,
    record: SessionRecord,
    data: SiteData | None,
    checks: Mapping[str, SignInCheck],
    now: float,
) -> dict[str, SignIn]:
    """:func:`judge_now` in a throwaway browser for ``record`` (its kind, proxy and
    certificate policy) with ``data`` restored into it, ended after (SPEC §18: a
    profile's checks, or a session's without a live browser).

    Raises:
        CapacityExceeded: a cap on live browsers is reached; none was started.
        BrowserUnavailable: no browser could be started, or it stopped answering.
    """
    live, _, _ = await browsers.new_browser(record, land=None, restore_data=False, preset=data)
    try:
        known = [*data.sign_in] if data is not None else []
        return await judge_now(live, checks, known, now)
    finally:
        with anyio.CancelScope(shield=True):
            await browsers.release(live.ref, "closed")
