"""WebDriver handovers (SPEC §21): a session's live browser handed to a tool that drives it
itself — Selenium, WebdriverIO, a BiDi client — through endpoints sitekeep serves.

``GET /v1/sessions/{key}/webdriver`` (the session's owner or an admin of its tenant, and,
for a session opened from a profile, one who may manage that profile: the browser is
handed over signed in) answers::

    {key, browser, webdriver_url, session_id, bidi_url, context, expires_at}

``webdriver_url`` is ``<this server>/v1/webdriver/<grant>`` (W3C WebDriver classic,
``browser.handover_classic``), ``bidi_url`` a WebSocket beside it (WebDriver BiDi,
``browser.handover_bidi``), ``session_id`` an id of the handover's own — never the
driver's — and ``context`` the main tab's browsing context. No driver, Grid or DevTools
address of sitekeep's is in it, nor in anything the endpoints answer
(``browser.scrub``).

The **grant** is ``wd_`` and 43 random URL-safe characters; only its SHA-256 is stored, in
the session store (any replica serves it), with a TTL (``SITEKEEP_WEBDRIVER_TTL``). It is
bound to the tenant, the session, the subject and bearer token that asked, and the
browser generation. WebDriver clients take an endpoint as a URL alone, so the grant is in
the URLs' path — which ``sitekeep serve``'s access log masks (``sitekeep.cli.logs``). Every
request checks it, and an open BiDi socket every :data:`WATCH_EVERY` seconds: the
handover ends when its TTL passes, its token is revoked, the session is deleted, or its
browser closes or is replaced (``DELETE /v1/sessions/{key}/browser``, the reaper, a
reopen). A handover is no lock: each command waits its turn behind a sitekeep call on the
session (the session's lock, bounded by ``SITEKEEP_LOCK_WAIT``) and marks the session used,
so the reaper leaves a browser being driven alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

from websockets.asyncio.client import ClientConnection

from sitekeep.browser.guard import reaches_refused
from sitekeep.browser.handover_bidi import BidiGate, BidiRefusal, BidiRelay, open_upstream
from sitekeep.browser.handover_classic import (
    ClassicUpstream,
    Command,
    Refusal,
    check_command,
    parse_body,
    parse_path,
    route,
    window_handles,
)
from sitekeep.browser.scrub import Scrubber
from sitekeep.errors import CapacityExceeded, Conflict, SitekeepError
from sitekeep.model import BrowserRef, Principal, SessionRecord
from sitekeep.service.gates import values_gate
from sitekeep.service.parts import Parts

__all__ = [
    "COMMANDS_PER_SESSION",
    "GRANT_PREFIX",
    "SOCKETS_PER_SESSION",
    "TOUCH_EVERY",
    "WATCH_EVERY",
    "Admitted",
    "BidiRefusal",
    "Ended",
    "Grant",
    "Handovers",
    "Refusal",
]

GRANT_PREFIX = "wd_"
WATCH_EVERY = 0.5
"""Seconds between two checks of an open BiDi socket's grant."""
TOUCH_EVERY = 60.0
"""Seconds between two marks of a driven session as used (the reaper's idle clock)."""
COMMAND_TIMEOUT = 330.0
"""Seconds a classic command may take at the driver: a page load's own default bound
(300 s, W3C WebDriver §9.1) and some."""
MAX_ANSWER = 64 * 1024 * 1024
"""Bytes of the largest classic answer relayed (a full-page screenshot, a page source)."""
COMMANDS_PER_SESSION = 8
"""Classic commands of one session this process relays at once; more are refused."""
SOCKETS_PER_SESSION = 4
"""BiDi sockets of one session this process relays at once; more are refused. With
:data:`COMMANDS_PER_SESSION`, what keeps one handover from taking a shared driver's
connections (chromedriver, a Grid) from every other tenant."""

_KEY_PREFIX = "webdriver/"
_MAX_GRANT = 64
_ENDED = {
    "unknown": "no such WebDriver handover (unknown, or past its TTL)",
    "other": "not the session this handover is for",
    "expired": "the WebDriver handover has expired (SITEKEEP_WEBDRIVER_TTL)",
    "revoked": "the token that asked for this WebDriver handover was revoked",
    "deleted": "the session was deleted",
    "closed": "the session's browser was closed or replaced",
}
_AGAIN = ": ask GET /v1/sessions/{key}/webdriver again (open the session first if need be)"


