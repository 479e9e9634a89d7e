"""``sqlite:///path`` — the embedded default session store, durable across restarts.

SQLAlchemy Core on SQLite in WAL mode (several processes may share the file: the server
and the CLI); blocking calls run in worker threads. Expired rows read as absent and are
purged on write.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from sitekeep.errors import InvalidInput, StoreUnavailable
from sitekeep.stores.base import Clock, system_clock

__all__ = ["SqliteStore", "guarded", "sqlite_engine", "sqlite_url"]

T = TypeVar("T")

_metadata = sa.MetaData()
_kv = sa.Table(
    "kv",
    _metadata,
    sa.Column("key", sa.String, primary_key=True),
    sa.Column("value", sa.LargeBinary, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=True, index=True),
)


def sqlite_engine(url: str) -> sa.Engine:
    """An engine for a SQLite URL, its folder created, in WAL mode with a busy timeout."""
    path = url.removeprefix("sqlite:///")
    if path and path != ":memory:":
        Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # databases of one owner
    engine = sa.create_engine(url, connect_args={"timeout": 30})

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.close()

    return engine


def sqlite_url(url: str, setting: str) -> str:
    """``url`` when it is ``sqlite:///path``.

    Raises:
        InvalidInput: naming ``setting`` (the variable the URL came from) otherwise.
    """
    if not url.startswith("sqlite:///"):
        raise InvalidInput(f"{setting} must be sqlite:///path", field=setting)
    return url


def guarded(what: str, fn: Callable[[], T]) -> T:
    """``fn()``, a database failure turned into ``StoreUnavailable`` naming ``what`` (and
    only the exception's type: a statement's parameters may hold values).

    Raises:
        StoreUnavailable: SQLAlchemy failed.
    """
    try:
        return fn()
    except SQLAlchemyError as exc:
        raise StoreUnavailable(f"{what} failed: {type(exc).__name__}") from exc


class SqliteStore:
    """A ``kv`` table in one SQLite file; see ``SessionStore`` for the contract."""

    def __init__(self, url: str, clock: Clock = system_clock) -> None:
        self._engine = sqlite_engine(url)
        self._clock = clock
        self._run(lambda: _metadata.create_all(self._engine))

    def _run(self, fn: Callable[[], T]) -> T:
        return guarded("the SQLite session store", fn)

    async def _call(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(self._run, fn)

    def _alive(self) -> sa.ColumnElement[bool]:
        return sa.or_(_kv.c.expires_at.is_(None), _kv.c.expires_at > self._clock())

    async def get(self, key: str) -> bytes | None:
        def read() -> bytes | None:
            with self._engine.connect() as conn:
                row = conn.execute(
                    sa.select(_kv.c.value).where(_kv.c.key == key, self._alive())
                ).first()
            return bytes(row[0]) if row else None

        return await self._call(read)

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        now = self._clock()
        expires = None if ttl is None else now + ttl

        def write() -> None:
            with self._engine.begin() as conn:
                conn.execute(sa.delete(_kv).where(_kv.c.expires_at <= now))
                conn.execute(sa.delete(_kv).where(_kv.c.key == key))
                conn.execute(sa.insert(_kv).values(key=key, value=value, expires_at=expires))

        await self._call(write)

    async def delete(self, *keys: str) -> int:
        def remove() -> int:
            with self._engine.begin() as conn:
                live = conn.execute(
                    sa.select(sa.func.count()).where(_kv.c.key.in_(keys), self._alive())
                ).scalar_one()
                conn.execute(sa.delete(_kv).where(_kv.c.key.in_(keys)))
            return int(live)

        return await self._call(remove) if keys else 0

    async def expire(self, key: str, ttl: float) -> bool:
        def move() -> bool:
            with self._engine.begin() as conn:
                result = conn.execute(
                    sa.update(_kv)
                    .where(_kv.c.key == key, self._alive())
                    .values(expires_at=self._clock() + ttl)
                )
            return result.rowcount > 0

        return await self._call(move)

    async def keys(self, prefix: str) -> list[str]:
        # substr, not LIKE: SQLite's LIKE ignores ASCII case, and tenants differ by case.
        head = sa.func.substr(_kv.c.key, 1, len(prefix))

        def scan() -> list[str]:
            with self._engine.connect() as conn:
                rows = conn.execute(
                    sa.select(_kv.c.key).where(head == prefix, self._alive()).order_by(_kv.c.key)
                )
                return [r[0] for r in rows]

        return await self._call(scan)

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._engine.dispose)
