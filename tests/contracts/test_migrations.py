"""Schema migrations (Alembic, SPEC §13): head builds exactly the one ``MetaData``; a data
dir made before migrations upgrades with every row kept; replicas upgrading at once are safe."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from typer.testing import CliRunner

from fixtures.databases import fresh_postgres_database
from sitekeep.auth import hash_token
from sitekeep.cli import app
from sitekeep.config import Settings
from sitekeep.model import RECORD_JSON, Principal, SessionRecord
from sitekeep.stores import open_database, open_session_store, schema
from sitekeep.stores.cipher import Cipher, load_or_create_key
from sitekeep.stores.database import Database
from sitekeep.stores.migrate import current_revision, head_revision
from support import on_service

PASS = "dummy-pass-legacy"


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/fresh.db"
    else:
        with fresh_postgres_database() as url:
            yield url


def test_the_migrations_at_head_build_exactly_the_metadata(fresh_url: str) -> None:
    db = open_database(fresh_url)
    try:
        assert current_revision(db) == head_revision()
        with db.engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), schema.metadata) == []
    finally:
        db.dispose()


def _legacy_data_dir(data_dir: Path) -> tuple[str, SessionRecord]:
    """A data dir as sitekeep 0.1 left it: each store's tables made by ``create_all``, with
    a token, a secret and a session in them, and no ``alembic_version``."""
    data_dir.mkdir(parents=True)
    old = sa.MetaData()
    sa.Table(
        "tokens",
        old,
        sa.Column("token_hash", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String, nullable=False, index=True),
        sa.Column("subject", sa.String, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    sa.Table(
        "secrets",
        old,
        sa.Column("tenant", sa.String, primary_key=True),
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("description", sa.String, nullable=False),
        sa.Column("hosts", sa.String, nullable=False),
        sa.Column("keys", sa.String, nullable=False),
        sa.Column("sealed", sa.LargeBinary, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    kv = sa.MetaData()
    sa.Table(
        "kv",
        kv,
        sa.Column("key", sa.String, primary_key=True),
        sa.Column("value", sa.LargeBinary, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=True, index=True),
    )
    token = "sk_dummy-legacy-token"
    cipher = Cipher(load_or_create_key(data_dir / "master.key", None))
    sealed = cipher.seal(
        json.dumps({"hosts": ["app.example.test"], "values": {"password": PASS}}).encode(),
        tenant="t1",
        kind="secret",
        ident="login",
    )
    record = SessionRecord("t1", "k", "agent", "chromium", time.time(), time.time())
    main = sa.create_engine(f"sqlite:///{data_dir / 'sitekeep.db'}")
    old.create_all(main)
    with main.begin() as conn:
        conn.execute(
            sa.text("INSERT INTO tokens VALUES (:h, 't1', 'agent', 'admin', 1.0)"),
            {"h": hash_token(token)},
        )
        conn.execute(
            sa.text(
                "INSERT INTO secrets VALUES ('t1', 'login', 'd', '[\"app.example.test\"]', "
                "'[\"password\"]', :sealed, 1.0)"
            ),
            {"sealed": sealed},
        )
    main.dispose()
    sessions = sa.create_engine(f"sqlite:///{data_dir / 'sessions.db'}")
    kv.create_all(sessions)
    with sessions.begin() as conn:
        conn.execute(
            sa.text("INSERT INTO kv VALUES ('session/t1/k', :v, :x)"),
            {"v": RECORD_JSON.dump_json(record), "x": time.time() + 3600},
        )
    sessions.dispose()
    return token, record


def test_a_data_dir_from_before_migrations_upgrades_keeping_every_row(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    token, record = _legacy_data_dir(data_dir)
    settings = Settings(data_dir=data_dir)

    async def use(svc: object) -> tuple[object, ...]:
        from sitekeep.service import Service

        assert isinstance(svc, Service)
        who = await svc.catalogue.authenticate(f"Bearer {token}")
        secret = await svc.parts.vault.reveal("t1", "login", "password")
        loaded = await svc.views.record(Principal("t1", "agent"), "k")
        closed = await svc.sessions.close(Principal("t1", "agent"), "k")  # a write at revision 1
        return who, secret, loaded, closed

    who, secret, loaded, closed = on_service(settings, use)
    assert who == Principal("t1", "agent", "admin")
    assert secret == PASS
    assert loaded == record
    assert closed == {"key": "k", "closed": False}
    for name in ("sitekeep.db", "sessions.db"):
        db = Database(open_database(f"sqlite:///{data_dir / name}", migrate=False).url)
        try:
            assert current_revision(db) == head_revision()
        finally:
            db.dispose()


UPGRADE = "import sys; from sitekeep.stores import open_database; open_database(sys.argv[1])"


def test_replicas_starting_together_upgrade_once_and_all_succeed(fresh_url: str) -> None:
    starts = [
        subprocess.Popen([sys.executable, "-c", UPGRADE, fresh_url], stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    for start in starts:
        _, err = start.communicate(timeout=120)
        assert start.returncode == 0, err.decode()
    db = open_database(fresh_url, migrate=False)
    try:
        assert current_revision(db) == head_revision()
        with db.engine.connect() as conn:
            guard = conn.execute(sa.select(sa.func.count()).select_from(schema.run_guard))
            assert guard.scalar_one() == 1  # the seed row went in once
    finally:
        db.dispose()


def test_db_upgrade_upgrades_the_database_and_a_sql_session_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(tmp_path))
    first = CliRunner().invoke(app, ["db", "upgrade"])
    assert first.exit_code == 0, first.output
    assert f"database: was none, now at schema {head_revision()}" in first.output
    assert f"session store: was none, now at schema {head_revision()}" in first.output
    again = CliRunner().invoke(app, ["db", "upgrade"])
    assert f"database: already at schema {head_revision()}" in again.output
    store = open_session_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    assert store is not None


def test_db_upgrade_of_an_unreachable_database_says_so_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SITEKEEP_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    result = CliRunner().invoke(app, ["db", "upgrade"])
    assert result.exit_code == 2
    assert "failed: OperationalError" in result.output
    assert "nobody" not in result.output
