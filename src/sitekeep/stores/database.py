"""The SQL database: one engine factory by URL, one guard, one worker-thread seam (SPEC §13).

SQLAlchemy Core over SQLite (the embedded default: WAL, so the server and the CLI share the
file), PostgreSQL through psycopg 3, or ``memory://`` (an in-memory SQLite database shared
by every thread of the process). Every store built on it (``kv``, ``tokens``, ``secrets``,
``runs``) runs the same statements on every dialect; the schema comes from the Alembic
migrations (:mod:`sitekeep.stores.migrate`), never from ``create_all``.

A failure of the database becomes :class:`~sitekeep.errors.StoreUnavailable` naming what
failed and only the exception's type (a statement's parameters may hold values). A stopped
PostgreSQL fails fast (``connect_timeout``) and a restarted one is used again without a
restart of sitekeep: the worker-thread pool pings a connection at every checkout
(``pool_pre_ping``); the event-loop reads do not (a ping is a round trip, as dear as the
read), and a read that finds its connection dead runs once more on a new one — SQLAlchemy
marks every connection made before the failure stale at the same time ("optimistic"
disconnect handling; a read changes nothing, so running it twice is safe).

Where the work runs (``bench/api_load.py`` measures it): a read on SQLite runs on the event
loop (:meth:`Database.read`, a connection that never waits for a lock); everything else runs
in one worker-thread hop per call (:meth:`Database.run`); a read on PostgreSQL runs on the
event loop through psycopg's asyncio connection.

The hot reads (:meth:`Database.fetch`: a token's row, a tenant's secrets, the run ledger's
lists) take one more step on PostgreSQL: their statement, built once at import, is
compiled once by SQLAlchemy's PostgreSQL dialect and run by psycopg itself on the pooled
asyncio connection, without SQLAlchemy's execution layer (its greenlet hop, execution
context and result wrapping cost as much as psycopg's own round trip: 0.23 against
0.13 ms of CPU per read under 50 concurrent callers). psycopg prepares a statement on
its fifth run on a connection, so the server parses it once per connection.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import psycopg
import sqlalchemy as sa
from psycopg.rows import namedtuple_row
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import SingletonThreadPool, StaticPool

from sitekeep.errors import StoreUnavailable
from sitekeep.stores.urls import StoreUrl

log = logging.getLogger(__name__)

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


_SQLITE_SIDES = ("", "-wal", "-shm", "-journal")
"""The database file and the files SQLite keeps beside it, which hold its pages too."""


def _owner_only(path: Path) -> None:
    """Take group and other permissions off a SQLite database made before sitekeep made
    it 0600 (an older release, or a file made by hand), and off its -wal, -shm and
    -journal files: they hold tokens' hashes and sealed snapshots. Files another user
    owns, symlinks, files with another name (a hard link planted beside the database
    would name some other file of this user) and anything but a regular file are left
    as they are, and a file that cannot be changed (a read-only mount) only warns."""
    for side in _SQLITE_SIDES:
        target = path.with_name(path.name + side)
        try:  # never through a symlink, never blocking on a FIFO: only a regular file
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:  # missing, a symlink (ELOOP), not ours to open
            continue
        try:
            st = os.fstat(fd)
            mine = stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
            if mine and st.st_mode & 0o077 and st.st_nlink == 1:  # a hard link: another file
                os.fchmod(fd, st.st_mode & 0o700)
                log.info("%s was readable by others: now its owner's only", target.name)
            elif mine and st.st_mode & 0o077:
                log.warning("%s has other names (hard links): its mode is left", target.name)
        except OSError as exc:  # a read-only mount, an immutable file: as before, it opens
            log.warning("%s could not be made owner-only: %s", target.name, exc.strerror)
        finally:
            os.close(fd)


def create_engine(url: StoreUrl) -> sa.Engine:
    """An engine for a SQL store URL (``memory://``, ``sqlite:///path``, ``postgresql://``).

    SQLite gets its folder (mode 0700) and file (0600), ``SQLITE_POOL`` kept connections, WAL,
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
        # Made 0600 before SQLite opens it, whatever the umask: SQLite gives its -wal,
        # -shm and -journal files the database file's mode.
        try:
            os.close(os.open(url.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            _owner_only(url.path)
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
    and the ``ROLLBACK`` of the pool's reset). No ping at checkout and no reset at
    return: :meth:`Database.read` runs a read again when its connection was found dead."""
    return create_async_engine(
        url.url.replace("postgresql+psycopg://", "postgresql+psycopg_async://", 1),
        isolation_level="AUTOCOMMIT",
        # Kept open, not opened per burst: past the pool, every overflow checkout was a
        # new connection. A read waits (without a thread) for one when all are out.
        pool_size=ASYNC_POOL,
        max_overflow=0,
        pool_reset_on_return=None,  # autocommit: no transaction is ever left open
        connect_args={"connect_timeout": CONNECT_TIMEOUT},
    )


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


@contextmanager
def _guard(what: str) -> Iterator[None]:
    try:
        yield
    except SQLAlchemyError as exc:
        raise StoreUnavailable(f"{what} failed: {type(exc).__name__}") from exc


def guarded(what: str, fn: Callable[[], T]) -> T:
    """``fn()``, a database failure turned into ``StoreUnavailable`` naming ``what`` (and
    only the exception's type: a statement's parameters may hold values).

    Raises:
        StoreUnavailable: SQLAlchemy (or the driver under it) failed.
    """
    with _guard(what):
        return fn()


def _run_apart(coro: Coroutine[Any, Any, None]) -> None:
    """Run ``coro`` to its end in a thread of its own (its own event loop): sync code may
    call this whether or not an event loop runs in its thread."""
    failed: list[BaseException] = []

    def main() -> None:
        try:
            asyncio.run(coro)
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=main, name="sitekeep-dispose")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


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
        self._compiled: dict[sa.Select[Any], sa.Compiled] = {}

    @property
    def orders_by_code_point(self) -> bool:
        """Whether string comparisons order by code point (SQLite's BINARY collation), so
        every key starting with a prefix lies in one range of the key's index. Not on
        PostgreSQL, whose column collation may be a language's."""
        return self.engine.dialect.name == "sqlite"

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
            with _guard(what):
                try:
                    async with self._async.connect() as conn:
                        return await conn.run_sync(fn)
                except DBAPIError as exc:
                    if not exc.connection_invalidated:
                        raise
                # The connection was dead (PostgreSQL restarted, or ended it): SQLAlchemy
                # dropped it and marked every older one stale; once more, on a new one.
                async with self._async.connect() as conn:
                    return await conn.run_sync(fn)
        return await self.run(what, fn, write=False)

    async def fetch(
        self, what: str, query: sa.Select[Any], params: Mapping[str, Any]
    ) -> Sequence[Any]:
        """The rows of ``query`` (columns by attribute: ``row.tenant``), a read guarded as
        :meth:`read` guards.

        ``query`` is built once (a module constant) and takes its values only through
        ``sa.bindparam`` names, given in ``params``: on PostgreSQL it is compiled once per
        database and run by psycopg directly (module docstring). A psycopg failure there
        (a dead connection, anything else) runs the read once more through SQLAlchemy,
        which tells a dead connection from other failures, retires the stale ones and
        turns the rest into ``StoreUnavailable``.

        Raises:
            StoreUnavailable: naming ``what``.
            sqlalchemy.exc.ArgumentError: ``params`` lacks one of ``query``'s names.
        """
        if self._async is not None:
            compiled = self._compiled.get(query)
            if compiled is None:
                compiled = self._compiled[query] = query.compile(dialect=self._async.dialect)
            values = compiled.construct_params(params)
            with _guard(what):
                async with self._async.connect() as conn:
                    raw = (await conn.get_raw_connection()).driver_connection
                    assert isinstance(raw, psycopg.AsyncConnection)
                    try:
                        async with raw.cursor(row_factory=namedtuple_row) as cursor:
                            await cursor.execute(compiled.string, values)
                            rows: list[Any] = await cursor.fetchall()
                            return rows
                    except psycopg.Error:
                        if raw.broken:
                            await conn.invalidate()
        return await self.read(what, lambda conn: conn.execute(query, params).all())

    def _dispose_sync(self) -> None:
        self.engine.dispose()
        if self._reader is not None:
            self._reader.dispose()

    def dispose(self) -> None:
        """Close the pooled connections (from sync code; async code awaits :meth:`aclose`).

        The event-loop connections are closed by their engine's own ``dispose``, run in a
        thread of its own: this thread may be running an event loop it cannot wait on.
        """
        self._dispose_sync()
        if self._async is not None:
            _run_apart(self._async.dispose())

    async def aclose(self) -> None:
        """Close the pooled connections, from async code."""
        if self._async is not None:
            await self._async.dispose()
        self._dispose_sync()
