"""Bearer tokens in the SQL database, by SHA-256 only (SPEC §1; ``TokenStore``)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from sitekeep.model import Role
from sitekeep.stores.base import TokenRow
from sitekeep.stores.database import Database
from sitekeep.stores.schema import tokens

__all__ = ["SqlTokenStore"]

_WHAT = "the token database"
_FIND = sa.select(tokens).where(tokens.c.token_hash == sa.bindparam("token_hash"))
"""A token's row by its hash, built once."""


class SqlTokenStore:
    """The ``tokens`` table; see ``TokenStore`` for the contract."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, row: TokenRow) -> None:
        values = {
            "token_hash": row.token_hash,
            "tenant": row.tenant,
            "subject": row.subject,
            "role": row.role,
            "created_at": row.created_at,
        }
        await self._db.run(
            _WHAT, lambda conn: conn.execute(sa.insert(tokens).values(**values)), write=True
        )

    async def find(self, token_hash: str) -> TokenRow | None:
        rows = await self._db.fetch(_WHAT, _FIND, {"token_hash": token_hash})
        return _row(rows[0]) if rows else None

    async def list(self, tenant: str | None) -> list[TokenRow]:
        query = sa.select(tokens).order_by(tokens.c.created_at, tokens.c.token_hash)
        if tenant is not None:
            query = query.where(tokens.c.tenant == tenant)
        return await self._db.read(_WHAT, lambda conn: [_row(r) for r in conn.execute(query)])

    async def delete(self, token_hash: str) -> bool:
        def remove(conn: sa.Connection) -> bool:
            gone = conn.execute(sa.delete(tokens).where(tokens.c.token_hash == token_hash))
            return gone.rowcount > 0

        return await self._db.run(_WHAT, remove, write=True)


def _row(row: Any) -> TokenRow:
    role: Role = "admin" if row.role == "admin" else "member"
    return TokenRow(row.token_hash, row.tenant, row.subject, role, row.created_at)
