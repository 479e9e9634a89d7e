"""Starting, reattaching and closing browsers (SPEC §2).

Correctness never depends on this object's memory: a browser is found again from its
``BrowserRef`` alone (stateless reattach). The per-process cache of open BiDi sockets is
an optimisation — and it is what lets the leave tracker see every document leave.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace

import anyio.to_thread

from sitekeep.browser.bidi import BidiConnection
from sitekeep.browser.driver import (
    LocalChromedriver,
    SessionSpec,
    create_session,
    delete_session,
    session_alive,
)
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.scripts import CHANNEL, PRELOAD
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.config import Settings
from sitekeep.errors import BidiError, BrowserUnavailable
from sitekeep.model import BrowserKind, BrowserRef

__all__ = ["BrowserManager"]

log = logging.getLogger(__name__)

_GONE = frozenset({"invalid session id", "no such window", "session not created"})
_TRACKED = (
    "script.message",
    "browsingContext.contextCreated",
    "browsingContext.navigationCommitted",
    "browsingContext.contextDestroyed",
)
"""What the leave tracker listens to, for the life of the socket."""


class BrowserManager:
    """Browsers on the configured endpoint: ``SITEKEEP_WEBDRIVER_URL`` or the embedded
    chromedriver."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._local = (
            None
            if settings.webdriver_url
            else LocalChromedriver(settings.data_dir, settings.chromedriver)
        )
        self._live: dict[str, LiveBrowser] = {}

    @property
    def local_driver(self) -> LocalChromedriver | None:
        return self._local

    async def endpoint(self) -> str:
        """The WebDriver server URL (the embedded chromedriver is started if needed)."""
        if self._settings.webdriver_url:
            return self._settings.webdriver_url.rstrip("/")
        assert self._local is not None
        return await anyio.to_thread.run_sync(self._local.ensure)

    async def start(self, kind: BrowserKind, *, insecure: bool = False) -> LiveBrowser:
        """A new browser, tracked from birth, on ``about:blank``.

        Raises:
            BrowserUnavailable: no browser could be started.
        """
        spec = SessionSpec(kind, self._settings.chromium, self._settings.browser_args, insecure)
        ref = await anyio.to_thread.run_sync(create_session, await self.endpoint(), spec)
        try:
            return await self._wire(ref, LeaveTracker.at_birth(), install=True)
        except BaseException:
            await delete_session(ref.endpoint, ref.session_id)
            raise

    async def attach(self, ref: BrowserRef) -> LiveBrowser | None:
        """The live browser ``ref`` names, or None when it is gone (died, reaped, closed)."""
        cached = self._live.get(ref.generation)
        if cached is not None and not cached.conn.closed:
            return cached
        self._live.pop(ref.generation, None)
        try:
            if not await session_alive(ref.endpoint, ref.session_id):
                return None
            return await self._wire(ref, LeaveTracker(), install=False)
        except BidiError as exc:
            if exc.code in _GONE:
                return None
            raise
        except BrowserUnavailable:
            return None

    async def _wire(self, ref: BrowserRef, tracker: LeaveTracker, *, install: bool) -> LiveBrowser:
        conn = await BidiConnection.connect(ref.ws_url, timeout=self._settings.bidi_timeout)
        try:
            for event, listener in (
                ("script.message", tracker.on_message),
                ("browsingContext.contextCreated", tracker.on_context_created),
                ("browsingContext.navigationCommitted", tracker.on_navigation_committed),
                ("browsingContext.contextDestroyed", tracker.on_context_destroyed),
            ):
                conn.add_listener(event, listener)
            conn.on_close(tracker.lost)
            await conn.subscribe(_TRACKED)
            if install:
                await conn.send(
                    "script.addPreloadScript",
                    {
                        "functionDeclaration": PRELOAD,
                        "arguments": [{"type": "channel", "value": {"channel": CHANNEL}}],
                    },
                )
            context = await self._main_context(conn, ref.context)
        except BaseException:
            await conn.close()
            raise
        live = LiveBrowser(
            ref=replace(ref, context=context),
            conn=conn,
            tracker=tracker,
            context=context,
            navigation_timeout=self._settings.navigation_timeout,
        )
        self._live[ref.generation] = live
        return live

    @staticmethod
    async def _main_context(conn: BidiConnection, wanted: str) -> str:
        tree = await conn.send("browsingContext.getTree", {"maxDepth": 0})
        contexts = [str(c["context"]) for c in tree.get("contexts", [])]
        if wanted in contexts:
            return wanted
        if contexts:
            return contexts[0]
        created = await conn.send("browsingContext.create", {"type": "tab"})
        return str(created["context"])

    async def close(self, ref: BrowserRef) -> None:
        """End the browser's WebDriver session; a gone one is fine."""
        live = self._live.pop(ref.generation, None)
        if live is not None:
            with contextlib.suppress(Exception):
                await live.conn.close()
        await delete_session(ref.endpoint, ref.session_id)

    async def close_all(self) -> None:
        """End every browser this process has reached (tests, an operator's shutdown)."""
        for live in list(self._live.values()):
            await self.close(live.ref)

    async def aclose(self) -> None:
        """Close this process's sockets; the browsers live on (stateless reattach)."""
        lives, self._live = list(self._live.values()), {}
        await asyncio.gather(*(live.conn.close() for live in lives), return_exceptions=True)
