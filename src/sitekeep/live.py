"""Live sessions (SPEC §10): a person drives a session's browser through a canvas.

A **live session** is a session's browser streamed to its owner: ``create`` opens (or
returns to) the session like ``open_session`` and records ``{id, key, expires_at}`` for the
owner — one per owner (tenant, subject): a new one replaces the last, whose sockets end —
with a TTL (``SITEKEEP_LIVE_TTL``). The records and tickets live in the session store, so
any replica can serve the socket.

The WebSocket is authorised by a **ticket**: random, single use (redeeming deletes it; of
two redeemers only the one whose delete removed it wins), ~30 s, bound to the live session
and its owner; only its SHA-256 is stored. It travels in the socket's first message, never
in a URL (URLs are logged). The ticket also names what it was asked with — the bearer
token's id, and the admin UI sign-in's reference when the UI asked — and the socket lasts
only as long as they do (:class:`Grant`): revoking the token, or signing out of the UI,
closes it within :data:`WATCH_EVERY` in the process that did it (a sign-out on any
replica, sign-ins being in the session store), and within the token cache's 30 s on
another replica (``Authenticator.holds``).

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
``closed``) are queued without a bound and never dropped; so is input, which
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
import hashlib
import json
import re
import secrets
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from sitekeep import client_json
from sitekeep.browser import screencast
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.errors import (
    BidiError,
    BidiTimeout,
    BrowserUnavailable,
    InvalidInput,
    NotFound,
    SitekeepError,
    Unauthorized,
)
from sitekeep.model import Principal

if TYPE_CHECKING:
    from sitekeep.service import Service

__all__ = [
    "HIGH_WATER",
    "PIPELINE",
    "SIZE",
    "TICKET_TTL",
    "Grant",
    "LiveSession",
    "LiveSessions",
    "Relay",
]

TICKET_TTL = 30.0
"""Seconds a ticket can be redeemed."""
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

_LIVE_PREFIX = "live/"
_TICKET_PREFIX = "live-ticket/"
_TICKET = re.compile(r"lt_[A-Za-z0-9_-]{1,64}")
"""What :meth:`LiveSessions._issue` hands out (``lt_`` and URL-safe base64): anything
else — a lone surrogate no hash can encode, say — is refused unread."""


@dataclass(frozen=True, slots=True)
class LiveSession:
    """One owner's live session.

    Attributes:
        id: 16 hex digits. key: the session it shows. tenant, subject: its owner.
        created_at, expires_at: seconds since the epoch.
    """

    id: str
    key: str
    tenant: str
    subject: str
    created_at: float
    expires_at: float

    def as_json(self) -> dict[str, Any]:
        """``{id, key, created_at, expires_at, socket}`` (``socket``: the WebSocket path)."""
        return {
            "id": self.id,
            "key": self.key,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "socket": f"/v1/live-sessions/{self.id}/socket",
        }


@dataclass(frozen=True, slots=True)
class Grant:
    """What a live socket was let in with, checked for as long as it lasts (SPEC §12).

    Attributes:
        token: the id of the bearer token that asked for the ticket
            (:func:`sitekeep.auth.token_id`), ``""`` when none.
        sign_in: the admin UI sign-in's reference (:func:`sitekeep.admin.sign_in_ref`)
            when the UI asked for the ticket, else ``""``.
    """

    token: str = ""
    sign_in: str = ""


def _live_key(tenant: str, subject: str) -> str:
    return f"{_LIVE_PREFIX}{tenant}/{subject}"


def _ticket_key(ticket: str) -> str:
    return _TICKET_PREFIX + hashlib.sha256(ticket.encode()).hexdigest()


class LiveSessions:
    """The live-session use cases over one :class:`~sitekeep.service.Service`."""

    def __init__(self, service: Service) -> None:
        self._svc = service

    async def create(
        self,
        who: Principal,
        *,
        key: str | None = None,
        browser: str | None = None,
        url: str | None = None,
        profile: str | None = None,
        country: str | None = None,
        sign_in: str = "",
    ) -> dict[str, Any]:
        """Open (or return to) the session ``key`` (a new one when None) like
        ``open_session``, make it the owner's live session, and issue a ticket (bound to
        ``who.token``, and to the UI sign-in of reference ``sign_in`` when given).

        Returns:
            ``{id, key, created_at, expires_at, socket, ticket, ticket_expires_at, url,
            title}``.

        Raises:
            as ``Service.open_session``.
        """
        svc = self._svc
        opened = await svc.open_session(
            who, key=key, browser=browser, url=url, profile=profile, country=country
        )
        live, ticket = await self._start(who, opened["key"], sign_in)
        return {**live.as_json(), **ticket, "url": opened["url"], "title": opened["title"]}

    async def _start(
        self, who: Principal, key: str, sign_in: str = ""
    ) -> tuple[LiveSession, dict[str, Any]]:
        """Record the owner's live session on ``key`` (replacing theirs) and a ticket."""
        svc = self._svc
        now = svc._clock()
        ttl = svc.settings.live_ttl
        live = LiveSession(secrets.token_hex(8), key, who.tenant, who.subject, now, now + ttl)
        raw = json.dumps(asdict(live)).encode()
        await svc._store.set(_live_key(who.tenant, who.subject), raw, ttl=ttl)
        return live, await self._issue(who, live, sign_in)

    async def current(self, tenant: str, subject: str) -> LiveSession | None:
        """The owner's live session, or None (none, or past its TTL)."""
        raw = await self._svc._store.get(_live_key(tenant, subject))
        if raw is None:
            return None
        live = LiveSession(**json.loads(raw))
        return live if live.expires_at > self._svc._clock() else None

    async def _require(self, who: Principal, id_: str) -> LiveSession:
        live = await self.current(who.tenant, who.subject)
        if live is None or live.id != id_:
            raise NotFound("live session", id_, field="id")
        return live

    async def _issue(self, who: Principal, live: LiveSession, sign_in: str) -> dict[str, Any]:
        ticket = "lt_" + secrets.token_urlsafe(32)
        expires_at = self._svc._clock() + TICKET_TTL
        data = {
            "tenant": who.tenant,
            "subject": who.subject,
            "role": who.role,
            "id": live.id,
            "expires_at": expires_at,
            "token": who.token,
            "sign_in": sign_in,
        }
        await self._svc._store.set(_ticket_key(ticket), json.dumps(data).encode(), ttl=TICKET_TTL)
        return {"ticket": ticket, "ticket_expires_at": expires_at}

    async def ticket(self, who: Principal, id_: str, sign_in: str = "") -> dict[str, Any]:
        """A fresh ticket for the caller's own live session (to connect again), bound as
        :meth:`create`'s.

        Returns:
            ``{ticket, ticket_expires_at}``.

        Raises:
            NotFound: ``id`` is not the caller's current live session.
        """
        return await self._issue(who, await self._require(who, id_), sign_in)

    async def end(self, who: Principal, id_: str) -> dict[str, Any]:
        """End the caller's live session: its sockets close (within :data:`WATCH_EVERY`);
        the session and its browser stay (close or delete them as any session).

        Returns:
            ``{id, key, ended: true}``.

        Raises:
            NotFound: ``id`` is not the caller's current live session.
        """
        live = await self._require(who, id_)
        await self._svc._store.delete(_live_key(who.tenant, who.subject))
        return {"id": live.id, "key": live.key, "ended": True}

    async def redeem(self, ticket: object, id_: str) -> tuple[Principal, LiveSession, Grant]:
        """Spend a ticket for the socket of live session ``id``: who it lets in, to which
        live session, and what it was asked with (for :meth:`why_over`).

        Raises:
            Unauthorized: no such ticket (unknown, spent or expired), or one for another
                live session, or that live session has ended.
        """
        if not isinstance(ticket, str) or not ticket:
            raise Unauthorized('send {"ticket": …} from POST /v1/live-sessions first')
        if not _TICKET.fullmatch(ticket):  # no store is asked about what was never issued
            raise Unauthorized("unknown, spent or expired ticket")
        store = self._svc._store
        raw = await store.get(_ticket_key(ticket))
        if raw is None or not await store.delete(_ticket_key(ticket)):
            raise Unauthorized("unknown, spent or expired ticket")
        data = json.loads(raw)
        if data["expires_at"] <= self._svc._clock():
            raise Unauthorized("unknown, spent or expired ticket")
        grant = Grant(data.get("token", ""), data.get("sign_in", ""))
        who = Principal(data["tenant"], data["subject"], data["role"], token=grant.token)
        live = await self.current(who.tenant, who.subject)
        if data["id"] != id_ or live is None or live.id != id_:
            raise Unauthorized("the ticket is not for this live session, or it has ended")
        if await self._lapsed(live, grant) is not None:
            raise Unauthorized("the token or sign-in that asked for this ticket has ended")
        return who, live, grant

    async def _lapsed(self, live: LiveSession, grant: Grant) -> str | None:
        """``signed_out`` or ``revoked`` when what let the socket in has ended, else None."""
        if grant.sign_in and not await self._svc.admin.holds(grant.sign_in):
            return "signed_out"
        if grant.token and not await self._svc.auth.holds(grant.token, live.tenant):
            return "revoked"
        return None

    async def why_over(self, live: LiveSession, grant: Grant | None = None) -> str | None:
        """None while ``live`` is its owner's live session and ``grant`` (when given)
        still stands; else ``ended``, ``replaced``, ``expired``, ``signed_out`` (the UI
        sign-in that asked for the ticket ended) or ``revoked`` (its token was)."""
        if grant is not None and (lapsed := await self._lapsed(live, grant)) is not None:
            return lapsed
        raw = await self._svc._store.get(_live_key(live.tenant, live.subject))
        if raw is None:
            return "expired" if live.expires_at <= self._svc._clock() else "ended"
        now = LiveSession(**json.loads(raw))
        if now.id != live.id:
            return "replaced"
        return "expired" if now.expires_at <= self._svc._clock() else None


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
        service: Service,
        who: Principal,
        live: LiveSession,
        browser: LiveBrowser,
        *,
        send: Send,
        send_bytes: SendBytes,
        receive: Receive,
        grant: Grant | None = None,
    ) -> None:
        self._svc = service
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
            async with self._svc.session_held(self._who.tenant, self._live.key):
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
                "url": page.url,
                "title": page.title,
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

    def _captures(self) -> int:
        """Capture loops to run: the setting, else :data:`PIPELINE` for this browser."""
        configured: int | None = self._svc.settings.live_captures
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
        svc = self._svc
        while True:
            batch = [await self._inputs.get()]
            while not self._inputs.empty():
                batch.append(self._inputs.get_nowait())
            try:
                # The lock every agent call takes: input never interleaves with one.
                async with svc.session_held(self._who.tenant, self._live.key):
                    typed = await svc.seam.records.secret_typed(self._who.tenant, self._live.key)
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
                own_origins=self._svc.own_origins(),
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
            self._say({"type": "page", "url": done.url, "title": done.title})
        elif isinstance(done, tuple):
            self._size = done
            self._pinned = self._started
            self._repinning = False
            self._say({"type": "viewport", "width": done[0], "height": done[1]})

    async def _watcher(self) -> None:
        while True:
            await asyncio.sleep(WATCH_EVERY)
            reason = await self._svc.live.why_over(self._live, self._grant)
            if reason is not None:
                self._close({"type": "closed", "reason": reason})
                return
            with contextlib.suppress(BidiError, BidiTimeout):
                page = await self._browser.page_info()
                if page != self._page:
                    self._page = page
                    self._say({"type": "page", "url": page.url, "title": page.title})
