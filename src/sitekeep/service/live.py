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
closes it within ``relay.WATCH_EVERY`` in the process that did it (a sign-out on any
replica, sign-ins being in the session store), and within the token cache's 30 s on
another replica (``Authenticator.holds``).

The socket itself is pumped by :class:`sitekeep.service.relay.Relay`, whose port into the
service (:class:`RelayPort`) this room is: the session's lock, whether a secret was typed
in it, the server's own origins, whether the live session is over.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from sitekeep.address import Refused
from sitekeep.args import OpenBody, SessionChoice, unchecked
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.errors import NotFound, Unauthorized
from sitekeep.model import Principal, well_formed
from sitekeep.service.parts import Parts

__all__ = ["TICKET_TTL", "Grant", "LiveSession", "LiveSessions"]

TICKET_TTL = 30.0
"""Seconds a ticket can be redeemed."""
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
        sign_in: the admin UI sign-in's reference (``signins.sign_in_ref``)
            when the UI asked for the ticket, else ``""``.
    """

    token: str = ""
    sign_in: str = ""


def _live_key(tenant: str, subject: str) -> str:
    return f"{_LIVE_PREFIX}{tenant}/{subject}"


def _ticket_key(ticket: str) -> str:
    return _TICKET_PREFIX + hashlib.sha256(ticket.encode()).hexdigest()


Opener = Callable[[Principal, OpenBody], Awaitable[dict[str, Any]]]
"""How a live session opens its session: ``Sessions.open``."""


class LiveSessions:
    """The live-session use cases (SPEC §10), and the relay's port into the service."""

    def __init__(self, parts: Parts, opener: Opener) -> None:
        self._parts = parts
        self._store = parts.stores.sessions
        self._clock = parts.clock
        self._open = opener

    async def create(
        self, who: Principal, choice: SessionChoice, *, sign_in: str = ""
    ) -> dict[str, Any]:
        """Open (or return to) the session ``choice.key`` (a new one when None) like
        ``open_session``, make it the owner's live session, and issue a ticket (bound to
        ``who.token``, and to the UI sign-in of reference ``sign_in`` when given).

        Returns:
            ``{id, key, created_at, expires_at, socket, ticket, ticket_expires_at, url,
            title}``.

        Raises:
            as ``Sessions.open``.
        """
        options = unchecked(OpenBody, **dict(choice))
        opened = await self._open(who, options)
        live, ticket = await self._start(who, opened["key"], sign_in)
        return {**live.as_json(), **ticket, "url": opened["url"], "title": opened["title"]}

    async def _start(
        self, who: Principal, key: str, sign_in: str = ""
    ) -> tuple[LiveSession, dict[str, Any]]:
        """Record the owner's live session on ``key`` (replacing theirs) and a ticket."""
        now = self._clock()
        ttl = self._parts.settings.live_ttl
        live = LiveSession(secrets.token_hex(8), key, who.tenant, who.subject, now, now + ttl)
        raw = json.dumps(asdict(live)).encode()
        await self._store.set(_live_key(who.tenant, who.subject), raw, ttl=ttl)
        return live, await self._issue(who, live, sign_in)

    async def current(self, tenant: str, subject: str) -> LiveSession | None:
        """The owner's live session, or None (none, or past its TTL)."""
        raw = await self._store.get(_live_key(tenant, subject))
        if raw is None:
            return None
        live = LiveSession(**json.loads(raw))
        return live if live.expires_at > self._clock() else None

    async def _require(self, who: Principal, id_: str) -> LiveSession:
        live = await self.current(who.tenant, who.subject)
        if live is None or live.id != id_:
            raise NotFound("live session", id_, field="id")
        return live

    async def _issue(self, who: Principal, live: LiveSession, sign_in: str) -> dict[str, Any]:
        ticket = "lt_" + secrets.token_urlsafe(32)
        expires_at = self._clock() + TICKET_TTL
        data = {
            "tenant": who.tenant,
            "subject": who.subject,
            "role": who.role,
            "id": live.id,
            "expires_at": expires_at,
            "token": who.token,
            "sign_in": sign_in,
        }
        await self._store.set(_ticket_key(ticket), json.dumps(data).encode(), ttl=TICKET_TTL)
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
        await self._store.delete(_live_key(who.tenant, who.subject))
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
        store = self._store
        raw = await store.get(_ticket_key(ticket))
        if raw is None or not await store.delete(_ticket_key(ticket)):
            raise Unauthorized("unknown, spent or expired ticket")
        data = json.loads(raw)
        if data["expires_at"] <= self._clock():
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
        if grant.sign_in and not await self._parts.sign_ins.holds(grant.sign_in):
            return "signed_out"
        if grant.token and not await self._parts.auth.holds(grant.token, live.tenant):
            return "revoked"
        return None

    async def why_over(self, live: LiveSession, grant: Grant | None = None) -> str | None:
        """None while ``live`` is its owner's live session and ``grant`` (when given)
        still stands; else ``ended``, ``replaced``, ``expired``, ``signed_out`` (the UI
        sign-in that asked for the ticket ended) or ``revoked`` (its token was)."""
        if grant is not None and (lapsed := await self._lapsed(live, grant)) is not None:
            return lapsed
        raw = await self._store.get(_live_key(live.tenant, live.subject))
        if raw is None:
            return "expired" if live.expires_at <= self._clock() else "ended"
        now = LiveSession(**json.loads(raw))
        if now.id != live.id:
            return "replaced"
        return "expired" if now.expires_at <= self._clock() else None

    # -- the relay's port (``relay.RelayPort``) ---------------------------------------

    async def browser(self, who: Principal, key: str) -> LiveBrowser | None:
        """The live session's browser as it is now (no reopen), or None.

        Raises:
            NotFound: no such session.
        """
        seam = self._parts.seam
        return await seam.browsers.current(await seam.records.require(who, key))

    def session_held(self, tenant: str, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """The session's lock, the one every agent call takes (SessionBusy past
        ``SITEKEEP_LOCK_WAIT``): a person's input never interleaves with a call."""
        return self._parts.seam.records.held(tenant, key)

    async def secret_typed(self, tenant: str, key: str) -> bool:
        """Whether a secret was typed in the session (its input gate, SPEC §7)."""
        return await self._parts.seam.records.secret_typed(tenant, key)

    async def shown(self, tenant: str, key: str, page: PageInfo) -> dict[str, Any]:
        """``{url | url_withheld: true, title}`` of the session's ``page`` as every result
        shows them (SPEC §7, §12): each stretch of a value the session masks is ``•••``,
        and a URL holding one is withheld.

        Raises:
            StoreUnavailable: the session store is out of reach."""
        records = self._parts.seam.records
        record = await records.load(tenant, key)
        if record is None:  # deleted meanwhile: what it masked is unknown, nothing shown
            return {"url_withheld": True, "title": ""}
        withheld = page.url is not None and await records.holds_secret(tenant, record, page.url)
        view = {**({"url_withheld": True} if withheld else {"url": page.url}), "title": page.title}
        return well_formed((await records.masker(tenant, record)).value(view))

    def own_origins(self) -> list[str]:
        """The origins the server itself answers on (SPEC §12)."""
        return self._parts.own_origins()

    @property
    def own_address(self) -> Refused:
        """The sitekeep server and every driver, in any spelling (SPEC §12): a live
        ``navigate`` goes to none of them, as an agent's does not."""
        return self._parts.browsers.own_address

    @property
    def captures(self) -> int | None:
        """``SITEKEEP_LIVE_CAPTURES``: capture loops per socket (None: per browser)."""
        return self._parts.settings.live_captures
