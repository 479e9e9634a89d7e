"""Bearer tokens: issuing them, and the one parser of ``Authorization`` (SPEC §1, §12).

A token is ``sk_`` + 32 random bytes (URL-safe base64); only its SHA-256 is stored, so a
database leak gives no usable token. Every facade — the HTTP routes, MCP over HTTP, the
CLI — authenticates through :meth:`Authenticator.principal`.

Resolved tokens are remembered for ``cache_seconds`` (30 s), so a read that touches no
browser costs no database round trip; unknown ones for ``unknown_seconds`` (5 s), so a
flood of bad tokens costs no database round trip each either (a token is unknown only
until it is made, and making one here forgets them all). A revoked token is refused at
once by the process that revoked it — even by a lookup already in flight, whose answer may
have been read before the delete: it is asked again and not remembered; another replica
that resolved it in the last 30 s accepts it until its memory of it runs out — for calls
only: an admin UI sign-in, which lasts hours, asks the store afresh
(``resolve(fresh=True)``), and what that learns this process forgets at once. What a token
opened that outlives the call (a live socket) asks :meth:`Authenticator.holds` as it goes,
under the same rule: closed at once here, within 30 s elsewhere.

A token is named by its **id**: the first 16 hex digits of its SHA-256 — enough to list
and revoke it, useless to sign in with.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from sitekeep.errors import InvalidInput, NotFound, Unauthorized
from sitekeep.model import Principal, Role
from sitekeep.stores.base import Clock, TokenRow, TokenStore, system_clock

__all__ = ["Authenticator", "TokenInfo", "bearer_token", "hash_token", "token_id"]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@")
_MISSING = "send Authorization: Bearer <token> (sitekeep token create)"
_CACHE_LIMIT = 10_000
_ID_LENGTH = 16
_HEX = frozenset("0123456789abcdef")


def hash_token(token: str) -> str:
    """SHA-256 of the token, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_id(token_hash: str) -> str:
    """A token's id: the first 16 hex digits of its SHA-256."""
    return token_hash[:_ID_LENGTH]


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token as lists show it — never the token, never its whole hash.

    Attributes:
        id: the first 16 hex digits of the token's SHA-256.
        tenant, subject, role: whom it stands for.
        created_at: seconds since the epoch.
    """

    id: str
    tenant: str
    subject: str
    role: Role
    created_at: float

    def as_json(self) -> dict[str, object]:
        """``{id, tenant, subject, role, created_at}``."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "subject": self.subject,
            "role": self.role,
            "created_at": self.created_at,
        }


