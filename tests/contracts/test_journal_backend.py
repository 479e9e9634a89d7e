"""The ``JournalBackend`` contract (``sitekeep.journal.base``), run against every backend.

Backends are opened by URL through ``open_backend``: JSON-lines files in a temp dir, and
Redis Streams on the real Redis at 127.0.0.1:6379 under a key prefix of this run's own
(removed at the end), so runs at once never collide. To add a backend, add a ``Backend``.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
import redis

from journal_support import GEN, Chain
from sitekeep.errors import InvalidInput, JournalConflict, RecordTooLarge
from sitekeep.journal import Journal, JournalKey, Rules, open_backend, records
from sitekeep.journal.reducer import fold_all

pytestmark = pytest.mark.anyio

REDIS = "redis://127.0.0.1:6379/0"
RUN_PREFIX = f"sitekeep-test-{secrets.token_hex(6)}:"


@dataclass(frozen=True)
class Backend:
    name: str
    url: Callable[[Path], str]


BACKENDS = [
    Backend("files", lambda tmp: f"file://{tmp}/journal"),
    Backend("redis", lambda tmp: f"{REDIS}?prefix={RUN_PREFIX}{tmp.name}:"),
]

KEY = JournalKey("tenant-a", "session-1")


@pytest.fixture(scope="module", autouse=True)
def _drop_redis_keys() -> object:
    yield None
    client = redis.Redis.from_url(REDIS)
    for stale in client.scan_iter(match=f"{RUN_PREFIX}*", count=500):
        client.delete(stale)
    client.close()


@pytest.fixture(params=BACKENDS, ids=lambda b: b.name)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    backend: Backend = request.param
    return backend.url(tmp_path)


@pytest.fixture
async def journal(url: str) -> AsyncIterator[Journal]:
    opened = Journal(open_backend(url, max_record=256 * 1024), Rules(ttl=3600.0, cap=100))
    yield opened
    await opened.aclose()


async def write_all(journal: Journal, key: JournalKey, made: list[records.Record]) -> list[str]:
    return [await journal.write(key, record) for record in made]


def session() -> Chain:
    chain = Chain()
    chain.op("navigate", page="https://a.example.test/", refs="invalidated")
    chain.snapshot(1)
    chain.op("click", page="https://b.example.test/x", refs="unknown")
    chain.add(records.mark("saved", parent=chain.state.head, detail={"cookies": 1}))
    chain.op("save_site_data", page="https://b.example.test/x", saved={"cookies": 2, "sites": 1})
    return chain


async def test_appended_lines_come_back_in_order_with_growing_positions(journal: Journal) -> None:
    chain = session()
    await write_all(journal, KEY, chain.made)
    entries = await journal.backend.entries(KEY, after=None, limit=100)
    assert [e.data + b"\n" for e in entries] == [records.encode(r) for r in chain.made]
    assert await journal.head(KEY) == chain.made[-1].id
    last = await journal.backend.last(KEY, 2)
    assert [e.position for e in last] == [e.position for e in entries[-2:]]


async def test_paging_after_a_cursor_visits_every_record_once(journal: Journal) -> None:
    chain = session()
    await write_all(journal, KEY, chain.made)
    seen: list[str] = []
    after = None
    while True:
        page = await journal.backend.entries(KEY, after=after, limit=3)
        seen += [records.decode(e.data).id for e in page]
        if len(page) < 3:
            break
        after = page[-1].position
    assert seen == [r.id for r in chain.made]


async def test_an_append_whose_parent_is_not_the_head_writes_nothing(journal: Journal) -> None:
    chain = session()
    await write_all(journal, KEY, chain.made)
    stale = records.begin("click", {}, parent=chain.made[0].id, call=records.new_id())
    with pytest.raises(JournalConflict) as raised:
        await journal.write(KEY, stale)
    assert raised.value.head == chain.made[-1].id
    with pytest.raises(JournalConflict):
        await journal.write(KEY, records.begin("click", {}, parent=None, call=records.new_id()))
    assert len(await journal.backend.entries(KEY, after=None, limit=100)) == len(chain.made)


async def test_racing_writers_with_the_same_parent_never_fork(journal: Journal) -> None:
    chain = session()
    await write_all(journal, KEY, chain.made)
    outcomes: list[str] = []

    async def write_one() -> None:
        record = records.begin("click", {}, parent=chain.made[-1].id, call=records.new_id())
        try:
            await journal.write(KEY, record)
            outcomes.append("written")
        except JournalConflict:
            outcomes.append("conflict")

    async with anyio.create_task_group() as group:
        for _ in range(8):
            group.start_soon(write_one)
    assert sorted(outcomes) == ["conflict"] * 7 + ["written"]
    result = await journal.replay(KEY)
    assert result.report.ok and result.report.linear


async def test_replay_through_the_backend_equals_the_live_fold(journal: Journal) -> None:
    chain = session()
    await write_all(journal, KEY, chain.made)
    result = await journal.replay(KEY)
    assert result.state == chain.state == fold_all(chain.made, journal.rules)
    assert result.refs is not None and (result.refs.snapshot, result.refs.generation) == (1, GEN)


async def test_a_second_backend_on_the_same_url_sees_every_record(url: str) -> None:
    chain = session()
    first = Journal(open_backend(url))
    await write_all(first, KEY, chain.made)
    await first.aclose()
    second = Journal(open_backend(url))
    try:
        assert (await second.replay(KEY)).state == chain.state
    finally:
        await second.aclose()


async def test_a_writer_sees_the_appends_of_another_backend_between_its_own(url: str) -> None:
    """Two backends on one URL (as ``sitekeep serve`` and ``sitekeep mcp`` share a data dir):
    whatever one remembers of its own last append, the other's appends in between move
    the head it checks, and removing the stream resets it."""
    first, second = Journal(open_backend(url)), Journal(open_backend(url))
    try:
        a = records.begin("click", {}, parent=None, call=records.new_id())
        await first.write(KEY, a)
        b = records.begin("click", {}, parent=a.id, call=records.new_id())
        await second.write(KEY, b)
        stale = records.begin("click", {}, parent=a.id, call=records.new_id())
        with pytest.raises(JournalConflict) as raised:
            await first.write(KEY, stale)
        assert raised.value.head == b.id
        c = records.begin("click", {}, parent=b.id, call=records.new_id())
        await first.write(KEY, c)
        assert await second.remove(KEY)
        with pytest.raises(JournalConflict) as raised:
            await first.write(KEY, records.begin("click", {}, parent=c.id, call=records.new_id()))
        assert raised.value.head is None
        await first.write(KEY, records.begin("click", {}, parent=None, call=records.new_id()))
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_source_reads_the_stream_as_it_was_when_opened(journal: Journal) -> None:
    chain = session()
    await write_all(journal, KEY, chain.made[:3])
    source = journal.backend.source(KEY)
    assert source is not None
    try:
        await write_all(journal, KEY, chain.made[3:])
        assert sum(1 for _ in source.scan()) == 3
    finally:
        source.close()


async def test_streams_are_listed_per_tenant_and_odd_names_round_trip(journal: Journal) -> None:
    names = [
        JournalKey("tenant-a", "s1"),
        JournalKey("tenant-a", ".."),
        JournalKey("tenant/b", "s1"),
        JournalKey("t:c%2F", "ké y*"),
    ]
    for key in names:
        await journal.write(key, records.mark("opened", parent=None, generation=GEN))
    assert await journal.backend.keys() == sorted(names)
    assert await journal.backend.keys("tenant-a") == sorted(names[:2])
    assert await journal.backend.keys("tenant") == []
    assert await journal.head(JournalKey("tenant/b", "s1")) != await journal.head(names[0])


async def test_a_removed_stream_is_gone(journal: Journal) -> None:
    await write_all(journal, KEY, session().made)
    assert await journal.remove(KEY)
    assert not await journal.remove(KEY)
    assert await journal.head(KEY) is None
    assert journal.backend.source(KEY) is None
    assert (await journal.replay(KEY)).state.head is None
    assert await journal.backend.keys() == []


async def test_a_record_over_the_cap_is_never_written(journal: Journal) -> None:
    started = records.begin("snapshot", {}, parent=None, call=records.new_id())
    big = records.snapshot(started, 1, GEN, ["n" * 200] * 2000, parent=started.id)
    await journal.write(KEY, started)
    with pytest.raises(RecordTooLarge):
        await journal.write(KEY, big)
    assert await journal.head(KEY) == started.id


async def test_a_bad_cursor_is_refused_naming_the_field(journal: Journal) -> None:
    await write_all(journal, KEY, session().made)
    with pytest.raises(InvalidInput) as raised:
        await journal.backend.entries(KEY, after="not-a-cursor", limit=5)
    assert raised.value.field == "after"


async def test_the_timeline_pairs_begins_and_finishes(journal: Journal) -> None:
    chain = session()
    started = chain.begin("type")
    await write_all(journal, KEY, chain.made)
    rows, cursor = await journal.timeline(KEY, limit=100)
    assert cursor is None
    ops = [(r.get("op"), r.get("outcome"), r.get("url")) for r in rows if "mark" not in r]
    assert ops == [
        ("navigate", "ok", "https://a.example.test/"),
        ("snapshot", "ok", None),
        ("click", "ok", "https://b.example.test/x"),
        ("save_site_data", "ok", "https://b.example.test/x"),
        ("type", "pending", None),
    ]
    assert rows[1]["snapshot"] == {"number": 1, "refs": 3}
    assert [r["mark"] for r in rows if "mark" in r] == ["saved"]  # an older journal's
    saves = [r.get("saved") for r in rows if r.get("op") == "save_site_data"]
    assert saves == [{"cookies": 2, "sites": 1}]
    assert all("saved" not in r for r in rows if r.get("op") in ("navigate", "click"))
    assert rows[-1]["args"] == {} and started.op == "type"


async def test_redis_appends_past_the_connection_pool_size_wait_for_a_connection(
    tmp_path: Path,
) -> None:
    """More concurrent appends than the Redis client's pool holds all succeed: they wait
    for a free connection (a blocking pool) instead of failing at once."""
    url = f"{REDIS}?prefix={RUN_PREFIX}{tmp_path.name}:&max_connections=4"
    journal = Journal(open_backend(url), Rules(ttl=3600.0, cap=100))
    keys = [JournalKey("tenant-a", f"s{i}") for i in range(40)]
    try:

        async def open_one(key: JournalKey) -> None:
            await journal.write(key, records.mark("opened", parent=None, generation=GEN))

        async with anyio.create_task_group() as group:
            for key in keys:
                group.start_soon(open_one, key)
        assert await journal.backend.keys("tenant-a") == sorted(keys)
    finally:
        await journal.aclose()
