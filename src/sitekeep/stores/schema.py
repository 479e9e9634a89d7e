"""Every SQL table of sitekeep, in one ``MetaData`` (SQLAlchemy Core, SPEC §13).

The tables are made and changed only by the Alembic migrations in
``sitekeep/stores/migrations`` (``sitekeep db upgrade``, and on start); a test checks that
the migrations at head build exactly this schema, on SQLite and on PostgreSQL.

* ``kv`` — the SQL session store: bytes under string keys, an expiry and a revision.
* ``tokens`` — bearer tokens, by SHA-256 only (SPEC §1).
* ``secrets`` — the secrets catalogue, values sealed (SPEC §7, §12).
* ``runs`` — the run ledger: one row per live browser (SPEC §13).
* ``run_guard`` — one row that every run reservation updates first, so cap checks of two
  replicas run one after the other (a row lock on PostgreSQL, the write lock on SQLite).
* ``profiles`` — named site data a session opens from (SPEC §9): metadata in the clear,
  the site data only in ``sealed`` (for (tenant, "profile", id), SPEC §12).
* ``profile_versions`` — the site data a profile held before each of its last captures
  (issue #26), each sealed for (tenant, "profile-version", "{profile}/{id}").
* ``proxies`` — the tenant's proxy pool (SPEC §14); credentials are a secret's name.

Times are float seconds since the epoch.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = [
    "kv",
    "metadata",
    "profile_versions",
    "profiles",
    "proxies",
    "run_guard",
    "runs",
    "secrets",
    "tokens",
]

metadata = sa.MetaData()

kv = sa.Table(
    "kv",
    metadata,
    sa.Column("key", sa.String, primary_key=True),
    sa.Column("value", sa.LargeBinary, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=True, index=True),
    sa.Column("revision", sa.BigInteger, nullable=False, server_default="0"),
)

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("tenant", sa.String, nullable=False, index=True),
    sa.Column("subject", sa.String, nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

secrets = sa.Table(
    "secrets",
    metadata,
    sa.Column("tenant", sa.String, primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("description", sa.String, nullable=False),
    sa.Column("hosts", sa.String, nullable=False),  # JSON list of patterns
    sa.Column("keys", sa.String, nullable=False),  # JSON list of key names
    sa.Column("sealed", sa.LargeBinary, nullable=False),  # envelope of {hosts, values}
    sa.Column("updated_at", sa.Float, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("tenant", sa.String, nullable=False),
    sa.Column("session", sa.String, nullable=False),
    sa.Column("browser", sa.String(16), nullable=False),
    sa.Column("endpoint", sa.String, nullable=True),  # the WebDriver server
    sa.Column("webdriver_session", sa.String, nullable=True, index=True),
    sa.Column("opened_at", sa.Float, nullable=False),
    sa.Column("closed_at", sa.Float, nullable=True, index=True),
    sa.Column("closed_reason", sa.String(16), nullable=True),
    sa.Column("replica", sa.String, nullable=False, server_default=""),
)

run_guard = sa.Table(
    "run_guard",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("reservations", sa.BigInteger, nullable=False, server_default="0"),
)

profiles = sa.Table(
    "profiles",
    metadata,
    sa.Column("tenant", sa.String, primary_key=True),
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("visibility", sa.String(16), nullable=False),
    sa.Column("country", sa.String(8), nullable=True),
    sa.Column("cookie_domains", sa.String, nullable=False),  # JSON list of hosts
    sa.Column("created_by", sa.String, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("captured_at", sa.Float, nullable=True),
    sa.Column("expires_at", sa.Float, nullable=True),
    sa.Column("sealed", sa.LargeBinary, nullable=True),  # envelope of the SiteData JSON
)

profile_versions = sa.Table(
    "profile_versions",
    metadata,
    sa.Column("tenant", sa.String, primary_key=True),
    sa.Column("profile", sa.String(64), primary_key=True),
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("kept_at", sa.Float, nullable=False),
    sa.Column("sealed", sa.LargeBinary, nullable=False),  # envelope of the SiteData JSON
)

proxies = sa.Table(
    "proxies",
    metadata,
    sa.Column("tenant", sa.String, primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("country", sa.String(8), nullable=False, index=True),
    sa.Column("url", sa.String, nullable=False),
    sa.Column("auth_secret", sa.String(64), nullable=True),
    sa.Column("updated_at", sa.Float, nullable=False),
)
