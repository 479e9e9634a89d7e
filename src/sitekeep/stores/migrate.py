"""Schema migrations: Alembic, shipped inside the package (``sitekeep/stores/migrations``).

:func:`upgrade` brings a database to the newest revision; ``sitekeep db upgrade`` calls it,
and so does every start of sitekeep. Two replicas starting together are safe: the one
that finds work to do takes a lock first — a PostgreSQL advisory lock held for the
upgrade, or a lock file beside a SQLite file — and the other, once it gets the lock, finds
the database at head and does nothing. A database already at head costs one read.

A data dir from before the migrations (tables made by ``create_all``, no
``alembic_version``) is upgraded like any other: the baseline revision adopts the tables it
finds (``versions/0001_baseline.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from filelock import FileLock

from sitekeep.stores.database import Database, guarded

__all__ = ["current_revision", "head_revision", "upgrade"]

_ADVISORY_KEY = 0x5174_6B65_6570  # "sitekeep": one key for every sitekeep migration


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", "sitekeep.stores:migrations")
    return config


def head_revision() -> str:
    """The newest revision the package ships."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(db: Database) -> str | None:
    """The database's revision, None when it has none (new, or made before migrations).
    Reads only.

    Raises:
        StoreUnavailable: the database cannot be read.
    """

    def read() -> str | None:
        with db.engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    return guarded("reading the schema revision", read)


def upgrade(db: Database) -> str:
    """Bring the database to the newest revision; the revision it was at before.

    Raises:
        StoreUnavailable: the database failed (nothing of the failed revision stays on
            PostgreSQL, whose DDL is transactional).
    """
    before = current_revision(db)
    head = head_revision()
    if before == head:
        return head
    with _exclusive(db):

        def run() -> None:
            with db.engine.connect() as conn:
                config = _config()
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
                conn.commit()

        guarded("the schema upgrade", run)
    return before or "none"


@contextlib.contextmanager
def _exclusive(db: Database) -> Iterator[None]:
    """Only one process upgrades a database at a time."""
    if db.url.scheme == "postgresql":
        with guarded("locking the schema", db.engine.connect) as conn:
            guarded("locking the schema", lambda: _advisory(conn, "pg_advisory_lock"))
            try:
                yield
            finally:
                with contextlib.suppress(Exception):
                    _advisory(conn, "pg_advisory_unlock")
    elif db.url.path is not None:
        with FileLock(str(_lock_file(db.url.path)), mode=0o600):
            yield
    else:
        yield  # memory://: no other process can see it


def _advisory(conn: sa.Connection, function: str) -> None:
    conn.execute(sa.select(getattr(sa.func, function)(_ADVISORY_KEY)))
    conn.commit()


def _lock_file(database: Path) -> Path:
    return database.with_name(database.name + ".migrate.lock")
