"""Stores: the ports (``base``), one module per backend, chosen by URL (``urls``).

=====================  ==============================================================
session store          ``memory://`` · ``sqlite:///path`` · ``postgresql://`` · ``redis://``
session locks          go with the session store (:mod:`sitekeep.stores.locks`)
database               ``sqlite:///path`` · ``postgresql://`` · ``memory://``:
                       tokens, secrets, the run ledger (and later profiles)
=====================  ==============================================================

Opening a SQL store brings its schema to the newest migration first (``migrate``).

The backends are imported by the functions that open them: importing one module of this
package (``redis_store``, which the Redis journal shares) does not load SQLAlchemy,
Alembic and psycopg with it (issue #25: ~50 MB resident in a process that only reads a
journal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitekeep.stores.base import Clock, SessionLocks, SessionStore, system_clock
from sitekeep.stores.urls import StoreUrl, parse_store_url

if TYPE_CHECKING:
    from sitekeep.stores.database import Database

__all__ = [
    "SessionLocks",
    "SessionStore",
    "open_database",
    "open_session_store",
    "open_sessions",
    "upgrade_stores",
]

SESSION_STORE = "SITEKEEP_SESSION_STORE"
DATABASE = "SITEKEEP_DATABASE_URL"


def open_database(url: str, *, migrate: bool = True) -> Database:
    """The SQL database at ``url`` (tokens, secrets, runs), upgraded to the newest schema
    unless ``migrate`` is false.

    Raises:
        InvalidInput: a URL that is not SQL (field ``SITEKEEP_DATABASE_URL``).
        StoreUnavailable: the database cannot be reached or upgraded.
    """
    from sitekeep.stores.database import Database
    from sitekeep.stores.migrate import upgrade

    db = Database(parse_store_url(url, DATABASE, allowed=("sqlite", "postgresql", "memory")))
    if migrate:
        try:
            upgrade(db)
        except BaseException:
            db.dispose()
            raise
    return db


def upgrade_stores(database_url: str, session_url: str) -> list[tuple[str, str, str]]:
    """``sitekeep db upgrade``: the database, and the session store when it is SQL, brought
    to the newest schema.

    Returns:
        ``(name, revision before, revision now)`` of each upgraded store.

    Raises:
        InvalidInput: a URL naming no known backend. StoreUnavailable: a failed upgrade.
    """
    from sitekeep.stores.database import Database
    from sitekeep.stores.migrate import head_revision, upgrade

    done = []
    targets = [("database", database_url, DATABASE)]
    if _session_url(session_url).is_sql and session_url != database_url:
        targets.append(("session store", session_url, SESSION_STORE))
    for name, url, setting in targets:
        parsed = parse_store_url(url, setting, allowed=("sqlite", "postgresql", "memory"))
        db = Database(parsed)
        try:
            done.append((name, upgrade(db), head_revision()))
        finally:
            db.dispose()
    return done


def _session_url(url: str) -> StoreUrl:
    return parse_store_url(url, SESSION_STORE, allowed=("memory", "sqlite", "postgresql", "redis"))


def open_session_store(url: str, clock: Clock = system_clock) -> SessionStore:
    """The session store ``url`` names (see the module docstring).

    Raises:
        InvalidInput: an unknown scheme (field ``SITEKEEP_SESSION_STORE``).
        StoreUnavailable: a SQL store that cannot be reached or upgraded.
    """
    return open_sessions(url, clock)[0]


def open_sessions(
    url: str, clock: Clock = system_clock, *, lock_ttl: float = 30.0
) -> tuple[SessionStore, SessionLocks]:
    """The session store ``url`` names and the locks that go with it.

    Args:
        lock_ttl: seconds a Redis lease lives after its last renewal (a dead holder's
            lock is free that long after it died).

    Raises:
        InvalidInput: an unknown scheme (field ``SITEKEEP_SESSION_STORE``).
        StoreUnavailable: a SQL store that cannot be reached or upgraded.
    """
    parsed = _session_url(url)
    if parsed.scheme == "memory":
        from sitekeep.stores.locks import ProcessLocks
        from sitekeep.stores.memory import MemoryStore

        return MemoryStore(clock), ProcessLocks()
    if parsed.scheme == "redis":
        from sitekeep.stores.locks import RedisLocks
        from sitekeep.stores.redis_store import RedisStore, connect

        client = connect(parsed.url)
        return RedisStore(client, parsed.prefix, clock), RedisLocks(client, parsed.prefix, lock_ttl)
    from sitekeep.stores.database import Database
    from sitekeep.stores.locks import FileLocks, PostgresLocks
    from sitekeep.stores.migrate import upgrade
    from sitekeep.stores.sql_kv import SqlStore

    db = Database(parsed)
    try:
        upgrade(db)
    except BaseException:
        db.dispose()
        raise
    if parsed.scheme == "postgresql":
        return SqlStore(db, clock), PostgresLocks(db)
    assert parsed.path is not None
    return SqlStore(db, clock), FileLocks(parsed.path.parent / "locks")