def _info(row: TokenRow) -> TokenInfo:
    return TokenInfo(token_id(row.token_hash), row.tenant, row.subject, row.role, row.created_at)


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header value (RFC 6750 §2.1; the
    scheme is case-insensitive).

    Raises:
        Unauthorized: no header, another scheme, or no token.
    """
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized(_MISSING)
    return token


def _check_name(value: str, field: str) -> str:
    if not value or len(value) > 128 or not set(value) <= _NAME_CHARS:
        raise InvalidInput(
            f"{field} must be 1–128 characters of letters, digits, '-', '_', '.', '@'",
            field=field,
        )
    return value


class Authenticator:
    """Issues tokens and tells who a token stands for."""

    def __init__(
        self,
        store: TokenStore,
        clock: Clock = system_clock,
        *,
        cache_seconds: float = 30.0,
        unknown_seconds: float = 5.0,
    ) -> None:
        self._store = store
        self._clock = clock
        self._cache_seconds = cache_seconds
        self._unknown_seconds = unknown_seconds
        self._cache: dict[str, tuple[Principal, float]] = {}
        self._unknown: dict[str, float] = {}
        self._held: dict[tuple[str, str], float] = {}  # (tenant, id) → known to stand until
        self._revocations = 0
        """Bumped by every revocation here, after its delete: a store answer that began
        before it may predate the delete, so it is neither remembered nor trusted."""

    async def create(self, tenant: str, subject: str, role: Role) -> str:
        """A new token for (tenant, subject, role); the only time it is ever shown.

        Raises:
            InvalidInput: a tenant or subject with characters outside ``[A-Za-z0-9-_.@]``.
        """
        _check_name(tenant, "tenant")
        _check_name(subject, "subject")
        token = "sk_" + secrets.token_urlsafe(32)
        await self._store.add(TokenRow(hash_token(token), tenant, subject, role, self._clock()))
        self._unknown.clear()
        return token

    async def list(self, tenant: str | None = None) -> list[TokenInfo]:
        """The tokens of ``tenant`` (every tenant's when None), oldest first.

        Raises:
            StoreUnavailable: the token database cannot be reached.
        """
        return [_info(row) for row in await self._store.list(tenant)]

    async def revoke(self, id_: str, tenant: str | None = None) -> TokenInfo:
        """Revoke the token with this id (within ``tenant`` when given): its row goes, and
        this process forgets it at once.

        Raises:
            InvalidInput: ``id`` is not 16 lowercase hex digits (field ``id``).
            NotFound: no such token (in ``tenant``).
            StoreUnavailable: the token database cannot be reached.
        """
        if len(id_) != _ID_LENGTH or not set(id_) <= _HEX:
            raise InvalidInput("id must be a token id: 16 lowercase hex digits", field="id")
        rows = [r for r in await self._store.list(tenant) if token_id(r.token_hash) == id_]
        if not rows or not await self._store.delete(rows[0].token_hash):
            raise NotFound("token", id_, field="id")
        for digest in [d for d in self._cache if token_id(d) == id_]:
            del self._cache[digest]
        for held in [h for h in self._held if h[1] == id_]:
            del self._held[held]
        self._revocations += 1
        return _info(rows[0])

    async def holds(self, id_: str, tenant: str) -> bool:
        """Whether the token of this id (of ``tenant``) still stands — for what a token
        opened that outlives the call (a live socket asks every half second). Like a
        resolved token, a standing one is remembered for ``cache_seconds``, and forgotten
        at once when this process revokes it: another replica's revocation is seen within
        ``cache_seconds``.

        Raises:
            StoreUnavailable: the token database cannot be reached.
        """
        now = time.monotonic()
        if self._held.get((tenant, id_), 0.0) > now:
            return True
        revocations = self._revocations
        standing = await self._listed(id_, tenant)
        if standing and revocations != self._revocations:  # asked across a revocation
            while standing and revocations != self._revocations:  # ...until none ran
                revocations = self._revocations
                standing = await self._listed(id_, tenant)
            return standing
        if standing:
            if len(self._held) >= _CACHE_LIMIT:
                self._held.clear()
            self._held[tenant, id_] = now + self._cache_seconds
        return standing

    async def resolve(self, token: str, *, fresh: bool = False) -> Principal | None:
        """The principal a token stands for, or None.

        Args:
            fresh: ask the store even when this process remembers the token — for what
                outlives the call (an admin UI sign-in lasts hours): a token another
                replica revoked in the last 30 s is refused.
        """
        digest = hash_token(token)
        cached = self._cache.get(digest)
        now = time.monotonic()
        if cached is not None and cached[1] > now and not fresh:
            return cached[0]
        if self._unknown.get(digest, 0.0) > now:
            return None
        revocations = self._revocations
        row = await self._store.find(digest)
        if revocations != self._revocations:
            # A revocation ran while the store answered: the row may have been read before
            # its delete. Ask again (after the delete) until no revocation ran meanwhile —
            # a second one may race the second read — and remember nothing.
            while row is not None and revocations != self._revocations:
                revocations = self._revocations
                row = await self._store.find(digest)
            return None if row is None else self._principal(row, digest)
        if row is None:
            self._cache.pop(digest, None)  # a fresh look found it revoked: forget it here too
            if len(self._unknown) >= _CACHE_LIMIT:
                self._unknown.clear()
            self._unknown[digest] = now + self._unknown_seconds
            return None
        principal = self._principal(row, digest)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[digest] = (principal, now + self._cache_seconds)
        return principal

    @staticmethod
    def _principal(row: TokenRow, digest: str) -> Principal:
        return Principal(row.tenant, row.subject, row.role, token=token_id(digest))

    async def _listed(self, id_: str, tenant: str) -> bool:
        return any(token_id(r.token_hash) == id_ for r in await self._store.list(tenant))

    async def principal(self, authorization: str | None) -> Principal:
        """Who an ``Authorization`` header value stands for.

        Raises:
            Unauthorized: no bearer token, or an unknown one.
            StoreUnavailable: the token database cannot be reached.
        """
        principal = await self.resolve(bearer_token(authorization))
        if principal is None:
            raise Unauthorized("unknown token")
        return principal
