"""Profiles (SPEC §9) and the per-tenant proxy pool (SPEC §14).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "profiles",
        sa.Column("tenant", sa.String, primary_key=True),
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("visibility", sa.String(16), nullable=False),
        sa.Column("country", sa.String(8), nullable=True),
        sa.Column("cookie_domains", sa.String, nullable=False),
        sa.Column("created_by", sa.String, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("captured_at", sa.Float, nullable=True),
        sa.Column("expires_at", sa.Float, nullable=True),
        sa.Column("sealed", sa.LargeBinary, nullable=True),
    )
    op.create_table(
        "proxies",
        sa.Column("tenant", sa.String, primary_key=True),
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("country", sa.String(8), nullable=False),
        sa.Column("url", sa.String, nullable=False),
        sa.Column("auth_secret", sa.String(64), nullable=True),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_proxies_country", "proxies", ["country"])


def downgrade() -> None:
    op.drop_index("ix_proxies_country", "proxies")
    op.drop_table("proxies")
    op.drop_table("profiles")
