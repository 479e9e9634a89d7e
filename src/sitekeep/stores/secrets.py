"""The secrets catalogue in the SQL database (SPEC §7; ``SecretStore``).

Rows as given: name, description, host patterns and key names in the clear (so they can be
listed), the values only inside ``sealed`` — an envelope the vault
(:mod:`sitekeep.vault`) made with the cipher; this store never sees a value.
"""

from __future__ import annotations

import builtins
import json
from typing import Any

import sqlalchemy as sa

from sitekeep.stores.base import SecretRow
from sitekeep.stores.database import Database
from sitekeep.stores.schema import secrets

__all__ = ["SqlSecretStore"]

_WHAT = "the secrets database"
# ``.c.keys`` is the column collection's own method: the column is reached by subscript.
_KEYS = secrets.c["keys"]


def _row(row: Any) -> SecretRow:
    return SecretRow(
        tenant=row.tenant,
        name=row.name,
        description=row.description,
        hosts=tuple(json.loads(row.hosts)),
        keys=tuple(json.loads(row.key_names)),
        sealed=bytes(row.sealed),
        updated_at=row.updated_at,
    )


_COLUMNS = (
    secrets.c.tenant,
    secrets.c.name,
    secrets.c.description,
    secrets.c.hosts,
    _KEYS.label("key_names"),
    secrets.c.sealed,
    secrets.c.updated_at,
)


_LIST = sa.select(*_COLUMNS).where(secrets.c.tenant == sa.bindparam("tenant"))
"""A tenant's secrets, built once (building it per call was a third of a list's cost)."""

_GET = _LIST.where(secrets.c.name == sa.bindparam("name"))
"""One secret of a tenant, built once."""


def _where(tenant: str, name: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (secrets.c.tenant == tenant, secrets.c.name == name)


class SqlSecretStore:
    """The ``secrets`` table; see ``SecretStore`` for the contract."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def put(self, row: SecretRow) -> None:
        values = {
            "tenant": row.tenant,
            "name": row.name,
            "description": row.description,
            "hosts": json.dumps(list(row.hosts)),
            "keys": json.dumps(list(row.keys)),
            "sealed": row.sealed,
            "updated_at": row.updated_at,
        }

        def write(conn: sa.Connection) -> None:
            conn.execute(sa.delete(secrets).where(*_where(row.tenant, row.name)))
            conn.execute(sa.insert(secrets).values(**values))

        await self._db.run(_WHAT, write, write=True)

    async def get(self, tenant: str, name: str) -> SecretRow | None:
        rows = await self._db.fetch(_WHAT, _GET, {"tenant": tenant, "name": name})
        return _row(rows[0]) if rows else None

    async def list(self, tenant: str) -> builtins.list[SecretRow]:
        rows = await self._db.fetch(_WHAT, _LIST, {"tenant": tenant})
        return sorted((_row(r) for r in rows), key=lambda r: r.name)

    async def delete(self, tenant: str, name: str) -> bool:
        def remove(conn: sa.Connection) -> bool:
            return conn.execute(sa.delete(secrets).where(*_where(tenant, name))).rowcount > 0

        return await self._db.run(_WHAT, remove, write=True)

    async def every(self) -> builtins.list[SecretRow]:
        def read(conn: sa.Connection) -> builtins.list[SecretRow]:
            rows = conn.execute(sa.select(*_COLUMNS)).all()
            return sorted((_row(r) for r in rows), key=lambda r: (r.tenant, r.name))

        return await self._db.read(_WHAT, read)

    async def swap_sealed(self, tenant: str, name: str, old: bytes, new: bytes) -> bool:
        def swap(conn: sa.Connection) -> bool:
            update = (
                sa.update(secrets)
                .where(*_where(tenant, name), secrets.c.sealed == old)
                .values(sealed=new)
            )
            return conn.execute(update).rowcount > 0

        return await self._db.run(_WHAT, swap, write=True)
