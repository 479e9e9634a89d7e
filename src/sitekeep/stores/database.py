"""The SQL database: one engine factory by URL, one guard, one worker-thread seam (SPEC §13).

SQLAlchemy Core over SQLite (the embedded default: WAL, so the server and the CLI share the
file), PostgreSQL through psycopg 3, or ``memory://`` (an in-memory SQLite database shared
by every thread of the process). Every store built on it (``kv``, ``tokens``, ``secrets``,
``runs``) runs the same statements on every dialect; the schema comes from the Alembic
migrations (:mod:`sitekeep.stores.migrate`), never from ``create_all``.

A failure of the database becomes :class:`~sitekeep.errors.StoreUnavailable` naming what
failed and only the exception's type (a statement's parameters may hold values). A stopped
PostgreSQL fails fast (``connect_timeout``) and a restarted one is used again without a
restart of sitekeep (``pool_pre_ping`` replaces the dead pooled connections).

Where the work runs (``bench/api_load.py`` measures it): a read on SQLite runs on the event
loop (:meth:`Database.read`, a connection that never waits for a lock); everything else runs
in one worker-thread hop per call (:meth:`Database.run`); a read on PostgreSQL runs on the
event loop through psycopg's asyncio connection.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import SingletonThreadPool, StaticPool

from sitekeep.errors import StoreUnavailable
from sitekeep.stores.urls import StoreUrl

__all__ = ["Database", "create_engine", "guarded"]

T = TypeVar("T")

CONNECT_TIMEOUT = 5
"""Seconds to wait for a PostgreSQL connection before the call is a 503."""


SQLITE_POOL = 40
"""SQLite connections kept open per database (one per worker thread that may read)."""

POSTGRES_POOL = 40
"""PostgreSQL connections kept open per database: one per worker thread (anyio's default
limit is 40), so a burst of calls never waits for a connection another thread holds."""

ASYNC_POOL = 20
"""PostgreSQL connections kept open per database for reads on the event loop."""


def create_engine(url: StoreUrl) -> sa.Engine:
    """An engine for a SQL store URL (``memory://``, ``sqlite:///path``, ``postgresql://``).

    SQLite gets its folder (mode 0700), ``SQLITE_POOL`` kept connections, WAL,
    ``synchronous=FULL`` and a 30 s busy timeout; PostgreSQL a pool of ``POSTGRES_POOL``
    pinged on checkout, and a connect timeout.
    """
    if url.scheme == "memory":
        return sa.create_engine(
            "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
    if url.scheme == "sqlite":
        assert url.path is not None
        url.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # one owner's data
        # The pool keeps as many connections as there are worker threads to use them
        # (anyio's default limit is 40): past QueuePool's default 5, every overflow
        # checkout opened a connection and ran the pragmas again — a fifth of the CPU of
        # a read under 50 concurrent clients (bench/api_load.py).
        engine = sa.create_engine(
            url.url, connect_args={"timeout": 30}, pool_size=SQLITE_POOL, max_overflow=10
        )
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.scheme == "postgresql":
        return sa.create_engine(
            url.url,
            pool_size=POSTGRES_POOL,
            max_overflow=0,  # with the event-loop pool: 60 per replica at most
            pool_pre_ping=True,
            connect_args={"connect_timeout": CONNECT_TIMEOUT},
        )
    raise ValueError(f"{url.scheme} is not a SQL store")


def _async_engine(url: StoreUrl) -> AsyncEngine:
    """PostgreSQL reads on the event loop: psycopg's asyncio connection under the same
    SQLAlchemy statements (``AsyncConnection.run_sync``), no worker thread. Autocommit: a
    read is one statement, and a transaction around it was two more round trips (``BEGIN``
    and the ``ROLLBACK`` of the pool's reset)."""
    return create_async_engine(
        url.url.replace("postgresql+psycopg://", "postgresql+psycopg_async://", 1),
        isolation_level="AUTOCOMMIT",
        # Kept open, not opened per burst: past the pool, every overflow checkout was a
        # new connection. A read waits (without a thread) for one when all are out.
        pool_size=ASYNC_POOL,
        max_overflow=0,
        pool_pre_ping=True,
        connect_args={"connect_timeout": CONNECT_TIMEOUT},
    )


async def guarded_async(what: str, fn: Callable[[], Awaitable[T]]) -> T:
    """:func:`guarded` for a coroutine."""
    try:
        return await fn()
    except SQLAlchemyError as exc:
        raise StoreUnavailable(f"{what} failed: {type(exc).__name__}") from exc


def _reader_engine(url: StoreUrl) -> sa.Engine:
    """SQLite connections for reads on the event loop: one per thread, read-only, and a
    busy timeout of 0 — SQLite answers "busy" at once rather than wait for a lock."""
    engine = sa.create_engine(
        url.url,
        poolclass=SingletonThreadPool,
        connect_args={"timeout": 0, "check_same_thread": False},
    )
    sa.event.listen(engine, "connect", _read_only)
    return engine


def _read_only(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA query_only=1")
    cursor.close()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.close()


def guarded(what: str, fn: Callable[[], T]) -> T:
    """``fn()``, a database failure turned into ``StoreUnavailable`` naming ``what`` (and
    only the exception's type: a statement's parameters may hold values).

    Raises:
        StoreUnavailable: SQLAlchemy (or the driver under it) failed.
    """
    try:
        return fn()
    except SQLAlchemyError as exc:
        raise StoreUnavailable(f"{what} failed: {type(exc).__name__}") from exc


class Database:
    """One SQL database: its URL, its engine, and a guarded way to run blocking work.

    Attributes:
        url: the parsed URL. engine: the SQLAlchemy engine.
    """

    def __init__(self, url: StoreUrl, engine: sa.Engine | None = None) -> None:
        self.url = url
        self.engine = engine or create_engine(url)
        own = engine is None
        self._reader = _reader_engine(url) if own and url.scheme == "sqlite" else None
        self._async = _async_engine(url) if own and url.scheme == "postgresql" else None
        self._async_connections: weakref.WeakSet[Any] = weakref.WeakSet()
        if self._async is not None:
            made = self._async_connections

            def connected(dbapi_conn: Any, _record: Any) -> None:
                made.add(dbapi_conn.driver_connection)

            sa.event.listen(self._async.sync_engine, "connect", connected)

    def run_sync(self, what: str, fn: Callable[[sa.Connection], T], *, write: bool) -> T:
        """``fn(connection)`` in one transaction (committed when ``write``), guarded.

        Raises:
            StoreUnavailable: naming ``what``.
        """

        def call() -> T:
            if write:
                with self.engine.begin() as conn:
                    return fn(conn)
            with self.engine.connect() as conn:
                return fn(conn)

        return guarded(what, call)

    async def run(self, what: str, fn: Callable[[sa.Connection], T], *, write: bool) -> T:
        """:meth:`run_sync` in a worker thread."""
        return await anyio.to_thread.run_sync(lambda: self.run_sync(what, fn, write=write))

    async def read(self, what: str, fn: Callable[[sa.Connection], T]) -> T:
        """``fn(connection)`` that only reads, guarded: on SQLite right here on the event
        loop, elsewhere as :meth:`run` does.

        On SQLite in WAL mode a reader takes no lock a writer holds, so the read costs the
        time of its statements, never a wait: its connection's busy timeout is 0 and it is
        read-only (``PRAGMA query_only``). When SQLite does answer busy (a checkpoint
        resetting the WAL, a recovery) or fails otherwise, the read runs again in a worker
        thread, where it may wait. Saves the thread hop (a fifth of a millisecond and a
        GIL hand-over per call) on every hot read.

        Raises:
            StoreUnavailable: naming ``what``.
        """
        if self._reader is not None:
            try:
                with self._reader.connect() as conn:
                    return fn(conn)
            except OperationalError:
                pass  # busy (or worse): the worker thread may wait, and reports a failure
        if self._async is not None:
            engine = self._async

            async def call() -> T:
                async with engine.connect() as conn:
                    return await conn.run_sync(fn)

            return await guarded_async(what, call)
        return await self.run(what, fn, write=False)

    def dispose(self) -> None:
        """Close the pooled connections."""
        self.engine.dispose()
        if self._reader is not None:
            self._reader.dispose()
        if self._async is not None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(self._async.dispose())  # no loop in this thread: close them in one
            else:  # inside a loop, from sync code: end them without awaiting (PQfinish)
                self._async.sync_engine.dispose(close=False)
                for conn in list(self._async_connections):
                    conn.pgconn.finish()

    async def aclose(self) -> None:
        """:meth:`dispose` from async code: the event-loop connections closed too."""
        if self._async is not None:
            await self._async.dispose()
        self.dispose()
