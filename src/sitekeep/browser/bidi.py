"""A thin async WebDriver BiDi client on ``websockets`` (W3C WebDriver BiDi §Transport).

Why not Selenium's own BiDi connection (issue #2 §9; figures from ``bench/bidi_channel.py``
and research/bidi-spike.md §4, §9 on this machine):

* **Polling floor.** selenium 4.51 (the release that installs here) waits for replies in
  steps of ``websocket_interval`` (0.1 s): a ``script.evaluate("1")`` round trip took 100 ms.
  Lowered to 1 ms it still costs a busy loop per call. 4.52 waits on events, but its
  certifi pin does not resolve from this registry. Here a reply resolves a future: no floor.
* **Subscriptions.** Selenium subscribes once per event per module and the first
  subscription's ``contexts`` silently win for every later handler; its high-level request
  handler intercepts in every tab. Here each ``session.subscribe`` is our own, scoped to the
  contexts we pass, and removed by its subscription id — the one form both engines accept.
* **Errors.** Selenium flattens BiDi errors into ``WebDriverException`` text; here the
  spec's ``error`` code stays a field (``BidiError.code``), so callers branch on
  ``no such frame`` or ``no such request`` without parsing messages.
* **Async.** Selenium's socket is served by threads (one thread per event); sitekeep is
  async. Here every command is awaitable with its own timeout, and many can be in flight
  at once on one socket (pipelining: 61 ``storage.setCookie`` cost about one round trip).
* **Grid.** A Selenium Grid relays BiDi at ``ws://<grid>/session/<id>/se/bidi``; this client
  speaks to any such URL as it speaks to chromedriver's own.

Selenium still creates sessions (``browser.webdriver``).

**A dead browser is noticed at once** (issue #8 item 9). When the browser dies, the
socket closes (chromedriver, geckodriver) and every pending command fails with
``BrowserUnavailable`` in the same moment. A relay can outlive its browser, though (a
Selenium Grid keeps its BiDi relay open, silent, after the session is gone): then
nothing would answer until each command's timeout — 30 s for a navigation. So while
commands wait, a watchdog asks the WebDriver endpoint once a second whether the session
still exists (:meth:`BidiConnection.watch`); a definite "invalid session id" fails every
pending command at once and closes the connection. Measured here: both drivers answer
that within 0.2–0.6 s of a SIGKILL of the browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import websockets
from websockets.asyncio.client import ClientConnection

from sitekeep.browser import wire
from sitekeep.errors import BidiError, BidiTimeout, BrowserUnavailable

__all__ = ["BidiConnection", "GoneProbe", "Listener", "ack_at_once", "open_socket"]

log = logging.getLogger(__name__)
_WIRE = logging.getLogger(f"{__name__}.wire")
_WIRE.setLevel(logging.WARNING)
"""The socket's own logger: websockets logs every frame at DEBUG (its head and tail),
and frames carry cookie values and proxy passwords, so it never logs below WARNING."""

T = TypeVar("T")
P = TypeVar("P")

Listener = Callable[[dict[str, Any]], None]
"""Called in the reader task with an event's ``params``; must not block."""

GoneProbe = Callable[[], Awaitable[bool]]
"""True when the browser behind the socket is known to be gone (never on a mere doubt)."""

_CLOSE_SECONDS = 3.0
"""How long :meth:`BidiConnection.close` waits for the closing handshake before it aborts
the TCP connection (websockets' own limit is 10 s, and a full write buffer has none)."""


