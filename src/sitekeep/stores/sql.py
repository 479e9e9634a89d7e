"""The SQL database (SQLAlchemy Core): bearer tokens, stored hashed (SPEC §1, §13).

Embedded default: a SQLite file in the data dir. Tokens are ``sk_`` + 32 random bytes
(URL-safe base64); only their SHA-256 is kept, so a database leak gives no usable token.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
import sqlalchemy as sa

from sitekeep.errors import InvalidInput
from sitekeep.model import Principal, Role
from sitekeep.stores.base import Clock, system_clock
from sitekeep.stores.sqlite import guarded, sqlite_engine, sqlite_url

__all__ = ["TokenStore", "hash_token"]

T = TypeVar("T")

_metadata = sa.MetaData()
_tokens = sa.Table(
    "tokens",
    _metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("tenant", sa.String, nullable=False, index=True),
    sa.Column("subject", sa.String, nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@")


def hash_token(token: str) -> str:
    """SHA-256 of the token, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def _check_name(value: str, field: str) -> str:
    if not value or len(value) > 128 or not set(value) <= _NAME_CHARS:
        raise InvalidInput(
            f"{field} must be 1–128 characters of letters, digits, '-', '_', '.', '@'",
            field=field,
        )
    return value


class TokenStore:
    """Issues and resolves bearer tokens."""

    def __init__(self, url: str, clock: Clock = system_clock) -> None:
        self._engine = sqlite_engine(sqlite_url(url, "SITEKEEP_DATABASE_URL"))
        self._clock = clock
        self._run(lambda: _metadata.create_all(self._engine))

    def _run(self, fn: Callable[[], T]) -> T:
        return guarded("the token database", fn)

    def create(self, tenant: str, subject: str, role: Role) -> str:
        """A new token for (tenant, subject, role); the only time it is ever shown.

        Raises:
            InvalidInput: a tenant or subject with characters outside ``[A-Za-z0-9-_.@]``.
        """
        _check_name(tenant, "tenant")
        _check_name(subject, "subject")
        token = "sk_" + secrets.token_urlsafe(32)
        row = {
            "token_hash": hash_token(token),
            "tenant": tenant,
            "subject": subject,
            "role": role,
            "created_at": self._clock(),
        }

        def insert() -> None:
            with self._engine.begin() as conn:
                conn.execute(sa.insert(_tokens).values(**row))

        self._run(insert)
        return token

    def resolve_sync(self, token: str) -> Principal | None:
        """The principal a token stands for, or None."""

        def read() -> Principal | None:
            with self._engine.connect() as conn:
                row = conn.execute(
                    sa.select(_tokens.c.tenant, _tokens.c.subject, _tokens.c.role).where(
                        _tokens.c.token_hash == hash_token(token)
                    )
                ).first()
            if row is None:
                return None
            role: Role = "admin" if row.role == "admin" else "member"
            return Principal(tenant=row.tenant, subject=row.subject, role=role)

        return self._run(read)

    async def resolve(self, token: str) -> Principal | None:
        """:meth:`resolve_sync` in a worker thread."""
        return await anyio.to_thread.run_sync(self.resolve_sync, token)

    def close(self) -> None:
        self._engine.dispose()
