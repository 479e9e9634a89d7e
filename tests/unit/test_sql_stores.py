"""Store URLs are read in one place, and a database that fails is ``StoreUnavailable``
naming the store, never its content or the URL's password."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sitekeep.errors import InvalidInput, StoreUnavailable
from sitekeep.stores import open_database, open_session_store
from sitekeep.stores.database import _owner_only
from sitekeep.stores.urls import parse_store_url

ALL = ("memory", "sqlite", "postgresql", "redis")


@pytest.mark.parametrize(
    ("url", "scheme", "client_url"),
    [
        ("memory://", "memory", "memory://"),
        ("sqlite:////var/x/s.db", "sqlite", "sqlite:////var/x/s.db"),
        ("sqlite:///rel/s.db", "sqlite", "sqlite:///rel/s.db"),
        ("postgresql://u@h/db", "postgresql", "postgresql+psycopg://u@h/db"),
        ("postgres://u@h:5/db", "postgresql", "postgresql+psycopg://u@h:5/db"),
        ("postgresql+psycopg://u@h/db", "postgresql", "postgresql+psycopg://u@h/db"),
        ("redis://h:6379/0", "redis", "redis://h:6379/0"),
        (
            "rediss://h:6379/1?prefix=a:&ssl_cert_reqs=none",
            "redis",
            "rediss://h:6379/1?ssl_cert_reqs=none",
        ),
    ],
)
def test_every_spelling_of_a_store_url_parses_to_its_backend(
    url: str, scheme: str, client_url: str
) -> None:
    parsed = parse_store_url(url, "S", allowed=ALL)
    assert (parsed.scheme, parsed.url) == (scheme, client_url)


def test_a_redis_prefix_defaults_and_can_be_named() -> None:
    assert parse_store_url("redis://h/0", "S", allowed=ALL).prefix == "sitekeep:"
    assert parse_store_url("redis://h/0?prefix=run-7:", "S", allowed=ALL).prefix == "run-7:"


@pytest.mark.parametrize(
    "url",
    [
        "mysql://h/db",
        "",
        "/tmp/s.db",
        "sqlite://",
        "sqlite:///",
        "sqlite:///x.db?mode=ro",
        "redis://h/0?prefix=",
        "postgresql:/nope",
    ],
)
def test_a_bad_store_url_is_invalid_input_naming_the_setting(url: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_store_url(url, "SITEKEEP_X", allowed=ALL)
    assert caught.value.field == "SITEKEEP_X"


def test_a_bad_store_url_is_never_echoed_it_may_hold_a_password() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_store_url("mysql://admin:dummy-secret-pw@h/db", "SITEKEEP_X", allowed=ALL)
    assert "dummy-secret-pw" not in caught.value.message


def test_a_scheme_the_store_has_no_backend_for_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        open_database("redis://127.0.0.1:6379/0")
    assert caught.value.field == "SITEKEEP_DATABASE_URL"
    assert "postgresql://" in caught.value.message


@pytest.mark.parametrize(
    ("opener", "what"),
    [(open_database, "the schema"), (open_session_store, "the schema")],
)
def test_a_database_that_fails_is_unavailable_by_name_without_its_content(
    tmp_path: Path, opener: object, what: str
) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"dummy-not-a-database " * 50)
    with pytest.raises(StoreUnavailable) as caught:
        opener(f"sqlite:///{broken}")  # type: ignore[operator]
    assert what in caught.value.message and "failed: " in caught.value.message
    assert "dummy" not in caught.value.message


def test_an_unreachable_postgresql_is_unavailable_without_its_password() -> None:
    with pytest.raises(StoreUnavailable) as caught:
        open_database("postgresql://someone:dummy-pw@127.0.0.1:1/db")
    assert "dummy-pw" not in caught.value.message


def test_a_sqlite_database_and_its_wal_are_readable_by_their_owner_only(
    tmp_path: Path,
) -> None:
    """Tokens' hashes and sealed secrets: 0600 whatever the umask (SQLite makes its -wal
    and -shm files with the database file's mode)."""

    path = tmp_path / "data" / "sitekeep.db"
    old = os.umask(0o022)
    try:
        db = open_database(f"sqlite:///{path}")
        try:
            made = sorted(p.name for p in path.parent.iterdir())
            modes = {p.name: oct(p.stat().st_mode & 0o777) for p in path.parent.iterdir()}
        finally:
            db.dispose()
    finally:
        os.umask(old)
    assert "sitekeep.db-wal" in made
    assert set(modes.values()) == {"0o600"}, modes


def test_a_sqlite_database_an_older_release_left_readable_is_made_owner_only(
    tmp_path: Path,
) -> None:
    """Before the files were made 0600, a umask of 022 left them 0644: opening such a
    database takes group and other permissions off it and the files beside it."""
    path = tmp_path / "data" / "sitekeep.db"
    old = os.umask(0o022)
    try:
        db = open_database(f"sqlite:///{path}")
        db.dispose()
        for made in path.parent.iterdir():  # as an older release left them
            made.chmod(0o644)
        (path.parent / "sitekeep.db-journal").write_bytes(b"")  # a rollback journal, 0644
        db = open_database(f"sqlite:///{path}")
        try:
            modes = {p.name: oct(p.stat().st_mode & 0o777) for p in path.parent.iterdir()}
        finally:
            db.dispose()
    finally:
        os.umask(old)
    data = ("sitekeep.db", "sitekeep.db-wal", "sitekeep.db-shm", "sitekeep.db-journal")
    assert {name: modes.get(name) for name in data} == dict.fromkeys(data, "0o600"), modes


def test_tightening_an_old_database_never_follows_a_symlink_beside_it(tmp_path: Path) -> None:
    """A ``-journal`` name planted as a symlink to another file of this user is not
    followed (that file keeps its mode), and a FIFO is neither opened for good nor
    changed."""
    path = tmp_path / "data" / "sitekeep.db"
    open_database(f"sqlite:///{path}").dispose()
    path.chmod(0o644)
    victim = tmp_path / "victim.txt"  # a file of this user that must stay 0644
    victim.write_text("dummy")
    victim.chmod(0o644)
    (path.parent / "sitekeep.db-journal").symlink_to(victim)
    fifo = path.parent / "sitekeep.db-shm"  # a FIFO must not block the open either
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo, 0o644)
    _owner_only(path)  # what opening the store runs first (SQLite then refuses the journal)
    assert oct(victim.stat().st_mode & 0o777) == "0o644"
    assert oct(fifo.stat().st_mode & 0o777) == "0o644"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_tightening_an_old_database_leaves_a_hard_linked_file_alone(tmp_path: Path) -> None:
    """A hard link planted as ``-journal`` names another file of this user: not changed."""
    path = tmp_path / "data" / "sitekeep.db"
    open_database(f"sqlite:///{path}").dispose()
    victim = tmp_path / "shared.html"  # this user's, meant to stay readable by others
    victim.write_text("dummy")
    victim.chmod(0o644)
    os.link(victim, path.parent / "sitekeep.db-journal")
    _owner_only(path)
    assert oct(victim.stat().st_mode & 0o777) == "0o644"
