"""Bearer tokens: issuing them, and the one parser of ``Authorization`` (SPEC §1, §12).

A token is ``sk_`` + 32 random bytes (URL-safe base64); only its SHA-256 is stored, so a
database leak gives no usable token. Every facade — the HTTP routes, MCP over HTTP, the
CLI — authenticates through :meth:`Authenticator.principal`.

Resolved tokens are remembered for ``cache_seconds`` (30 s), so a read that touches no
browser costs no database round trip; a token stays usable that long on a replica after
its row goes (tokens cannot be revoked yet).
"""

from __future__ import annotations

import hashlib
import secrets
import time

from sitekeep.errors import InvalidInput, Unauthorized
from sitekeep.model import Principal, Role
from sitekeep.stores.base import Clock, TokenRow, TokenStore, system_clock

__all__ = ["Authenticator", "bearer_token", "hash_token"]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@")
_MISSING = "send Authorization: Bearer <token> (sitekeep token create)"
_CACHE_LIMIT = 10_000


def hash_token(token: str) -> str:
    """SHA-256 of the token, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


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
        self, store: TokenStore, clock: Clock = system_clock, *, cache_seconds: float = 30.0
    ) -> None:
        self._store = store
        self._clock = clock
        self._cache_seconds = cache_seconds
        self._cache: dict[str, tuple[Principal, float]] = {}

    async def create(self, tenant: str, subject: str, role: Role) -> str:
        """A new token for (tenant, subject, role); the only time it is ever shown.

        Raises:
            InvalidInput: a tenant or subject with characters outside ``[A-Za-z0-9-_.@]``.
        """
        _check_name(tenant, "tenant")
        _check_name(subject, "subject")
        token = "sk_" + secrets.token_urlsafe(32)
        await self._store.add(TokenRow(hash_token(token), tenant, subject, role, self._clock()))
        return token

    async def resolve(self, token: str) -> Principal | None:
        """The principal a token stands for, or None."""
        digest = hash_token(token)
        cached = self._cache.get(digest)
        now = time.monotonic()
        if cached is not None and cached[1] > now:
            return cached[0]
        row = await self._store.find(digest)
        if row is None:
            return None
        principal = Principal(tenant=row.tenant, subject=row.subject, role=row.role)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[digest] = (principal, now + self._cache_seconds)
        return principal

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
