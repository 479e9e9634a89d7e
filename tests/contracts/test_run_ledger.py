"""The ``RunLedger`` contract (SPEC §13) on every SQL backend: reservations under caps —
counted over every replica, a session's own runs not counted, never passed by a race —
starts, closes, and lists."""

from __future__ import annotations

import asyncio

import pytest

from sitekeep.stores import open_database
from sitekeep.stores.base import Run
from sitekeep.stores.database import Database
from sitekeep.stores.runs import SqlRunLedger

from .conftest import SQL_BACKENDS, ids

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("backend", SQL_BACKENDS, ids=ids)]


@pytest.fixture
def ledger(database: Database) -> SqlRunLedger:
    return SqlRunLedger(database)


def run(ident: str, tenant: str = "t1", session: str = "s", at: float = 100.0) -> Run:
    return Run(id=ident, tenant=tenant, session=session, browser="chromium", opened_at=at)


async def test_a_reserved_run_is_open_until_closed(ledger: SqlRunLedger) -> None:
    assert await ledger.reserve(run("r1"), per_tenant=None, total=None) is None
    await ledger.started("r1", "http://grid.example.test:4444", "wd-1")
    [opened] = await ledger.open_runs()
    assert (opened.id, opened.endpoint, opened.webdriver_session) == (
        "r1",
        "http://grid.example.test:4444",
        "wd-1",
    )
    assert opened.closed_at is None and opened.closed_reason is None
    assert await ledger.close("wd-1", at=200.0, reason="reaped") == 1
    assert await ledger.close("wd-1", at=300.0, reason="closed") == 0  # the first close stands
    assert await ledger.open_runs() == []
    [closed] = await ledger.list("t1", open_only=False, limit=10)
    assert (closed.closed_at, closed.closed_reason) == (200.0, "reaped")


async def test_close_run_closes_one_run_by_id_once(ledger: SqlRunLedger) -> None:
    await ledger.reserve(run("r1"), per_tenant=None, total=None)
    assert await ledger.close_run("r1", at=5.0, reason="crashed") is True
    assert await ledger.close_run("r1", at=6.0, reason="closed") is False
    [closed] = await ledger.list(None, open_only=False, limit=10)
    assert closed.closed_reason == "crashed"


async def test_the_tenant_cap_counts_open_runs_of_the_tenant_only(ledger: SqlRunLedger) -> None:
    for i in range(2):
        assert await ledger.reserve(run(f"a{i}", session=f"s{i}"), per_tenant=2, total=None) is None
    assert await ledger.reserve(run("b0", tenant="t2"), per_tenant=2, total=None) is None
    assert await ledger.reserve(run("a2", session="s2"), per_tenant=2, total=None) == "tenant"
    assert [r.id for r in await ledger.list("t1", open_only=True, limit=10)].count("a2") == 0
    await ledger.close_run("a0", at=1.0, reason="closed")
    assert await ledger.reserve(run("a2", session="s2"), per_tenant=2, total=None) is None


async def test_the_global_cap_counts_every_tenant(ledger: SqlRunLedger) -> None:
    assert await ledger.reserve(run("a", tenant="t1"), per_tenant=5, total=2) is None
    assert await ledger.reserve(run("b", tenant="t2"), per_tenant=5, total=2) is None
    assert await ledger.reserve(run("c", tenant="t3"), per_tenant=5, total=2) == "global"


async def test_a_sessions_own_runs_never_count_against_it(ledger: SqlRunLedger) -> None:
    assert await ledger.reserve(run("a", session="mine"), per_tenant=1, total=1) is None
    # Re-opening the same session (a fresh browser, another kind): not over the cap.
    assert await ledger.reserve(run("b", session="mine"), per_tenant=1, total=1) is None
    assert await ledger.reserve(run("c", session="other"), per_tenant=1, total=1) == "tenant"


async def test_parallel_reservations_of_several_ledgers_never_pass_the_cap(url: str) -> None:
    if url == "memory://":
        return  # one process's database: no second ledger can reach it
    databases = [open_database(url) for _ in range(4)]
    try:
        ledgers = [SqlRunLedger(db) for db in databases]
        for round_ in range(3):
            results = await asyncio.gather(
                *(
                    ledgers[i % 4].reserve(
                        run(f"r{round_}-{i}", session=f"s{round_}-{i}"), per_tenant=3, total=None
                    )
                    for i in range(24)
                )
            )
            assert results.count(None) == 3 and results.count("tenant") == 21
            for opened in await ledgers[0].open_runs():
                await ledgers[1].close_run(opened.id, at=1.0, reason="closed")
    finally:
        for db in databases:
            db.dispose()


async def test_list_is_newest_first_per_tenant_and_bounded(ledger: SqlRunLedger) -> None:
    for i in range(5):
        await ledger.reserve(
            run(f"r{i}", session=f"s{i}", at=100.0 + i), per_tenant=None, total=None
        )
    await ledger.reserve(run("x", tenant="t2", at=500.0), per_tenant=None, total=None)
    await ledger.close_run("r4", at=600.0, reason="closed")
    assert [r.id for r in await ledger.list("t1", open_only=False, limit=3)] == ["r4", "r3", "r2"]
    assert [r.id for r in await ledger.list("t1", open_only=True, limit=10)] == [
        "r3",
        "r2",
        "r1",
        "r0",
    ]
    assert [r.id for r in await ledger.list(None, open_only=True, limit=2)] == ["x", "r3"]
    assert [r.id for r in await ledger.open_runs()] == ["r0", "r1", "r2", "r3", "x"]
