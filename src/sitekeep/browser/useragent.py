"""The User-Agent a sign-in may be bound to (SPEC §3 Cross-browser).

Some sites tie a session to the User-Agent it signed in under: restored into another
browser (or another version), the cookies are there and the site says signed out. The
snapshot records the User-Agent it was saved under; a restore under another one warns,
and ``keep_user_agent`` applies the saved one with BiDi ``emulation.setUserAgentOverride``
(W3C WebDriver BiDi §emulation; answered by Chromium 156 and Firefox 153 here, global:
every tab and frame, popups included).
"""

from __future__ import annotations

from typing import Any

from sitekeep.browser import wire
from sitekeep.browser.live import LiveBrowser
from sitekeep.errors import BidiError, BrowserUnavailable

__all__ = ["changed_warning", "current_user_agent", "override_user_agent"]


async def current_user_agent(browser: LiveBrowser) -> str | None:
    """``navigator.userAgent`` of the main tab, or None when it cannot be read."""
    try:
        value = await browser.evaluate_json("() => JSON.stringify(navigator.userAgent)")
    except (BidiError, BrowserUnavailable):
        return None
    return value if isinstance(value, str) else None


async def override_user_agent(browser: LiveBrowser, user_agent: str) -> str | None:
    """Apply ``user_agent`` to the whole browser; None when done, else why not (the
    BiDi error code, e.g. ``unknown command`` where a browser lacks the command)."""
    try:
        await wire.call(browser.conn, wire.emulation_set_user_agent_override(user_agent))
    except BidiError as exc:
        return exc.code
    except BrowserUnavailable as exc:
        return type(exc).__name__
    return None


def changed_warning(saved: str, current: str | None) -> dict[str, Any] | None:
    """The restore's warning when the browser runs under another User-Agent than the
    snapshot was saved under (a site that binds its sign-in to it will sign out)."""
    if current is None or current == saved:
        return None
    return {
        "type": "user_agent_changed",
        "saved": saved,
        "current": current,
        "message": "the browser's User-Agent differs from the one the site data was saved "
        "under: a site that binds its sign-in to it may sign out; "
        "open_session(keep_user_agent=true) applies the saved one",
    }