@dataclass(frozen=True, slots=True)
class Grant:
    """What a grant was handed out for (stored under its SHA-256).

    Attributes:
        tenant, key: the session. subject, token: who asked (the bearer token's id,
            ``""`` when none). generation: the browser's (``BrowserRef.generation``).
        session_id: the WebDriver session id handed out (32 hex digits).
        expires_at: seconds since the epoch.
    """

    tenant: str
    key: str
    subject: str
    token: str
    generation: str
    session_id: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class Admitted:
    """A grant that stands, and the browser it reaches."""

    grant: Grant
    ref: BrowserRef


@dataclass(frozen=True, slots=True)
class Ended:
    """Why a grant admits nothing: a key of the messages, and the message."""

    reason: str

    @property
    def message(self) -> str:
        return _ENDED[self.reason] + ("" if self.reason == "other" else _AGAIN)


def _grant_key(grant: str) -> str:
    return _KEY_PREFIX + hashlib.sha256(grant.encode()).hexdigest()


def _socket_url(http_url: str) -> str:
    return "ws" + http_url[4:] if http_url.startswith("http") else http_url


class _Slots:
    """At most ``limit`` holders per session at once, in this process."""

    def __init__(self, limit: int, what: str) -> None:
        self._limit = limit
        self._what = what
        self._held: Counter[tuple[str, str]] = Counter()

    @contextlib.contextmanager
    def take(self, grant: Grant) -> Iterator[None]:
        """Hold one for the block.

        Raises:
            CapacityExceeded: ``limit`` are held for the session (scope ``session``).
        """
        ident = (grant.tenant, grant.key)
        if self._held[ident] >= self._limit:
            raise CapacityExceeded(
                f"{self._limit} {self._what} of this session are relayed already: try again",
                scope="session",
                cap=self._limit,
            )
        self._held[ident] += 1
        try:
            yield
        finally:
            self._held[ident] -= 1
            if not self._held[ident]:
                del self._held[ident]


