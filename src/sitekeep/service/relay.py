"""The live socket's relay (SPEC §10): frames out, input in (``service.live`` has the rules).

:class:`Relay` pumps one socket: frames out as binary JPEG messages, JSON messages both
ways (:mod:`sitekeep.browser.screencast` has the input messages). Before its first frame
it sets the tab's viewport to :data:`SIZE` (``resize`` messages change it), and every
frame it sends has the size last set: a capture of another size is dropped, and one taken
after the viewport was set means the browser lost it, so it is set again. Frames never
queue: at most :data:`HIGH_WATER` are in flight unacknowledged (each drawn frame is
acked), one more waits in a one-slot mailbox that a newer frame replaces (newest wins),
and no frame is captured while the client is that far behind — the rate follows the
client. Captures that overlap (:data:`PIPELINE`) start a capture's time over their number
apart, so that they show the page at evenly spaced moments. Unchanged frames are skipped,
and an idle page is captured less and less often until input or a change wakes it.
Server messages other than frames (``ready``, ``page``, ``viewport``, ``error``,
``closed``) are queued without a bound and never dropped; the page's URL and title in them
are shown as every result shows them (a typed secret's value ``•••``, a URL holding one
withheld: ``url_withheld``); so is input, which
runs in order under the session's lock — the one agent calls take — so a person's input
and an agent's call never interleave in one tab. Input goes through the browser's input
gate (``browser.inputs``) as an agent's does: in a session where a secret was typed, a
message that could copy, cut or paste, open the context menu, paste the selection or drag
is answered with an ``error`` (``clipboard_not_allowed``), nothing of it is sent, and the
socket goes on. Input is a person's: it is never logged nor journaled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from sitekeep import client_json
from sitekeep.address import Refused
from sitekeep.browser import screencast
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.errors import (
    BidiError,
    BidiTimeout,
    BrowserUnavailable,
    InvalidInput,
    SitekeepError,
)
from sitekeep.model import Principal
from sitekeep.service.live import Grant, LiveSession

__all__ = ["HIGH_WATER", "PIPELINE", "SIZE", "WATCH_EVERY", "Relay", "RelayPort"]

HIGH_WATER = 3
"""Frames in flight (sent, not yet acknowledged) before capturing pauses."""
PIPELINE = {"chromium": 3, "firefox": 1}
"""``captureScreenshot`` commands kept in flight per browser kind (unless
``SITEKEEP_LIVE_CAPTURES`` says). Chromium takes ~90 ms to answer one but overlaps them:
three in flight took it from 10.7 to 17.2 fps at 1280×800, and to 29.7 fps once their
starts were spread out (20.0 fps started together, load 1.8); Firefox answers in ~25 ms and
slows when they overlap (38 → 26.5 fps) — ``bench/liveview.py``, load 4–7."""
IDLE_MAX = 0.25
"""The longest pause, seconds, between two captures of a page that does not change."""
SIZE = (1280, 800)
"""The viewport, CSS pixels, a live socket sets before its first frame (then ``resize``
messages change it): the browsers' window is that size too, but a window is not a
viewport — a headless window's viewport can be smaller than the window (its frames
then came out 1280×657), and a browser started again has lost any ``setViewport``."""
WATCH_EVERY = 0.5
"""Seconds between two checks of the live record and of the page's URL and title."""


class RelayPort(Protocol):
    """What a relay asks of the service (``service.live.LiveSessions`` is it)."""

    def session_held(
        self, tenant: str, key: str
    ) -> contextlib.AbstractAsyncContextManager[None]: ...

    async def secret_typed(self, tenant: str, key: str) -> bool: ...

    async def shown(self, tenant: str, key: str, page: PageInfo) -> dict[str, Any]: ...

    def own_origins(self) -> list[str]: ...

    @property
    def own_address(self) -> Refused | None: ...

    @property
    def captures(self) -> int | None: ...

    async def why_over(self, live: LiveSession, grant: Grant | None = None) -> str | None: ...


Send = Callable[[str], Awaitable[None]]
SendBytes = Callable[[bytes], Awaitable[None]]
Receive = Callable[[], Awaitable[str]]


def _error(exc: SitekeepError) -> dict[str, Any]:
    error: dict[str, Any] = {"type": exc.type_name, "message": exc.message}
    field = getattr(exc, "field", None)
    if field:
        error["field"] = field
    return {"type": "error", "error": error}


