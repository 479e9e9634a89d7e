"""The site data a profile held before each of its last captures (issue #26).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "profile_versions",
        sa.Column("tenant", sa.String, primary_key=True),
        sa.Column("profile", sa.String(64), primary_key=True),
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("kept_at", sa.Float, nullable=False),
        sa.Column("sealed", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("profile_versions")
