"""A live browser as sitekeep drives it: its BiDi socket, main tab and leave tracker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sitekeep.browser import wire
from sitekeep.browser.banned import REFUSED_ERRORS
from sitekeep.browser.bidi import BidiConnection
from sitekeep.browser.guard import OwnAddressGuard
from sitekeep.browser.inputs import InputGate
from sitekeep.browser.samesite import SameSiteLog
from sitekeep.browser.scripts import REPLACE_LOCATION
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.errors import (
    BidiError,
    BidiTimeout,
    NavigationFailed,
    NoHistoryEntry,
    OwnAddress,
)
from sitekeep.model import BrowserRef

__all__ = ["LiveBrowser", "Loads", "PageInfo"]

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
    same_site: SameSiteLog = field(default_factory=SameSiteLog)
    """What the ``Set-Cookie`` headers this socket saw said about SameSite (Chromium)."""
    guard: OwnAddressGuard | None = None
    """Fails the browser's requests to the sitekeep server itself (``browser.guard``)."""
    input: InputGate = field(default_factory=InputGate)
    """What its input holds; every input goes through it (``browser.inputs``)."""

    async def evaluate_json(
        self,
        function: str,
        *args: Any,
        context: str | None = None,
        await_promise: bool = False,
        realm: str | None = None,
    ) -> Any:
        """Call a ``scripts`` function returning JSON text in ``context`` (the main tab),
        or in ``realm`` when given (a popup opened with an opener answers only so on
        Chromium: a call targeting its context waits until the timeout).

        With no arguments, or only booleans, integers and None, the call goes as one
        ``script.evaluate`` of ``(function)(args…)``: on Chromium that costs about
        0.7 ms less than ``script.callFunction`` with ``arguments`` (the mapper turns each
        argument into a remote value first; ``bench/save_restore.py --phases``, issue
        #15). Strings still go as ``arguments``: no text of a page or a caller is ever
        spliced into script source."""
        target = wire.realm_target(realm) if realm else wire.context_target(context or self.context)
        if all(_inline(a) for a in args):
            expression = f"({function})({', '.join(json.dumps(a) for a in args)})"
            command = wire.script_evaluate(expression, target, await_promise=await_promise)
        else:
            arguments = [wire.local_value(a) for a in args]
            command = wire.script_call_function(
                function, target, arguments=arguments, await_promise=await_promise
            )
        result = await wire.call(self.conn, command)
        if result.get("type") == "exception":
            raise BidiError("javascript error", command.method)
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

    async def navigate(
        self, url: str, context: str | None = None, *, field: str | None = "url"
    ) -> PageInfo:
        """``browsingContext.navigate`` with ``wait: complete``; returns where it landed.

        Args:
            field: the caller's argument that held ``url``, named by the errors below;
                None when no argument did (a reopen landing on the last page).

        Raises:
            NavigationFailed: the page could not be loaded (``reason`` net::ERR_…).
            OwnAddress: the load failed because a request of it (the page, a redirect
                hop) reached the sitekeep server itself or a driver and was refused — by
                the guard, or by the browser's network layer (``browser.banned``).
        """
        refused = self.guard.refusals if self.guard is not None else 0
        try:
            await wire.call(
                self.conn,
                wire.browsing_context_navigate(context or self.context, url, wait="complete"),
                timeout=self.navigation_timeout,
            )
        except BidiError as exc:
            if self.guard is not None and self.guard.refusals > refused:
                raise OwnAddress(field=field) from exc
            reason = _NET_ERROR.search(exc.detail)
            if reason is None:
                raise
            if reason.group(0) in REFUSED_ERRORS:  # the network layer's own refusal
                raise OwnAddress(field=field) from exc
            raise NavigationFailed(reason.group(0), field=field) from exc
        return await self.page_info(context)

    async def traverse(self, delta: int) -> PageInfo:
        """``browsingContext.traverseHistory`` by ``delta`` entries, then where it landed.

        Raises:
            NoHistoryEntry: there is no page that far back or forward.
        """
        try:
            await wire.call(self.conn, wire.browsing_context_traverse_history(self.context, delta))
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
        loaded = wire.script_evaluate(
            _LOADED, wire.context_target(self.context), await_promise=True
        )
        while True:
            try:
                await wire.call(
                    self.conn,
                    loaded,
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
    async def loads(self) -> AsyncIterator[Loads]:
        """One ``browsingContext.load`` subscription for the main tab, for as many
        navigations as the block makes (each :meth:`replace` would otherwise subscribe)."""
        loads = Loads(self.context)
        remove = self.conn.add_listener(wire.BROWSING_CONTEXT_LOAD, loads.on_load)
        try:
            subscription = await self.conn.subscribe([wire.BROWSING_CONTEXT_LOAD], [self.context])
        except BaseException:
            remove()
            raise
        try:
            yield loads
        finally:
            remove()
            self.conn.unsubscribe_soon(subscription)

    async def replace(
        self, url: str, *, timeout: float | None = None, loads: Loads | None = None
    ) -> None:
        """Navigate the main tab with ``location.replace`` and wait for its load: the page
        it leaves gets no history entry, so ``back()`` never returns to a spare page
        (HTML §Location). ``loads`` reuses a subscription from :meth:`loads`."""
        if loads is None:
            async with self.loads() as own:
                await self.replace(url, timeout=timeout, loads=own)
            return
        loaded = loads.expect()
        await wire.call(
            self.conn,
            wire.script_call_function(
                REPLACE_LOCATION,
                wire.context_target(self.context),
                arguments=[wire.local_value(url)],
                await_promise=False,
            ),
        )
        limit = timeout or self.navigation_timeout
        await self.conn.wait_event(loaded, timeout=limit, what=wire.BROWSING_CONTEXT_LOAD)


class Loads:
    """The main tab's ``browsingContext.load`` events, one future per expected load."""

    def __init__(self, context: str) -> None:
        self._context = context
        self._next: asyncio.Future[None] | None = None

    def expect(self) -> asyncio.Future[None]:
        """A future for the next load (set it up before starting the navigation)."""
        self._next = asyncio.get_running_loop().create_future()
        return self._next

    def on_load(self, params: wire.NavigationInfo) -> None:
        if params.get("context") == self._context and self._next and not self._next.done():
            self._next.set_result(None)


def _inline(value: Any) -> bool:
    """Whether ``value`` may be written into script source as JSON: a boolean, None or
    an integer (never text)."""
    return value is None or isinstance(value, bool | int)
