"""A live browser as sitekeep drives it: its BiDi socket, main tab and leave tracker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sitekeep.browser.bidi import BidiConnection
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.errors import BidiError, BidiTimeout, NavigationFailed, NoHistoryEntry
from sitekeep.model import BrowserRef

__all__ = ["LiveBrowser", "PageInfo"]

_NET_ERROR = re.compile(r"(net::ERR_[A-Z_]+|NS_ERROR_[A-Z_]+)")
"""The error name in a failed navigation's message (Chromium, Firefox); never the URL."""

_LOADED = """new Promise((done) => document.readyState === "complete"
  ? done() : addEventListener("load", () => done(), {once: true}))"""
"""Resolves once the document has loaded (a history traversal returns at commit)."""


@dataclass(frozen=True, slots=True)
class PageInfo:
    """Where a tab is: its URL and title."""

    url: str
    title: str


@dataclass(eq=False)
class LiveBrowser:
    """One live browser: ``ref`` to reattach, ``conn`` to drive it, ``context`` its main tab.

    Attributes:
        navigation_timeout: seconds a page load may take (a page load is not one round
            trip, so it has its own bound beside the BiDi command timeout).
    """

    ref: BrowserRef
    conn: BidiConnection
    tracker: LeaveTracker
    context: str
    navigation_timeout: float = 30.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def evaluate_json(
        self, function: str, *args: Any, context: str | None = None, await_promise: bool = False
    ) -> Any:
        """Call a ``scripts`` function returning JSON text in ``context`` (the main tab)."""
        result = await self.conn.send(
            "script.callFunction",
            {
                "functionDeclaration": function,
                "arguments": [_local(a) for a in args],
                "target": {"context": context or self.context},
                "awaitPromise": await_promise,
                "resultOwnership": "none",
            },
        )
        if result.get("type") == "exception":
            raise BidiError("javascript error", "script.callFunction")
        return json.loads(result["result"]["value"])

    async def page_info(self, context: str | None = None) -> PageInfo:
        """The URL and title of ``context`` (the main tab).

        A page in the middle of replacing its document (a reload, a script navigation)
        has no realm to run in for a moment: that ``unknown error`` is retried until the
        BiDi timeout.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.conn.timeout
        while True:
            try:
                info = await self.evaluate_json(
                    "() => JSON.stringify([location.href, document.title])", context=context
                )
                return PageInfo(str(info[0]), str(info[1]))
            except BidiTimeout:
                raise
            except BidiError as exc:
                if exc.code != "unknown error" or loop.time() > deadline:
                    raise
                await asyncio.sleep(0.02)

    async def navigate(self, url: str, context: str | None = None) -> PageInfo:
        """``browsingContext.navigate`` with ``wait: complete``; returns where it landed."""
        try:
            await self.conn.send(
                "browsingContext.navigate",
                {"context": context or self.context, "url": url, "wait": "complete"},
                timeout=self.navigation_timeout,
            )
        except BidiError as exc:
            reason = _NET_ERROR.search(exc.detail)
            if reason is None:
                raise
            raise NavigationFailed(reason.group(0)) from exc
        return await self.page_info(context)

    async def traverse(self, delta: int) -> PageInfo:
        """``browsingContext.traverseHistory`` by ``delta`` entries, then where it landed.

        Raises:
            NoHistoryEntry: there is no page that far back or forward.
        """
        try:
            await self.conn.send(
                "browsingContext.traverseHistory", {"context": self.context, "delta": delta}
            )
        except BidiError as exc:
            if exc.code == "no such history entry":
                raise NoHistoryEntry(delta) from exc
            raise
        await self._settle()
        return await self.page_info()

    async def _settle(self) -> None:
        """Wait until the main tab's document has loaded. Right after a traversal the old
        realm may still be going away: a script error then means "try the new one"."""
        deadline = asyncio.get_running_loop().time() + self.navigation_timeout
        while True:
            try:
                await self.conn.send(
                    "script.evaluate",
                    {
                        "expression": _LOADED,
                        "target": {"context": self.context},
                        "awaitPromise": True,
                        "resultOwnership": "none",
                    },
                    timeout=max(0.1, deadline - asyncio.get_running_loop().time()),
                )
                return
            except BidiTimeout:
                raise
            except BidiError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.02)

    @contextlib.asynccontextmanager
    async def load_waiter(self) -> AsyncIterator[Any]:
        """Yields ``wait(timeout)``: resolves at the main tab's next ``browsingContext.load``."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def on_load(params: dict[str, Any]) -> None:
            if params.get("context") == self.context and not future.done():
                future.set_result(None)

        remove = self.conn.add_listener("browsingContext.load", on_load)
        subscription = await self.conn.subscribe(["browsingContext.load"], [self.context])

        async def wait(timeout: float) -> None:
            try:
                async with asyncio.timeout(timeout):
                    await future
            except TimeoutError:
                raise BidiTimeout("browsingContext.load", timeout) from None

        try:
            yield wait
        finally:
            remove()
            with contextlib.suppress(BidiError):
                await self.conn.unsubscribe(subscription)

    async def replace(self, url: str, *, timeout: float | None = None) -> None:
        """Navigate the main tab with ``location.replace``: the page it leaves gets no
        history entry, so ``back()`` never returns to a spare page (HTML §Location)."""
        async with self.load_waiter() as loaded:
            await self.conn.send(
                "script.callFunction",
                {
                    "functionDeclaration": "(u) => { location.replace(u); }",
                    "arguments": [_local(url)],
                    "target": {"context": self.context},
                    "awaitPromise": False,
                    "resultOwnership": "none",
                },
            )
            await loaded(timeout or self.navigation_timeout)


def _local(value: Any) -> dict[str, Any]:
    """A BiDi ``script.LocalValue`` for a primitive."""
    if isinstance(value, bool):
        return {"type": "boolean", "value": value}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    if isinstance(value, int | float):
        return {"type": "number", "value": value}
    if value is None:
        return {"type": "null"}
    raise TypeError(f"no BiDi local value for {type(value).__name__}")
