"""The schema sitekeep 0.1 made with ``create_all``: kv, tokens, secrets.

A data dir from before the migrations has some of these tables already (each store made its
own when first opened), but no ``alembic_version``: each table is made only where it is
missing, so such a database joins the migration history here without losing a row.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _missing(table: str) -> bool:
    return not sa.inspect(op.get_bind()).has_table(table)


def upgrade() -> None:
    if _missing("kv"):
        op.create_table(
            "kv",
            sa.Column("key", sa.String, primary_key=True),
            sa.Column("value", sa.LargeBinary, nullable=False),
            sa.Column("expires_at", sa.Float, nullable=True),
        )
        op.create_index("ix_kv_expires_at", "kv", ["expires_at"])
    if _missing("tokens"):
        op.create_table(
            "tokens",
            sa.Column("token_hash", sa.String(64), primary_key=True),
            sa.Column("tenant", sa.String, nullable=False),
            sa.Column("subject", sa.String, nullable=False),
            sa.Column("role", sa.String(16), nullable=False),
            sa.Column("created_at", sa.Float, nullable=False),
        )
        op.create_index("ix_tokens_tenant", "tokens", ["tenant"])
    if _missing("secrets"):
        op.create_table(
            "secrets",
            sa.Column("tenant", sa.String, primary_key=True),
            sa.Column("name", sa.String(64), primary_key=True),
            sa.Column("description", sa.String, nullable=False),
            sa.Column("hosts", sa.String, nullable=False),
            sa.Column("keys", sa.String, nullable=False),
            sa.Column("sealed", sa.LargeBinary, nullable=False),
            sa.Column("updated_at", sa.Float, nullable=False),
        )


def downgrade() -> None:
    op.drop_table("secrets")
    op.drop_table("tokens")
    op.drop_table("kv")
