"""The admin UI's sign-ins (SPEC §11).

A sign-in is the server-side session behind the admin UI's cookie: the cookie holds a
random id, the session store keeps only its SHA-256 with the principal and a CSRF token,
and the admin token itself is never kept — only its id, so revoking the token ends the
sign-ins made with it (:meth:`SignIns.end_made_with`). Sign-ins live in the session
store, so every replica sees a sign-out at once.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from sitekeep.auth import Authenticator, hash_token, token_id
from sitekeep.model import Principal
from sitekeep.service.gates import require_admin
from sitekeep.stores import SessionStore

__all__ = ["SIGN_IN_TTL", "SignIn", "SignIns", "sign_in_ref"]

SIGN_IN_TTL = 8 * 3600.0
"""How long an admin UI sign-in lasts, in seconds from signing in."""

_PREFIX = "admin-sign-in/"


@dataclass(frozen=True, slots=True)
class SignIn:
    """An admin signed in to the UI.

    Attributes:
        principal: who signed in (an admin of one tenant).
        csrf: the token every write from the UI must carry.
        expires_at: seconds since the epoch.
    """

    principal: Principal
    csrf: str
    expires_at: float


def sign_in_ref(sid: str) -> str:
    """A sign-in's reference: the SHA-256 of its id, hex — what the store keys it by, so
    what outlives a request (a live socket) can check the sign-in without its id."""
    return hashlib.sha256(sid.encode()).hexdigest()


def _key(sid: str) -> str:
    return _PREFIX + sign_in_ref(sid)


class SignIns:
    """The admin UI's sign-ins, in the session store."""

    def __init__(self, store: SessionStore, auth: Authenticator, clock: Callable[[], float]):
        self._store = store
        self._auth = auth
        self._clock = clock

    def now(self) -> float:
        """Seconds since the epoch, by the service's clock (a page's "how long ago")."""
        return self._clock()

    async def resolve(self, token: str) -> Principal | None:
        """Who ``token`` stands for, asked of the token store itself (a sign-in lasts
        hours: no memory of a since-revoked token may make one), or None."""
        return await self._auth.resolve(token, fresh=True)

    async def sign_in(self, who: Principal, token: str = "") -> tuple[str, SignIn]:
        """A new sign-in for an admin: a fresh random id (never one a browser offered,
        so a planted id cannot be fixed on a session) and a fresh CSRF token. ``token``
        is the id of the token signed in with (:func:`sitekeep.auth.token_id`), kept so
        that revoking it ends the sign-in.

        Returns:
            ``(sid, sign_in)``: the id goes into the cookie; only its hash is stored.

        Raises:
            Forbidden: a member's token.
        """
        require_admin(who, "the admin UI")
        sid = secrets.token_urlsafe(32)
        signed = SignIn(who, secrets.token_urlsafe(32), self._clock() + SIGN_IN_TTL)
        record = {
            "tenant": who.tenant,
            "subject": who.subject,
            "role": who.role,
            "csrf": signed.csrf,
            "expires_at": signed.expires_at,
            "token": token,
        }
        await self._store.set(_key(sid), json.dumps(record).encode(), ttl=SIGN_IN_TTL)
        return sid, signed

    async def sign_in_with(self, who: Principal, token: str) -> tuple[str, SignIn]:
        """:meth:`sign_in` made with the bearer ``token`` (only its id is kept).

        Raises:
            Forbidden: a member's token.
        """
        return await self.sign_in(who, token_id(hash_token(token)))

    async def signed_in(self, sid: str) -> SignIn | None:
        """The live sign-in an id stands for, or None (unknown, expired or malformed)."""
        if not sid or len(sid) > 256:
            return None
        return await self._by_ref(sign_in_ref(sid))

    async def _by_ref(self, ref: str) -> SignIn | None:
        raw = await self._store.get(_PREFIX + ref)
        if raw is None:
            return None
        data = json.loads(raw)
        if data["expires_at"] <= self._clock() or data["role"] != "admin":
            return None
        principal = Principal(data["tenant"], data["subject"], "admin", token=data.get("token", ""))
        return SignIn(principal, data["csrf"], data["expires_at"])

    async def holds(self, ref: str) -> bool:
        """Whether the sign-in of this reference (:func:`sign_in_ref`) is still live: not
        signed out, not ended by revoking its token, not expired."""
        return await self._by_ref(ref) is not None

    async def sign_out(self, sid: str) -> None:
        """End a sign-in (a no-op for an unknown id)."""
        if sid and len(sid) <= 256:
            await self._store.delete(_key(sid))

    async def end_made_with(self, token: str) -> int:
        """End every sign-in made with the token of this id; how many ended."""
        ended = []
        for key in await self._store.keys(_PREFIX):
            raw = await self._store.get(key)
            if raw is not None and json.loads(raw).get("token") == token:
                ended.append(key)
        if ended:
            await self._store.delete(*ended)
        return len(ended)
