"""Your own Selenium WebDriver, signed in: apply and read a snapshot in a browser you
started, with the engine the service uses (``browser.restore``, ``browser.snapshot``).

The driver must have BiDi enabled (``options.enable_bidi = True``, or the capability
``webSocketUrl: true``; W3C WebDriver BiDi §7.1): sitekeep opens its own socket to the
driver's ``webSocketUrl``, does its work and closes that socket; the driver's session and
Selenium's own connection are left as they were. Chromium and Firefox::

    from selenium import webdriver
    import sitekeep

    options = webdriver.ChromeOptions()
    options.enable_bidi = True
    driver = webdriver.Chrome(options=options)
    ...                                          # sign in
    snapshot = sitekeep.save_from(driver)        # a SiteData; dump_snapshot() → bytes
    later = webdriver.Chrome(options=options)
    sitekeep.restore_into(later, snapshot, land="https://app.example.org/")

``restore_into`` expects a browser with nothing stored yet (as the service's restore
does): what the snapshot holds is written over what the browser holds, nothing is
removed. The sync functions run their own event loop; inside one, await the ``_async``
twins.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import anyio

from sitekeep import history as hist
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.manager import open_live
from sitekeep.browser.restore import restore
from sitekeep.browser.snapshot import read_snapshot
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.errors import InvalidInput
from sitekeep.model import BrowserKind, BrowserRef, SiteData, dump_site_data, load_site_data

__all__ = [
    "dump_snapshot",
    "load_snapshot",
    "restore_into",
    "restore_into_async",
    "save_from",
    "save_from_async",
]

BIDI_TIMEOUT = 5.0
"""Seconds per BiDi command (SPEC §2), as the service's default."""
NAVIGATION_TIMEOUT = 30.0
SAVE_DEADLINE = 10.0
SNAPSHOT_CAP = 16 * 1024 * 1024

_KINDS: dict[str, BrowserKind] = {
    "chrome": "chromium",
    "chromium": "chromium",
    "chrome-headless-shell": "chromium",
    "firefox": "firefox",
}


def dump_snapshot(snapshot: SiteData) -> bytes:
    """The snapshot as JSON bytes (holds every value: keep it as you would a password)."""
    return dump_site_data(snapshot)


def load_snapshot(raw: bytes | str) -> SiteData:
    """A snapshot from :func:`dump_snapshot` bytes.

    Raises:
        InvalidInput: not a snapshot (field ``snapshot``).
    """
    try:
        return load_site_data(raw)
    except ValueError as exc:  # json's and pydantic's errors both derive from it
        raise InvalidInput("not a sitekeep snapshot", field="snapshot") from exc


def _ref(driver: Any) -> BrowserRef:
    """Where the user's driver's browser answers (its BiDi socket above all).

    Raises:
        InvalidInput: BiDi is not enabled, or the browser is neither Chromium nor Firefox.
    """
    caps = getattr(driver, "capabilities", None) or {}
    ws_url = caps.get("webSocketUrl")
    if not isinstance(ws_url, str) or not ws_url.startswith(("ws://", "wss://")):
        raise InvalidInput(
            "the driver has no BiDi socket: start it with options.enable_bidi = True",
            field="driver",
        )
    kind = _KINDS.get(str(caps.get("browserName", "")).lower())
    if kind is None:
        raise InvalidInput("the driver's browser is neither Chromium nor Firefox", field="driver")
    executor = getattr(driver, "command_executor", None)
    config = getattr(executor, "_client_config", None)
    endpoint = str(getattr(config, "remote_server_addr", "") or "")
    return BrowserRef(
        kind=kind,
        endpoint=endpoint,
        session_id=str(driver.session_id),
        ws_url=ws_url,
        started_at=time.time(),
        context=str(driver.current_window_handle),
    )


async def _live(driver: Any) -> LiveBrowser:
    return await open_live(
        _ref(driver),
        LeaveTracker(),
        install=False,
        bidi_timeout=BIDI_TIMEOUT,
        navigation_timeout=NAVIGATION_TIMEOUT,
    )


async def restore_into_async(
    driver: Any, snapshot: SiteData | bytes | str, *, land: str | None = None
) -> dict[str, Any]:
    """Write ``snapshot`` (cookies, localStorage, sessionStorage, tabs) into the driver's
    browser, then land on ``land`` (None: ``about:blank``) — SPEC §3 Restore.

    Returns:
        The restore report, ``{restored: [hosts], skipped: [{site, reason}]}`` — never a value.

    Raises:
        InvalidInput: no BiDi socket, another browser, or not a snapshot.
        BrowserUnavailable: the BiDi socket cannot be reached.
    """
    if not isinstance(snapshot, SiteData):
        snapshot = load_snapshot(snapshot)
    live = await _live(driver)
    try:
        report = await restore(live, snapshot, land, now=time.time())
    finally:
        await live.conn.close()
    return report.as_json()


async def save_from_async(
    driver: Any,
    *,
    origins: Iterable[str] = (),
    previous: SiteData | None = None,
    indexed_db: bool = False,
) -> SiteData:
    """Read the driver's browser's site data into a snapshot — SPEC §3 Save.

    Args:
        origins: origins whose localStorage to carry besides the open tabs' (each read
            through a background tab), e.g. ``["https://id.example.org"]``.
        previous: an earlier snapshot whose values stand where a read fails.
        indexed_db: also carry the origins' IndexedDB databases.

    Raises:
        InvalidInput: no BiDi socket, another browser, or an origin that is not one.
        SnapshotTooLarge: the cookies alone pass 16 MiB.
        BrowserUnavailable: the BiDi socket cannot be reached.
    """
    wanted = []
    for origin in origins:
        clean = hist.origin_of(origin)
        if clean is None:
            raise InvalidInput(f"{origin!r} is not an http(s) origin", field="origins")
        wanted.append(clean)
    live = await _live(driver)
    try:
        captured = await read_snapshot(
            live,
            list(dict.fromkeys(wanted)),
            previous,
            deadline=SAVE_DEADLINE,
            cap=SNAPSHOT_CAP,
            now=time.time(),
            indexed_db=indexed_db,
        )
    finally:
        await live.conn.close()
    return captured.snapshot


def restore_into(
    driver: Any, snapshot: SiteData | bytes | str, *, land: str | None = None
) -> dict[str, Any]:
    """:func:`restore_into_async`, run to completion on its own event loop."""

    async def run() -> dict[str, Any]:
        return await restore_into_async(driver, snapshot, land=land)

    return anyio.run(run)


def save_from(
    driver: Any,
    *,
    origins: Iterable[str] = (),
    previous: SiteData | None = None,
    indexed_db: bool = False,
) -> SiteData:
    """:func:`save_from_async`, run to completion on its own event loop."""

    async def run() -> SiteData:
        return await save_from_async(
            driver, origins=origins, previous=previous, indexed_db=indexed_db
        )

    return anyio.run(run)
