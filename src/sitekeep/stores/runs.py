"""The run ledger in the SQL database (SPEC §13; ``RunLedger``).

A reservation counts the open runs and adds one in a single transaction that first bumps
the one ``run_guard`` row: PostgreSQL makes a second reservation wait for that row's lock,
SQLite for its write lock, so the counts two replicas see are never both stale and a cap
is never passed by a race. The same statements run on both dialects.
"""

from __future__ import annotations

import builtins
from typing import Any, Literal

import sqlalchemy as sa

from sitekeep.stores.base import ClosedReason, Run
from sitekeep.stores.database import Database
from sitekeep.stores.schema import run_guard, runs

__all__ = ["SqlRunLedger"]

_WHAT = "the run ledger"
_OPEN = runs.c.closed_at.is_(None)


def _run(row: Any) -> Run:
    return Run(
        id=row.id,
        tenant=row.tenant,
        session=row.session,
        browser=row.browser,
        opened_at=row.opened_at,
        endpoint=row.endpoint,
        webdriver_session=row.webdriver_session,
        closed_at=row.closed_at,
        closed_reason=row.closed_reason,
        replica=row.replica,
    )


def _list(by_tenant: bool, open_only: bool) -> sa.Select[Any]:
    query = sa.select(runs).order_by(runs.c.opened_at.desc(), runs.c.id)
    query = query.limit(sa.bindparam("limit", type_=sa.Integer))
    if by_tenant:
        query = query.where(runs.c.tenant == sa.bindparam("tenant"))
    return query.where(_OPEN) if open_only else query


_LISTS = {(t, o): _list(t, o) for t in (False, True) for o in (False, True)}
"""The ledger's lists, built once (building one per call was a third of a call's cost)."""


class SqlRunLedger:
    """The ``runs`` table; see ``RunLedger`` for the contract."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def reserve(
        self, run: Run, *, per_tenant: int | None, total: int | None
    ) -> Literal["tenant", "global"] | None:
        others = sa.not_(sa.and_(runs.c.tenant == run.tenant, runs.c.session == run.session))

        def count(conn: sa.Connection, *where: sa.ColumnElement[bool]) -> int:
            query = sa.select(sa.func.count()).select_from(runs).where(_OPEN, others, *where)
            return int(conn.execute(query).scalar_one())

        def reserve(conn: sa.Connection) -> Literal["tenant", "global"] | None:
            conn.execute(
                sa.update(run_guard)
                .where(run_guard.c.id == 1)
                .values(reservations=run_guard.c.reservations + 1)
            )
            if per_tenant is not None and count(conn, runs.c.tenant == run.tenant) >= per_tenant:
                return "tenant"
            if total is not None and count(conn) >= total:
                return "global"
            conn.execute(
                sa.insert(runs).values(
                    id=run.id,
                    tenant=run.tenant,
                    session=run.session,
                    browser=run.browser,
                    opened_at=run.opened_at,
                    replica=run.replica,
                )
            )
            return None

        return await self._db.run(_WHAT, reserve, write=True)

    async def started(self, run_id: str, endpoint: str, webdriver_session: str) -> None:
        await self._db.run(
            _WHAT,
            lambda conn: conn.execute(
                sa.update(runs)
                .where(runs.c.id == run_id)
                .values(endpoint=endpoint, webdriver_session=webdriver_session)
            ),
            write=True,
        )

    async def close(self, webdriver_session: str, *, at: float, reason: ClosedReason) -> int:
        return await self._close(runs.c.webdriver_session == webdriver_session, at, reason)

    async def close_run(self, run_id: str, *, at: float, reason: ClosedReason) -> bool:
        return await self._close(runs.c.id == run_id, at, reason) > 0

    async def _close(self, which: sa.ColumnElement[bool], at: float, reason: ClosedReason) -> int:
        def close(conn: sa.Connection) -> int:
            update = sa.update(runs).where(which, _OPEN)
            return int(conn.execute(update.values(closed_at=at, closed_reason=reason)).rowcount)

        return await self._db.run(_WHAT, close, write=True)

    async def open_runs(self) -> builtins.list[Run]:
        def read(conn: sa.Connection) -> builtins.list[Run]:
            rows = conn.execute(sa.select(runs).where(_OPEN).order_by(runs.c.opened_at))
            return [_run(r) for r in rows]

        return await self._db.read(_WHAT, read)

    async def list(self, tenant: str | None, *, open_only: bool, limit: int) -> builtins.list[Run]:
        query = _LISTS[(tenant is not None, open_only)]
        params = {"tenant": tenant, "limit": limit} if tenant is not None else {"limit": limit}
        return [_run(r) for r in await self._db.fetch(_WHAT, query, params)]
