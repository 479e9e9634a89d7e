"""The spare page: standing on any origin without loading the site (SPEC §3).

A context-scoped ``network.addIntercept`` on the reserved path (``/__sitekeep-spare__``, any
scheme, host and port) holds each request for that path; ``network.provideResponse``
answers it with a tiny page carrying a marker. The intercept matches only the reserved
path, so a leaked one can never hold up a real page. Every blocked request is answered or
failed: one nobody answers wedges its tab (research/bidi-spike.md §9.7).

A spare page may list same-site frames: each frame stands on another origin of the same
site and sees that origin's first-party storage, so one navigation reaches every origin of
a site (``sitekeep.sites``). The frames are ``hidden`` (``display: none``): they load and run
their scripts, but take no layout or paint, which saves a tenth of what 19 frames cost in
headless Chromium 156 on 2 cores (302 vs 333 ms; issue #15, ``bench/README.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import itertools
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from sitekeep.browser import wire
from sitekeep.browser.bidi import BidiConnection
from sitekeep.browser.scripts import SPARE_HTML, SPARE_PATH
from sitekeep.errors import BidiError, BrowserUnavailable

__all__ = ["SparePage", "SpareResponder", "background_spare"]

log = logging.getLogger(__name__)

_HEADERS = [
    wire.header("Content-Type", "text/html; charset=utf-8"),
    wire.header("Cache-Control", "no-store"),
]


@dataclass(frozen=True, slots=True)
class SparePage:
    """What one spare page does besides standing there: an inline script its page runs
    as it is parsed, and ``Set-Cookie`` header values its response carries."""

    script: str | None = None
    set_cookie: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Answer:
    html: str
    headers: tuple[wire.Header, ...] = ()


class SpareResponder:
    """Answers the reserved path in the given top-level contexts while entered.

    Use as ``async with SpareResponder(conn, [context]) as spare:``, then navigate to
    ``spare.url(origin, frames)``.
    """

    def __init__(self, conn: BidiConnection, contexts: Sequence[str]) -> None:
        self._conn = conn
        self._contexts = list(contexts)
        self._pages: dict[str, _Answer] = {}
        self._ids = itertools.count(1)
        self._intercept: str | None = None
        self._subscription: str | None = None
        self._remove_listener: Any = None
        self._answers: set[asyncio.Task[None]] = set()

    def url(
        self,
        origin: str,
        frames: Sequence[str] = (),
        pages: Mapping[str, SparePage] | None = None,
    ) -> str:
        """The spare URL on ``origin``; its page holds a frame on each of ``frames``.

        ``pages`` maps an origin (the top's or a frame's) to what its page does: the top's
        script runs before its frames exist, so it can listen to them.
        """
        pages = pages or {}
        body = "".join(
            f'<iframe hidden src="{html.escape(self._register(f, pages.get(f)), quote=True)}">'
            "</iframe>"
            for f in frames
        )
        return self._register(origin, pages.get(origin), body)

    def _register(self, origin: str, page: SparePage | None, body: str = "") -> str:
        query = f"sk={next(self._ids)}"
        page = page or SparePage()
        head = f"<script>{page.script}</script>" if page.script else ""
        cookies = tuple(wire.header("Set-Cookie", v) for v in page.set_cookie)
        self._pages[query] = _Answer(SPARE_HTML % (head + body), cookies)
        return f"{origin}{SPARE_PATH}?{query}"

    async def __aenter__(self) -> SpareResponder:
        # Listener, then subscription, then intercept: no blocked request goes unseen.
        event = wire.NETWORK_BEFORE_REQUEST_SENT
        self._remove_listener = self._conn.add_listener(event, self._on_request)
        try:
            self._subscription = await self._conn.subscribe([event], self._contexts)
            intercept = wire.network_add_intercept(
                ["beforeRequestSent"],
                contexts=self._contexts,
                url_patterns=[{"type": "pattern", "pathname": SPARE_PATH}],
            )
            result = await wire.call(self._conn, intercept)
        except BaseException:
            await self._teardown()
            raise
        self._intercept = str(result["intercept"])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._teardown()

    async def _teardown(self) -> None:
        # The intercept goes before its handler, so nothing it blocks is left unanswered.
        if self._intercept is not None:
            with contextlib.suppress(BidiError, BrowserUnavailable):
                await wire.call(self._conn, wire.network_remove_intercept(self._intercept))
            self._intercept = None
        if self._answers:
            await asyncio.wait(self._answers, timeout=self._conn.timeout)
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None
        if self._subscription:
            self._conn.unsubscribe_soon(self._subscription)
            self._subscription = None

    def _on_request(self, params: wire.RequestParams) -> None:
        if not params.get("isBlocked") or self._intercept not in (params.get("intercepts") or ()):
            return
        request = params.get("request") or {}
        task = asyncio.get_running_loop().create_task(
            self._answer(str(request.get("request")), str(request.get("url", "")))
        )
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)

    async def _answer(self, request_id: str, url: str) -> None:
        page = self._pages.get(urlsplit(url).query, _Answer(SPARE_HTML % ""))
        try:
            response = wire.network_provide_response(
                request_id,
                status_code=200,
                reason_phrase="OK",
                headers=[*_HEADERS, *page.headers],
                body=page.html,
            )
            await wire.call(self._conn, response)
        except BidiError as exc:
            # Firefox: a service worker answered the navigation first ("no such request");
            # the missing marker tells the reader. Anything else: release the request.
            if exc.code != "no such request":
                with contextlib.suppress(BidiError, BrowserUnavailable):
                    await wire.call(self._conn, wire.network_fail_request(request_id))
        except BrowserUnavailable:
            log.info("the spare page could not be answered: the socket closed")


@contextlib.asynccontextmanager
async def background_spare(conn: BidiConnection) -> AsyncIterator[tuple[str, SpareResponder]]:
    """A background tab answering the reserved path, closed on exit: ``(tab, spare)``."""
    created = await wire.call(conn, wire.browsing_context_create(background=True))
    tab = str(created["context"])
    try:
        async with SpareResponder(conn, [tab]) as spare:
            yield tab, spare
    finally:
        with contextlib.suppress(BidiError, BrowserUnavailable):
            await wire.call(conn, wire.browsing_context_close(tab))