class BidiConnection:
    """One BiDi WebSocket: commands with timeouts, events to listeners.

    Attributes:
        url: the socket URL.
        timeout: the default command timeout, seconds (SPEC §2: 5 s).
    """

    def __init__(self, ws: ClientConnection, url: str, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        """Commands waiting for their result by id, and event waits by a negative key."""
        self._listeners: dict[str, list[Listener]] = {}
        self._on_close: list[Callable[[], None]] = []
        self._closed = False
        self._gone: GoneProbe | None = None
        self._every = 1.0
        self._watchdog: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        ack_at_once(ws)
        self._reader = asyncio.get_running_loop().create_task(self._read(), name="bidi-reader")

    @classmethod
    async def connect(cls, url: str, *, timeout: float = 5.0) -> BidiConnection:
        """Open the socket at ``url``.

        Raises:
            BrowserUnavailable: the socket could not be opened within ``timeout``.
        """
        return cls(await open_socket(url, timeout=timeout), url, timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    def watch(self, gone: GoneProbe, *, every: float = 1.0) -> None:
        """While commands wait, ask ``gone`` every ``every`` seconds whether the browser
        is gone; when it is, fail every pending command with ``BrowserUnavailable`` and
        close the socket (see the module docstring). The probe never delays a command:
        it runs beside the waiting ones, and only while there are some."""
        self._gone = gone
        self._every = every

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once when the socket closes (tracking state depends on it)."""
        self._on_close.append(callback)

    async def send(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send one command and wait for its result.

        Args:
            method: the BiDi method, e.g. ``browsingContext.navigate``.
            params: its parameters (camelCase, as on the wire).
            timeout: seconds; the connection's default when None.

        Returns:
            The command's ``result`` object.

        Raises:
            BidiError: the browser answered with an error (``code`` is the spec's).
            BidiTimeout: no answer within ``timeout``.
            BrowserUnavailable: the socket is closed.
        """
        if self._closed:
            raise BrowserUnavailable("the BiDi socket is closed")
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        self._start_watchdog()
        limit = self.timeout if timeout is None else timeout
        try:
            # The write is bounded too: it waits while the socket's buffer is full.
            async with asyncio.timeout(limit):
                await self._ws.send(
                    json.dumps({"id": ident, "method": method, "params": params or {}})
                )
                message = await future
        except TimeoutError:
            raise BidiTimeout(method, limit) from None
        except websockets.exceptions.ConnectionClosed as exc:
            raise BrowserUnavailable("the BiDi socket closed") from exc
        finally:
            self._pending.pop(ident, None)
        if message.get("type") == "error":
            raise BidiError(str(message.get("error")), method, str(message.get("message", "")))
        result: dict[str, Any] = message.get("result") or {}
        return result

    def add_listener(
        self, event: wire.Event[P], listener: Callable[[P], None]
    ) -> Callable[[], None]:
        """Route ``event`` (e.g. ``wire.NETWORK_BEFORE_REQUEST_SENT``) to ``listener``,
        which gets its params.

        Listening is local: the browser sends the event only while a subscription
        (:meth:`subscribe`) covers it. Returns a function that removes the listener.
        """
        routed = cast(Listener, listener)
        self._listeners.setdefault(event, []).append(routed)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.get(event, []).remove(routed)

        return remove

    async def subscribe(self, events: Sequence[str], contexts: Sequence[str] | None = None) -> str:
        """``session.subscribe``, scoped to top-level ``contexts`` when given.

        Returns:
            The subscription id, for :meth:`unsubscribe`.
        """
        result = await wire.call(self, wire.session_subscribe(events, contexts))
        return str(result.get("subscription", ""))

    async def unsubscribe(self, subscription: str) -> None:
        """``session.unsubscribe`` by id (the form Chromium and Firefox both accept)."""
        await wire.call(self, wire.session_unsubscribe([subscription]))

    def unsubscribe_soon(self, subscription: str) -> None:
        """:meth:`unsubscribe` without waiting for the answer, for a caller whose
        listeners are gone already: nothing waits on it, and a subscription is its own
        (BiDi §session.subscribe: by id), so no later one depends on it. It cost the end of
        a restore 1–15 ms, in series (issue #15). A refusal or a closed socket is logged
        at debug level and dropped."""
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._unsubscribe_quietly(subscription))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _unsubscribe_quietly(self, subscription: str) -> None:
        try:
            await self.unsubscribe(subscription)
        except BrowserUnavailable as exc:  # BidiError included
            log.debug("an unsubscribe was not answered: %s", type(exc).__name__)

    async def close(self) -> None:
        """Close the socket; pending commands fail with ``BrowserUnavailable``. Bounded:
        a peer that never finishes the closing handshake (or never reads) has the TCP
        connection aborted after ``_CLOSE_SECONDS``."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        try:
            async with asyncio.timeout(_CLOSE_SECONDS):
                await self._ws.close()
        except TimeoutError:
            log.info("the BiDi socket did not close in %.0f s: aborted", _CLOSE_SECONDS)
            self._ws.transport.abort()
        await asyncio.wait({self._reader}, timeout=_CLOSE_SECONDS)  # ends with the socket
        if not self._reader.done():
            self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def wait_event(self, awaitable: Awaitable[T], *, timeout: float, what: str) -> T:
        """Wait for something an event brings (a ``browsingContext.load``), as a command
        waits for its result: failed with ``BrowserUnavailable`` the moment the socket
        closes or the watchdog finds the browser gone, ``BidiTimeout`` after ``timeout``.

        Args:
            what: the event waited for, named in the timeout error.
        """
        if self._closed:
            raise BrowserUnavailable("the BiDi socket is closed")
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[T] = loop.create_future()
        inner = asyncio.ensure_future(awaitable)
        inner.add_done_callback(lambda done: _chain(done, waiter))
        key = -next(self._ids)
        self._pending[key] = waiter
        self._start_watchdog()
        try:
            async with asyncio.timeout(timeout):
                return await waiter
        except TimeoutError:
            raise BidiTimeout(what, timeout) from None
        finally:
            self._pending.pop(key, None)
            inner.cancel()

    def _start_watchdog(self) -> None:
        if self._gone is not None and (self._watchdog is None or self._watchdog.done()):
            self._watchdog = asyncio.get_running_loop().create_task(
                self._watch(), name="bidi-watchdog"
            )

    async def _watch(self) -> None:
        assert self._gone is not None
        while self._pending and not self._closed:
            await asyncio.sleep(self._every)
            if not self._pending or self._closed:
                return
            try:
                gone = await self._gone()
            except Exception:  # a probe that fails proves nothing
                log.exception("the browser liveness probe failed")
                continue
            if gone:
                log.warning("the browser is gone: failing %d pending commands", len(self._pending))
                self._fail_pending(BrowserUnavailable("the browser is gone"))
                await self._ws.close()
                return

    def _fail_pending(self, error: BrowserUnavailable) -> None:
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
                # Read once here: a waiter whose task already ended (a guard's intercept
                # for a browser being torn down) would leave it "never retrieved"; a live
                # waiter still gets it raised.
                future.exception()

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                self._dispatch(raw)
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            self._fail_pending(BrowserUnavailable("the BiDi socket closed"))
            for callback in self._on_close:
                callback()

    def _dispatch(self, raw: str | bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            log.warning("dropped a BiDi message that is not JSON")
            return
        if not isinstance(message, dict):
            log.warning("dropped a BiDi message that is not a JSON object")
            return
        ident = message.get("id")
        if ident is not None:
            future = self._pending.get(ident)
            # A command that timed out has no waiter left: its late reply is dropped.
            if future is not None and not future.done():
                future.set_result(message)
            return
        if message.get("type") == "event":
            for listener in list(self._listeners.get(message.get("method", ""), ())):
                try:
                    listener(message.get("params") or {})
                except Exception:
                    # Never log the params: they may carry cookie or storage values.
                    log.exception("a BiDi listener for %s failed", message.get("method"))


def _chain(done: asyncio.Future[T], waiter: asyncio.Future[T]) -> None:
    """Hand ``done``'s outcome to ``waiter`` unless the waiter was settled first (then
    ``done``'s error is still read, so asyncio never reports it as never retrieved)."""
    if done.cancelled():
        return
    error = done.exception()
    if waiter.done():
        return
    if error is not None:
        waiter.set_exception(error)
    else:
        waiter.set_result(done.result())


async def open_socket(url: str, *, timeout: float, max_size: int | None = None) -> ClientConnection:
    """A BiDi WebSocket to ``url``: no compression, no pings, frames never logged.

    Raises:
        BrowserUnavailable: it could not be opened within ``timeout`` (the URL is never in
            the message: it may carry a Grid's password).
    """
    try:
        ws = await websockets.connect(
            url,
            max_size=max_size,
            open_timeout=timeout,
            compression=None,
            ping_interval=None,
            logger=_WIRE,
        )
    except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
        raise BrowserUnavailable(f"cannot open the BiDi socket: {type(exc).__name__}") from exc
    return ws


def ack_at_once(ws: ClientConnection) -> None:
    """Acknowledge every TCP segment the socket receives at once (``TCP_QUICKACK`` on
    Linux, set again on each arrival: the kernel clears it by itself).

    Why: Firefox's remote agent writes with Nagle's algorithm on, so a reply waits until
    the segment before it is acknowledged — and Linux delays that ACK by up to 40 ms when
    it has nothing to send back. Two commands in flight on Firefox took 44 ms instead of
    5 (``bench/save_restore.py --phases``, issue #15)."""
    transport = getattr(ws, "transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    option = getattr(socket, "TCP_QUICKACK", None)
    if sock is None or option is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    received = ws.data_received

    def data_received(data: bytes) -> None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, option, 1)
        received(data)

    ws.data_received = data_received  # type: ignore[method-assign]  # the transport calls it
