"""The SQL database's own promises on PostgreSQL (``sitekeep.stores.database``): a read on
the event loop survives a pooled connection the server ended (no ping at checkout, one
more try on a new connection), and ``dispose`` from sync code closes the event-loop
connections even while an event loop runs in its thread."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa

from sitekeep.stores import open_database
from sitekeep.stores.database import Database

pytestmark = pytest.mark.anyio


def _pid(conn: sa.Connection) -> int:
    return int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Database]:
    db = open_database(postgres_url)
    yield db
    db.dispose()


def _admin(url: str) -> psycopg.Connection[tuple[int]]:
    return psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True)


def _alive(url: str, pids: set[int]) -> set[int]:
    with _admin(url) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s)", [list(pids)])
        return {row[0] for row in rows}


def _terminate(url: str, pids: set[int]) -> None:
    """End the server's connections ``pids`` and wait (5 s at most) until they are gone."""
    with _admin(url) as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 5
    while _alive(url, pids) and time.monotonic() < deadline:
        time.sleep(0.05)


async def test_a_read_outlives_its_pooled_connections_ended_by_the_server(
    pg: Database, postgres_url: str
) -> None:
    first = {await pg.read("reading", _pid) for _ in range(3)}
    _terminate(postgres_url, first)
    # Every pooled connection is dead now; each read still answers, from a new one.
    again = [await pg.read("reading", _pid) for _ in range(3)]
    assert not set(again) & first


async def test_dispose_from_sync_code_inside_a_running_loop_closes_the_loop_connections(
    postgres_url: str,
) -> None:
    db = open_database(postgres_url)
    pids = {await db.read("reading", _pid)}
    assert _alive(postgres_url, pids) == pids
    db.dispose()  # sync, on this thread's running loop
    deadline = time.monotonic() + 5
    while _alive(postgres_url, pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(postgres_url, pids)


_PID = sa.select(
    sa.func.pg_backend_pid().label("pid"), sa.bindparam("tag", type_=sa.String).label("tag")
)


async def test_fetch_runs_its_statement_by_psycopg_without_sqlalchemys_execution_in_autocommit(
    pg: Database, postgres_url: str
) -> None:
    """A hot read skips SQLAlchemy's execution layer (none of its cursor events fire) and
    leaves its connection outside any transaction (back in the pool idle, not ``idle in
    transaction``)."""
    executed: list[str] = []
    assert pg._async is not None
    sa.event.listen(
        pg._async.sync_engine, "before_cursor_execute", lambda *args: executed.append(args[2])
    )
    rows = [await pg.fetch("reading", _PID, {"tag": f"t{i}"}) for i in range(7)]
    assert [r[0].tag for r in rows] == [f"t{i}" for i in range(7)]  # columns by attribute
    assert executed == []
    pids = {r[0].pid for r in rows}
    with _admin(postgres_url) as conn:
        states = conn.execute(
            "SELECT state FROM pg_stat_activity WHERE pid = ANY(%s)", [list(pids)]
        ).fetchall()
    assert {s[0] for s in states} == {"idle"}


async def test_fetch_outlives_its_pooled_connections_ended_by_the_server(
    pg: Database, postgres_url: str
) -> None:
    first = {(await pg.fetch("reading", _PID, {"tag": "a"}))[0].pid for _ in range(3)}
    _terminate(postgres_url, first)
    again = [(await pg.fetch("reading", _PID, {"tag": "b"}))[0] for _ in range(3)]
    assert [r.tag for r in again] == ["b"] * 3
    assert not {r.pid for r in again} & first