class Relay:
    """One live socket: frames out, input in (see the module's docstring).

    ``send``/``send_bytes``/``receive`` are the socket's; :meth:`run` returns when the
    client leaves, the live session is over (after a ``closed`` message), or the browser
    is gone (after an ``error``).
    """

    def __init__(
        self,
        port: RelayPort,
        who: Principal,
        live: LiveSession,
        browser: LiveBrowser,
        *,
        send: Send,
        send_bytes: SendBytes,
        receive: Receive,
        grant: Grant | None = None,
    ) -> None:
        self._port = port
        self._who = who
        self._live = live
        self._grant = grant if grant is not None else Grant(who.token)
        self._browser = browser
        self._send = send
        self._send_bytes = send_bytes
        self._receive = receive
        self._control: deque[dict[str, Any]] = deque()
        self._frame: bytes | None = None
        self._last: str | None = None
        self._size = SIZE  # the viewport asked for: every frame sent has this size
        self._pinned = 0  # captures started up to here may predate the last setViewport
        self._repinning = False
        self._in_flight = 0
        self._wake = asyncio.Event()  # the sender has something
        self._room = asyncio.Event()  # the client can take a frame
        self._kick = asyncio.Event()  # input ran: capture now
        self._changing = asyncio.Event()  # the last capture differed: every loop captures
        self._still = 0  # captures in a row, in order, equal to the last frame
        self._inputs: asyncio.Queue[Any] = asyncio.Queue(maxsize=256)
        self._room.set()
        self._started = 0  # captures started, in order
        self._loops = 1  # capture loops running
        self._took = 0.0  # a capture's recent time, seconds (moving average)
        self._next_start = 0.0  # the loop clock's time the next overlapping capture may start
        self._shown = 0  # the newest capture taken as a frame
        self._closing = False
        self.frames = 0
        """Frames sent."""

    def _say(self, message: dict[str, Any]) -> None:
        self._control.append(message)
        self._wake.set()

    def _close(self, message: dict[str, Any]) -> None:
        """Say ``message`` last: the sender sends it, then the relay ends."""
        self._say(message)
        self._closing = True

    async def run(self) -> None:
        """Pump until the client leaves or the live session is over."""
        try:
            async with self._port.session_held(self._who.tenant, self._live.key):
                await screencast.set_viewport(self._browser, *self._size)
        except SitekeepError:  # busy, say: the first frame of another size asks again
            pass
        width, height = self._size
        page = await self._browser.page_info()
        self._say(
            {
                "type": "ready",
                **self._live.as_json(),
                "browser": self._browser.ref.kind,
                "width": width,
                "height": height,
                **await self._page_view(page),
            }
        )
        self._page = page
        tasks = [
            asyncio.create_task(self._sender(), name="live-sender"),
            *(
                asyncio.create_task(self._capturer(lead=i == 0), name="live-capture")
                for i in range(self._captures())
            ),
            asyncio.create_task(self._receiver(), name="live-receive"),
            asyncio.create_task(self._inputs_worker(), name="live-input"),
            asyncio.create_task(self._watcher(), name="live-watch"),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _page_view(self, page: PageInfo) -> dict[str, Any]:
        """``{url | url_withheld, title}`` of ``page`` as every result shows them: a typed
        secret's value masked, a URL holding one withheld (SPEC §7)."""
        return await self._port.shown(self._who.tenant, self._live.key, page)

    def _captures(self) -> int:
        """Capture loops to run: the setting, else :data:`PIPELINE` for this browser."""
        configured = self._port.captures
        self._loops = configured or PIPELINE.get(self._browser.ref.kind, 1)
        return self._loops

    async def _paced(self) -> None:
        """Wait for this loop's turn: overlapping captures start a capture's time over
        the number of loops apart, so they show the page at evenly spaced moments instead
        of answering together with one picture; input cuts the wait short."""
        if self._loops == 1:
            return  # one loop: the last answer is its turn
        clock = asyncio.get_running_loop()
        slot = max(clock.time(), self._next_start)
        self._next_start = slot + self._took / self._loops
        if slot > clock.time():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(slot):
                    await self._kick.wait()

    async def _sender(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._control:
                await self._send(json.dumps(self._control.popleft()))
            if self._closing:
                return
            if self._frame is not None and self._in_flight < HIGH_WATER:
                data, self._frame = self._frame, None
                self._in_flight += 1
                if self._in_flight >= HIGH_WATER:
                    self._room.clear()
                await self._send_bytes(data)
                self.frames += 1

    async def _capturer(self, *, lead: bool = True) -> None:
        """One capture loop. Only the lead loop runs while the page is still: the others
        join once a frame changed, so input on an idle page is answered by one capture
        alone, not by several contending for the browser."""
        idle = 0
        while True:
            if not lead:
                await self._changing.wait()
            await self._room.wait()
            await self._paced()
            self._kick.clear()  # input from now on is in this capture or wakes the next
            self._started += 1
            number = self._started
            started = asyncio.get_running_loop().time()
            try:
                data = await screencast.capture(self._browser)
            except (BidiError, BidiTimeout):
                # A document being replaced has nothing to show for a moment.
                await asyncio.sleep(0.05)
                continue
            except BrowserUnavailable:
                self._close(_error(BrowserUnavailable("the browser is gone")))
                return
            took = asyncio.get_running_loop().time() - started
            self._took = took if not self._took else 0.75 * self._took + 0.25 * took
            if number < self._shown:
                continue  # a capture started later already answered: it is newer
            self._shown = number
            if data != self._last:
                frame = screencast.decode(data)
                if screencast.jpeg_size(frame) != self._size:
                    self._resized(number)
                    continue
                self._last = data
                self._frame = frame  # an unsent older frame is replaced
                self._wake.set()
                self._changing.set()
                self._still = 0
                idle = 0
                continue
            idle += 1
            self._still += 1
            if self._still >= 2:
                # Still twice running, in capture order (one repeat can be two overlapping
                # captures of one picture): the other loops rest until a frame changes.
                self._changing.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(IDLE_MAX, 0.02 * idle)):
                    await self._kick.wait()

    def _resized(self, number: int) -> None:
        """A capture was not the size asked for: one taken before the last
        ``setViewport`` is dropped; a later one means the viewport was lost (the browser
        started again, the window changed it), so it is set again — through the input
        queue, under the session's lock like any input."""
        if number > self._pinned and not self._repinning:
            self._repinning = True
            width, height = self._size
            self._inputs.put_nowait(screencast.Resize(type="resize", width=width, height=height))

    async def _receiver(self) -> None:
        while True:
            raw = await self._receive()
            try:
                # Checked for lone surrogates and unbounded numbers before any use.
                parsed = client_json.check(client_json.loads(raw), root="message")
                message = screencast.parse(parsed)
            except (ValueError, RecursionError):
                self._say(_error(InvalidInput("send JSON messages", field="type")))
                continue
            except InvalidInput as exc:
                self._say(_error(exc))
                continue
            if isinstance(message, screencast.Ack):
                self._in_flight = max(0, self._in_flight - 1)
                if self._in_flight < HIGH_WATER:
                    self._room.set()
                self._wake.set()
                continue
            await self._inputs.put(message)

    async def _inputs_worker(self) -> None:
        port = self._port
        while True:
            batch = [await self._inputs.get()]
            while not self._inputs.empty():
                batch.append(self._inputs.get_nowait())
            try:
                # The lock every agent call takes: input never interleaves with one.
                async with port.session_held(self._who.tenant, self._live.key):
                    typed = await port.secret_typed(self._who.tenant, self._live.key)
                    for message in batch:
                        await self._apply(message, typed)
            except BrowserUnavailable:
                self._close(_error(BrowserUnavailable("the browser is gone")))
                return
            except SitekeepError as exc:  # the lock was not had: nothing ran
                self._say(_error(exc))
            self._kick.set()

    async def _apply(self, message: Any, secret_typed: bool = False) -> None:
        try:
            await self._apply_one(message, secret_typed)
        finally:
            if isinstance(message, screencast.Resize):
                self._repinning = False  # a capture of the wrong size after this asks again

    async def _apply_one(self, message: Any, secret_typed: bool) -> None:
        """Apply one message; a refusal (``ClipboardNotAllowed`` in a session where a secret
        was typed, SPEC §7) or a browser's error is said as an ``error`` message and the
        socket goes on."""
        try:
            done = await screencast.apply(
                self._browser,
                message,
                own=self._port.own_address,
                own_origins=self._port.own_origins(),
                secret_typed=secret_typed,
            )
        except (BidiError, BidiTimeout) as exc:
            self._say(_error(exc))
            return
        except BrowserUnavailable:
            raise
        except SitekeepError as exc:
            self._say(_error(exc))
            return
        if isinstance(done, PageInfo):
            self._page = done
            self._say({"type": "page", **await self._page_view(done)})
        elif isinstance(done, tuple):
            self._size = done
            self._pinned = self._started
            self._repinning = False
            self._say({"type": "viewport", "width": done[0], "height": done[1]})

    async def _watcher(self) -> None:
        while True:
            await asyncio.sleep(WATCH_EVERY)
            reason = await self._port.why_over(self._live, self._grant)
            if reason is not None:
                self._close({"type": "closed", "reason": reason})
                return
            with contextlib.suppress(BidiError, BidiTimeout):
                page = await self._browser.page_info()
                if page != self._page:
                    self._page = page
                    self._say({"type": "page", **await self._page_view(page)})
