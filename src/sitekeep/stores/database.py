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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool

from sitekeep.errors import StoreUnavailable
from sitekeep.stores.urls import StoreUrl

__all__ = ["Database", "create_engine", "guarded"]

T = TypeVar("T")

CONNECT_TIMEOUT = 5
"""Seconds to wait for a PostgreSQL connection before the call is a 503."""


SQLITE_POOL = 40
"""SQLite connections kept open per database (one per worker thread that may read)."""


def create_engine(url: StoreUrl) -> sa.Engine:
    """An engine for a SQL store URL (``memory://``, ``sqlite:///path``, ``postgresql://``).

    SQLite gets its folder (mode 0700), ``SQLITE_POOL`` kept connections, WAL,
    ``synchronous=FULL`` and a 30 s busy timeout; PostgreSQL a pre-pinged pool and a
    connect timeout.
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
            pool_pre_ping=True,
            pool_size=10,
            max_overflow=20,
            connect_args={"connect_timeout": CONNECT_TIMEOUT},
        )
    raise ValueError(f"{url.scheme} is not a SQL store")


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

    def dispose(self) -> None:
        """Close the pooled connections."""
        self.engine.dispose()
