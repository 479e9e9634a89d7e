"""The run ledger (``runs``, ``run_guard``) and a revision per session-store record.

``kv.revision`` lets a writer refuse to overwrite a record another replica wrote since it
read it; rows that exist get revision 1 (0 means absent).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("kv") as batch:
        batch.add_column(sa.Column("revision", sa.BigInteger, nullable=False, server_default="0"))
    op.execute("UPDATE kv SET revision = 1")
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String, nullable=False),
        sa.Column("session", sa.String, nullable=False),
        sa.Column("browser", sa.String(16), nullable=False),
        sa.Column("endpoint", sa.String, nullable=True),
        sa.Column("webdriver_session", sa.String, nullable=True),
        sa.Column("opened_at", sa.Float, nullable=False),
        sa.Column("closed_at", sa.Float, nullable=True),
        sa.Column("closed_reason", sa.String(16), nullable=True),
        sa.Column("replica", sa.String, nullable=False, server_default=""),
    )
    op.create_index("ix_runs_webdriver_session", "runs", ["webdriver_session"])
    op.create_index("ix_runs_closed_at", "runs", ["closed_at"])
    guard = op.create_table(
        "run_guard",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("reservations", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.bulk_insert(guard, [{"id": 1, "reservations": 0}])


def downgrade() -> None:
    op.drop_table("run_guard")
    op.drop_table("runs")
    with op.batch_alter_table("kv") as batch:
        batch.drop_column("revision")
