"""Read-only checks of the stores, for ``sitekeep doctor`` (which changes nothing).

Each check answers ``(ok, detail)``: whether the store can be reached and read, and a line
a person can act on. A SQLite file is opened read-only and a missing one is not created; a
SQL database's schema revision is compared with the package's newest; Redis is pinged.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import sqlalchemy as sa

from sitekeep.errors import SitekeepError
from sitekeep.stores.database import Database
from sitekeep.stores.migrate import current_revision, head_revision
from sitekeep.stores.redis_store import connect
from sitekeep.stores.urls import StoreUrl, parse_store_url

__all__ = ["database_health", "session_store_health"]

Health = tuple[bool, str]


def database_health(url: str) -> Health:
    """Whether the SQL database at ``url`` can be read, and its schema revision."""
    try:
        parsed = parse_store_url(
            url, "SITEKEEP_DATABASE_URL", allowed=("sqlite", "postgresql", "memory")
        )
    except SitekeepError as exc:
        return False, exc.message
    return _sql_health(parsed)


async def session_store_health(url: str) -> Health:
    """Whether the session store at ``url`` can be reached and read."""
    try:
        parsed = parse_store_url(
            url, "SITEKEEP_SESSION_STORE", allowed=("memory", "sqlite", "postgresql", "redis")
        )
    except SitekeepError as exc:
        return False, exc.message
    if parsed.scheme == "redis":
        return await _redis_health(parsed)
    return _sql_health(parsed)


def _sql_health(url: StoreUrl) -> Health:
    if url.scheme == "memory":
        return True, "memory:// (kept in the process only: gone when it stops)"
    if url.path is not None:
        return _sqlite_health(url.path)
    db = Database(url)
    try:
        return _revision_health(db, url.url.split("@")[-1])
    finally:
        db.dispose()


def _sqlite_health(path: Path) -> Health:
    if not path.exists():
        return True, f"{path} (created at first start)"
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        return False, f"{path} cannot be read: {exc}"
    read_only = StoreUrl("sqlite", f"sqlite:///file:{path}?mode=ro&uri=true", path=path)
    db = Database(read_only, sa.create_engine(read_only.url))
    try:
        return _revision_health(db, str(path))
    finally:
        db.dispose()


def _revision_health(db: Database, where: str) -> Health:
    """Reachable, and how its schema compares with this sitekeep's; ``where`` names it
    without credentials."""
    try:
        current = current_revision(db)
    except SitekeepError as exc:
        return False, f"{where}: {exc.message}"
    head = head_revision()
    if current == head:
        return True, f"{where} (schema {head})"
    if current is None:
        return True, f"{where} (schema made before migrations: upgraded at next start)"
    return True, f"{where} (schema {current}, this sitekeep has {head}: sitekeep db upgrade)"


async def _redis_health(url: StoreUrl) -> Health:
    client = connect(url.url)
    where = url.url.split("@")[-1].split("?")[0]
    try:
        await client.ping()
    except Exception as exc:  # any failure is the answer: it cannot be reached
        return False, f"{where} cannot be reached: {type(exc).__name__}"
    finally:
        await client.aclose()
    return True, f"{where} (keys under {url.prefix!r})"
