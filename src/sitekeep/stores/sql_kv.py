"""``sqlite:///path`` (the embedded default) and ``postgresql://`` — the session store as a
``kv`` table (SQLAlchemy Core; one code path for both dialects).

Expired rows read as absent and are purged on write. Blocking calls run in worker threads
(:class:`~sitekeep.stores.database.Database`). A conditional write is one ``UPDATE … WHERE
revision = ?`` (or one ``INSERT`` that the primary key refuses when another writer came
first), so it is atomic on both dialects.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from sitekeep.stores.base import Clock, Versioned, system_clock
from sitekeep.stores.database import Database
from sitekeep.stores.schema import kv

__all__ = ["SqlStore"]

_WHAT = "the session store"
_READ = sa.select(kv.c.value, kv.c.revision).where(
    kv.c.key == sa.bindparam("key"),
    sa.or_(kv.c.expires_at.is_(None), kv.c.expires_at > sa.bindparam("now")),
)
"""The hot read, built once (half its cost is building a statement each call)."""
# substr, not LIKE: SQLite's LIKE ignores ASCII case, and tenants differ by case.
_KEYS = sa.select(kv.c.key).where(
    sa.func.substr(kv.c.key, 1, sa.bindparam("length", type_=sa.Integer))
    == sa.bindparam("prefix", type_=sa.String),
    sa.or_(kv.c.expires_at.is_(None), kv.c.expires_at > sa.bindparam("now")),
)
_KEYS_IN_RANGE = _KEYS.where(
    kv.c.key >= sa.bindparam("prefix", type_=sa.String),
    kv.c.key < sa.bindparam("after", type_=sa.String),
)
"""``_KEYS`` over the primary key's index where the database orders keys by code point
(:attr:`Database.orders_by_code_point`): a tenant's list reads that tenant's rows, not the
whole table."""
_COUNT = _KEYS.with_only_columns(sa.func.count()).select_from(kv)
_COUNT_IN_RANGE = _KEYS_IN_RANGE.with_only_columns(sa.func.count()).select_from(kv)
_READ_MANY = sa.select(kv.c.key, kv.c.value, kv.c.revision).where(
    kv.c.key.in_(sa.bindparam("keys", expanding=True)),
    sa.or_(kv.c.expires_at.is_(None), kv.c.expires_at > sa.bindparam("now")),
)


class SqlStore:
    """The ``kv`` table of a SQL database; see ``SessionStore`` for the contract."""

    def __init__(self, db: Database, clock: Clock = system_clock) -> None:
        self._db = db
        self._clock = clock

    def _alive(self) -> sa.ColumnElement[bool]:
        return sa.or_(kv.c.expires_at.is_(None), kv.c.expires_at > self._clock())

    def _expiry(self, ttl: float | None) -> float | None:
        return None if ttl is None else self._clock() + ttl

    async def get(self, key: str) -> bytes | None:
        found = await self.read(key)
        return found.value if found else None

    async def read(self, key: str) -> Versioned | None:
        def read(conn: sa.Connection) -> Versioned | None:
            row = conn.execute(_READ, {"key": key, "now": self._clock()}).first()
            return Versioned(bytes(row.value), int(row.revision)) if row else None

        return await self._db.read(_WHAT, read)

    async def read_many(self, keys: Sequence[str]) -> list[Versioned | None]:
        wanted = list(dict.fromkeys(keys))

        def read(conn: sa.Connection) -> dict[str, Versioned]:
            rows = conn.execute(_READ_MANY, {"keys": wanted, "now": self._clock()})
            return {r.key: Versioned(bytes(r.value), int(r.revision)) for r in rows}

        found = await self._db.read(_WHAT, read) if wanted else {}
        return [found.get(key) for key in keys]

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        expires = self._expiry(ttl)

        def attempt(conn: sa.Connection) -> bool:
            try:
                with conn.begin():
                    conn.execute(sa.delete(kv).where(kv.c.expires_at <= self._clock()))
                    updated = conn.execute(
                        sa.update(kv)
                        .where(kv.c.key == key)
                        .values(value=value, expires_at=expires, revision=kv.c.revision + 1)
                    )
                    if updated.rowcount == 0:
                        conn.execute(
                            sa.insert(kv).values(
                                key=key, value=value, expires_at=expires, revision=1
                            )
                        )
            except IntegrityError:
                return False  # another writer inserted it first: update theirs
            return True

        def write(conn: sa.Connection) -> None:
            if not attempt(conn):
                attempt(conn)

        await self._db.run(_WHAT, write, write=False)

    async def write(
        self, key: str, value: bytes, *, ttl: float | None, revision: int
    ) -> int | None:
        expires = self._expiry(ttl)

        def write(conn: sa.Connection) -> int | None:
            try:
                with conn.begin():
                    if revision == 0:
                        conn.execute(sa.delete(kv).where(kv.c.key == key, ~self._alive()))
                        conn.execute(
                            sa.insert(kv).values(
                                key=key, value=value, expires_at=expires, revision=1
                            )
                        )
                        return 1
                    updated = conn.execute(
                        sa.update(kv)
                        .where(kv.c.key == key, kv.c.revision == revision, self._alive())
                        .values(value=value, expires_at=expires, revision=revision + 1)
                    )
                    return revision + 1 if updated.rowcount == 1 else None
            except IntegrityError:
                return None

        return await self._db.run(_WHAT, write, write=False)

    async def delete(self, *keys: str) -> int:
        def remove(conn: sa.Connection) -> int:
            # The count is the DELETE's own (RETURNING): a count read before it let two
            # concurrent deletes both count a key (SQLite reads outside the write's
            # transaction, PostgreSQL's READ COMMITTED reads before the row lock), so a
            # single-use ticket could be redeemed twice. Expired leftovers go too, uncounted.
            now = self._clock()
            gone = conn.execute(sa.delete(kv).where(kv.c.key.in_(keys)).returning(kv.c.expires_at))
            return sum(1 for (expires_at,) in gone if expires_at is None or expires_at > now)

        return await self._db.run(_WHAT, remove, write=True) if keys else 0

    async def expire(self, key: str, ttl: float, *, under: str | None = None) -> bool:
        alive = self._alive()
        moves = [kv.c.key == key]
        if under is not None:
            in_range, params = self._prefixed(under)
            prefixed = [sa.func.substr(kv.c.key, 1, len(under)) == under]
            if in_range:  # over the primary key's index, as keys() reads them
                prefixed += [kv.c.key >= under, kv.c.key < params["after"]]
            moves.append(sa.and_(*prefixed))

        def move(conn: sa.Connection) -> bool:
            expires_at = self._clock() + ttl
            found = conn.execute(
                sa.update(kv).where(moves[0], alive).values(expires_at=expires_at)
            ).rowcount
            for where in moves[1:]:  # one transaction, one commit: one write's cost
                conn.execute(sa.update(kv).where(where, alive).values(expires_at=expires_at))
            return found > 0

        return await self._db.run(_WHAT, move, write=True)

    def _prefixed(self, prefix: str) -> tuple[bool, dict[str, object]]:
        """Whether the keys under ``prefix`` are one index range here, and the parameters
        of ``_KEYS`` (or ``_KEYS_IN_RANGE``) for them."""
        params: dict[str, object] = {"prefix": prefix, "length": len(prefix), "now": self._clock()}
        after = _after(prefix) if self._db.orders_by_code_point else None
        if after is not None:
            params["after"] = after
        return after is not None, params

    async def keys(self, prefix: str) -> list[str]:
        in_range, params = self._prefixed(prefix)
        query = _KEYS_IN_RANGE if in_range else _KEYS

        def scan(conn: sa.Connection) -> list[str]:
            rows = conn.execute(query, params)
            return sorted(r[0] for r in rows)  # code-point order, whatever the collation

        # On the event loop (Database.read): over the range, a tenant's scan costs what
        # that tenant holds, as the records read next do. Without it every list read the
        # whole table there (100k sessions: /healthz's median 3 -> 331 ms while 4 clients
        # asked /metrics, whose whole-store scan Reaper.metrics_text now spaces out).
        return await self._db.read(_WHAT, scan)

    async def count(self, prefix: str) -> int:
        in_range, params = self._prefixed(prefix)
        query = _COUNT_IN_RANGE if in_range else _COUNT

        def count(conn: sa.Connection) -> int:
            return int(conn.execute(query, params).scalar_one())

        # In a worker thread, not Database.read: counting every session is a whole-range
        # scan (100k rows: tens of ms) that would stall the event loop on SQLite.
        return await self._db.run(_WHAT, count, write=False)

    async def aclose(self) -> None:
        await self._db.aclose()


def _after(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``, in code-point
    order (the prefix with its last character moved one up), or None when there is none
    (an empty prefix, or one ending in U+10FFFF)."""
    if not prefix or prefix[-1] == "\U0010ffff":
        return None
    up = ord(prefix[-1]) + 1
    return prefix[:-1] + chr(0xE000 if 0xD800 <= up <= 0xDFFF else up)