class Handovers:
    """The handover use cases (SPEC §21)."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._records = parts.seam.records
        self._clock = parts.clock
        self._upstream = ClassicUpstream(timeout=COMMAND_TIMEOUT, max_answer=MAX_ANSWER)
        self._touched: dict[tuple[str, str], float] = {}
        self._commands = _Slots(COMMANDS_PER_SESSION, "WebDriver commands")
        self._sockets = _Slots(SOCKETS_PER_SESSION, "BiDi sockets")

    async def aclose(self) -> None:
        await self._upstream.aclose()

    async def issue(self, who: Principal, key: str, base: str) -> dict[str, Any]:
        """Hand the session's live browser over (see the module's docstring).

        Args:
            base: this server's URL as the caller reached it (``http://host:port``).

        Returns:
            ``{key, browser, webdriver_url, session_id, bidi_url, context, expires_at}``.

        Raises:
            NotFound: no such session. Forbidden: neither admin nor owner (or one who may
                not manage the profile it was opened from).
            Conflict: the session has no live browser (open it first), it runs on the
                mapper engine (no WebDriver classic endpoint; ``chromium_bidi``), or a
                secret was typed in it or its site data carries a typed value.
            SessionBusy: another call held the session too long.
        """
        parts, records = self._parts, self._records
        await values_gate(records, parts.profiles, who, key, "take over its browser")
        async with records.held(who.tenant, key):  # no type_secret meanwhile
            record = await records.require(who, key)
            ref, context = await self._live(record)
            await records.hand_over(record, ref.generation)
        ttl = parts.settings.webdriver_ttl
        grant = Grant(
            who.tenant,
            key,
            who.subject,
            who.token,
            ref.generation,
            secrets.token_hex(16),
            self._clock() + ttl,
        )
        token = GRANT_PREFIX + secrets.token_urlsafe(32)
        grant_json = json.dumps(asdict(grant)).encode()
        await parts.stores.sessions.set(_grant_key(token), grant_json, ttl=ttl)
        root = f"{base.rstrip('/')}/v1/webdriver/{token}"
        return {
            "key": key,
            "browser": ref.kind,
            "webdriver_url": root,
            "session_id": grant.session_id,
            "bidi_url": f"{_socket_url(root)}/session/{grant.session_id}/bidi",
            "context": context,
            "expires_at": grant.expires_at,
        }

    async def _live(self, record: SessionRecord) -> tuple[BrowserRef, str]:
        """The session's live browser and main tab, to hand over.

        Raises:
            Conflict: no live browser, the mapper engine, or a secret was typed in the
                session or its site data carries a typed value (``SessionRecord.mask``,
                from a profile made of a session where a page copied one): its values are
                write-only, SPEC §7 — the page, the storage restored later may hold one.
        """
        parts = self._parts
        if record.secret_typed:  # typed here, or carried in by data opened from a copy
            raise Conflict(
                "a secret was typed in this session, or its site data holds a typed "
                "secret's value: its browser is never handed over (secret values are "
                "write-only); hand over another session"
            )
        browsers = parts.seam.browsers
        live = await browsers.attach(record.browser) if record.browser is not None else None
        if live is None or record.browser is None:
            raise Conflict("the session has no live browser: open it first")
        if not parts.browsers.classic_webdriver(record.browser):
            raise Conflict(
                "the session's browser runs on the mapper engine (SITEKEEP_CHROMIUM_BIDI="
                "mapper), which has no WebDriver classic endpoint to hand over"
            )
        return record.browser, live.context or record.browser.context

    async def admit(self, token: str, session_id: str) -> Admitted | Ended:
        """The grant ``token`` with the handed-out ``session_id``, if it still stands.

        Raises:
            StoreUnavailable: a store cannot be reached.
        """
        if not token.startswith(GRANT_PREFIX) or len(token) > _MAX_GRANT:
            return Ended("unknown")
        raw = await self._parts.stores.sessions.get(_grant_key(token))
        if raw is None:
            return Ended("unknown")
        grant = Grant(**json.loads(raw))
        if not hmac.compare_digest(grant.session_id.encode(), session_id.encode()):
            return Ended("other")
        return await self._standing(grant)

    async def _standing(self, grant: Grant) -> Admitted | Ended:
        parts = self._parts
        if grant.expires_at <= self._clock():
            return Ended("expired")
        if grant.token and not await parts.auth.holds(grant.token, grant.tenant):
            return Ended("revoked")
        record = await self._records.load(grant.tenant, grant.key)
        if record is None:
            return Ended("deleted")
        if record.browser is None or record.browser.generation != grant.generation:
            return Ended("closed")
        return Admitted(grant, record.browser)

    async def _require(self, token: str, session_id: str) -> Admitted:
        admitted = await self.admit(token, session_id)
        if isinstance(admitted, Ended):
            raise Refusal("invalid session id", admitted.message)
        return admitted

    async def turn(self, admitted: Admitted) -> None:
        """Wait until no sitekeep call holds the session (bounded by
        ``SITEKEEP_LOCK_WAIT``), and mark it used at most every :data:`TOUCH_EVERY`.

        Raises:
            SessionBusy: a call held it longer. StoreUnavailable: a store is out of reach.
        """
        records = self._records
        grant = admitted.grant
        ident = (grant.tenant, grant.key)
        async with records.held(*ident):
            if time.monotonic() - self._touched.get(ident, 0.0) < TOUCH_EVERY:
                return
            record = await records.load(*ident)
            browser = record.browser if record is not None else None
            if (
                record is not None
                and browser is not None
                and browser.generation == grant.generation
            ):
                await records.put(replace(record, last_used_at=self._clock()))
            if len(self._touched) > 10_000:
                self._touched.clear()
            self._touched[ident] = time.monotonic()

    def _scrubber(self, admitted: Admitted) -> Scrubber:
        parts = self._parts
        return Scrubber(
            admitted.ref,
            admitted.grant.session_id,
            parts.browsers.own_address,
            [parts.settings.webdriver_url],
        )

    # -- WebDriver classic ------------------------------------------------------------

    async def classic(
        self, method: str, raw_path: bytes, query: bytes, body: bytes
    ) -> tuple[int, Any]:
        """One classic request under ``/v1/webdriver/<grant>/…``: the status and JSON
        answer (``browser.handover_classic``: what is relayed, and the W3C errors)."""
        try:
            segments = parse_path(raw_path.split(b"?", 1)[0])
            if len(segments) < 3 or segments[:2] != ["v1", "webdriver"]:
                raise Refusal("unknown command", "not a handover path")
            if query:
                raise Refusal("invalid argument", "a WebDriver command takes no query string")
            token, tail = segments[2], segments[3:]
            asked = tail[1] if len(tail) > 1 and tail[0] == "session" else ""
            admitted = await self._require(token, asked) if asked else None
            command = route(method, tail, admitted.grant.session_id if admitted else "")
            if command is None:
                return 200, _STATUS
            assert admitted is not None  # route() refuses every other id
            return await self._relay(admitted, command, parse_body(command, body))
        except Refusal as refusal:
            return refusal.status, refusal.json()

    async def _relay(
        self, admitted: Admitted, command: Command, body: dict[str, Any] | None
    ) -> tuple[int, Any]:
        parts = self._parts
        check_command(
            command, body, own=parts.browsers.own_address, own_origins=parts.own_origins()
        )
        try:
            await self.turn(admitted)
        except SitekeepError as exc:
            raise Refusal("unknown error", exc.message) from None
        ref = admitted.ref
        if command.pattern == ("window",) and command.method == "DELETE":
            await self._not_the_last_window(ref)
        status, answer = await self._upstream.call(
            ref.endpoint, ref.session_id, command.method, command.path, body
        )
        return status, self._scrubber(admitted).value(answer)

    async def _not_the_last_window(self, ref: BrowserRef) -> None:
        _, answer = await self._upstream.call(
            ref.endpoint, ref.session_id, "GET", ("window", "handles"), None
        )
        if len(window_handles(answer)) <= 1:
            raise Refusal(
                "unsupported operation",
                "it is the browser's last window: end the browser with "
                "DELETE /v1/sessions/{key}/browser instead",
            )

    # -- WebDriver BiDi ---------------------------------------------------------------

    async def bidi(
        self,
        admitted: Admitted,
        *,
        send: Callable[[str], Awaitable[None]],
        receive: Callable[[], Awaitable[str]],
    ) -> str | None:
        """Relay one client socket to the browser until either side ends or the grant
        does (``browser.handover_bidi``).

        Returns:
            The message to close the client's socket with, or None (it left).

        Raises:
            BrowserUnavailable: the browser's BiDi socket could not be opened.
            CapacityExceeded: :data:`SOCKETS_PER_SESSION` are open.
        """
        with self._sockets.take(admitted.grant):
            return await self._bidi(admitted, send, receive)

    async def _bidi(
        self,
        admitted: Admitted,
        send: Callable[[str], Awaitable[None]],
        receive: Callable[[], Awaitable[str]],
    ) -> str | None:
        parts = self._parts
        upstream: ClientConnection = await open_upstream(
            admitted.ref.ws_url, timeout=parts.settings.bidi_timeout
        )
        own = parts.browsers.own_address

        async def watch() -> str | None:
            now = await self.admit_again(admitted)
            return None if now is None else now.message

        relay = BidiRelay(
            BidiGate(own=own, own_origins=parts.own_origins()),
            upstream,
            send=send,
            receive=receive,
            scrub=self._scrubber(admitted),
            turn=lambda: self.turn(admitted),
            reaches=lambda url: reaches_refused(own, url),
            watch=watch,
            every=WATCH_EVERY,
            max_message=parts.settings.max_body,
        )
        try:
            ended = await relay.run()
        finally:
            await upstream.close()
        if ended == "browser":
            now = await self.admit_again(admitted)
            return (now or Ended("closed")).message
        return ended

    async def admit_again(self, admitted: Admitted) -> Ended | None:
        """Why ``admitted``'s grant no longer stands, or None while it does."""
        now = await self._standing(admitted.grant)
        return now if isinstance(now, Ended) else None


_STATUS = {
    "value": {
        "ready": False,
        "message": "a sitekeep WebDriver handover: it drives one session, "
        "/session/<its id>/…; no session is created here",
    }
}
