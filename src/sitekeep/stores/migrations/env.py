"""Alembic's environment for sitekeep: always run from :mod:`sitekeep.stores.migrate`,
which hands in an open connection (``config.attributes["connection"]``)."""

from __future__ import annotations

from alembic import context

from sitekeep.stores.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
