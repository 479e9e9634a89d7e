"""Bearer tokens in the SQL database, by SHA-256 only (SPEC §1; ``TokenStore``)."""

from __future__ import annotations

import sqlalchemy as sa

from sitekeep.model import Role
from sitekeep.stores.base import TokenRow
from sitekeep.stores.database import Database
from sitekeep.stores.schema import tokens

__all__ = ["SqlTokenStore"]

_WHAT = "the token database"


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
        def read(conn: sa.Connection) -> TokenRow | None:
            row = conn.execute(
                sa.select(
                    tokens.c.tenant, tokens.c.subject, tokens.c.role, tokens.c.created_at
                ).where(tokens.c.token_hash == token_hash)
            ).first()
            if row is None:
                return None
            role: Role = "admin" if row.role == "admin" else "member"
            return TokenRow(token_hash, row.tenant, row.subject, role, row.created_at)

        return await self._db.run(_WHAT, read, write=False)
