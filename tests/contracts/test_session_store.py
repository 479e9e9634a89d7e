"""The ``SessionStore`` contract (``sitekeep.stores.base``), run against every backend:
memory, SQLite, the real PostgreSQL and the real Redis.

Each backend is opened by URL through ``open_session_store`` with a controllable clock, so
expiry is tested by moving time, never by sleeping (Redis keeps each key's expiry time by
that clock beside its native TTL). To add a backend, add one ``Backend`` to ``BACKENDS`` and
its URL to ``url_of`` (``conftest.py``): every contract test runs on it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
import redis.asyncio

from fixtures.databases import REDIS_URL
from sitekeep.api.errors import error_response, status_of
from sitekeep.errors import InvalidInput, StoreUnavailable
from sitekeep.stores import SessionStore, open_session_store
from sitekeep.stores.base import Versioned
from sitekeep.stores.redis_store import RedisStore, connect
from sitekeep.stores.urls import parse_store_url

from .conftest import DURABLE, FakeClock, ids

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(url: str, clock: FakeClock) -> AsyncIterator[SessionStore]:
    opened = open_session_store(url, clock)
    yield opened
    await opened.aclose()


@pytest.fixture
async def two(url: str, clock: FakeClock) -> AsyncIterator[tuple[SessionStore, SessionStore]]:
    """Two stores on one backend, as two replicas (or processes) hold them."""
    first, second = open_session_store(url, clock), open_session_store(url, clock)
    yield first, second
    await first.aclose()
    await second.aclose()


async def test_get_returns_the_exact_bytes_set_including_nul_and_high_bytes(
    store: SessionStore,
) -> None:
    value = bytes(range(256)) + b"\x00tail\x00"
    await store.set("sess:a", value)
    assert await store.get("sess:a") == value


async def test_empty_bytes_are_a_value_not_absence(store: SessionStore) -> None:
    await store.set("sess:empty", b"")
    assert await store.get("sess:empty") == b""


async def test_set_overwrites_the_previous_value(store: SessionStore) -> None:
    await store.set("sess:a", b"first")
    await store.set("sess:a", b"second")
    assert await store.get("sess:a") == b"second"


async def test_get_of_an_absent_key_is_none(store: SessionStore) -> None:
    assert await store.get("sess:never") is None


async def test_a_key_without_ttl_never_expires(store: SessionStore, clock: FakeClock) -> None:
    await store.set("sess:a", b"v")
    clock.advance(10 * 365 * 86_400)
    assert await store.get("sess:a") == b"v"


async def test_a_key_lives_until_its_ttl_passes_on_the_clock(
    store: SessionStore, clock: FakeClock
) -> None:
    await store.set("sess:a", b"v", ttl=60)
    clock.advance(59.9)
    assert await store.get("sess:a") == b"v"
    clock.advance(0.1)
    assert await store.get("sess:a") is None


async def test_overwriting_without_ttl_clears_the_old_expiry(
    store: SessionStore, clock: FakeClock
) -> None:
    await store.set("sess:a", b"old", ttl=10)
    await store.set("sess:a", b"new")
    clock.advance(3600)
    assert await store.get("sess:a") == b"new"


async def test_expire_moves_the_expiry_from_now(store: SessionStore, clock: FakeClock) -> None:
    await store.set("sess:a", b"v", ttl=10)
    clock.advance(5)
    assert await store.expire("sess:a", 100) is True
    clock.advance(99)
    assert await store.get("sess:a") == b"v"
    clock.advance(1)
    assert await store.get("sess:a") is None


async def test_expire_can_shorten_a_keys_life(store: SessionStore, clock: FakeClock) -> None:
    await store.set("sess:a", b"v")
    assert await store.expire("sess:a", 1) is True
    clock.advance(1)
    assert await store.get("sess:a") is None


async def test_expire_of_an_absent_key_is_false_and_creates_nothing(store: SessionStore) -> None:
    assert await store.expire("sess:never", 100) is False
    assert await store.get("sess:never") is None
    assert await store.keys("sess:") == []


async def test_expire_of_an_expired_key_is_false_and_does_not_revive_it(
    store: SessionStore, clock: FakeClock
) -> None:
    await store.set("sess:a", b"v", ttl=1)
    clock.advance(2)
    assert await store.expire("sess:a", 100) is False
    assert await store.get("sess:a") is None


async def test_expire_under_a_prefix_moves_every_live_key_under_it_and_no_other(
    store: SessionStore, clock: FakeClock
) -> None:
    for key in ("v/t1/k/1", "v/t1/k/2", "v/t1/k/x/3", "v/t1/k2/1", "v/t1/kk", "w/t1/k/1"):
        await store.set(key, b"v", ttl=10)
    await store.set("v/t1/k/gone", b"v", ttl=1)
    await store.set("v/t1/k/forever", b"v")
    await store.set("s/t1/k", b"v", ttl=10)
    clock.advance(1)
    assert await store.expire("s/t1/k", 100, under="v/t1/k/") is True
    clock.advance(50)
    assert await store.keys("") == [
        "s/t1/k",
        "v/t1/k/1",
        "v/t1/k/2",
        "v/t1/k/forever",
        "v/t1/k/x/3",
    ]  # the expired one was not revived, the keys beside the prefix were not moved
    assert await store.count("v/t1/k/") == 4
    clock.advance(50)
    assert await store.keys("") == []  # a key that never expired now does, with the rest
    assert await store.get("v/t1/k/gone") is None


async def test_expire_under_a_prefix_moves_it_even_when_the_key_is_absent_keeping_revisions(
    store: SessionStore, clock: FakeClock
) -> None:
    assert await store.expire("s/t1/k", 100, under="v/t1/k/") is False
    assert await store.keys("") == []
    await store.set("v/t1/k/1", b"v", ttl=1)
    await store.set("v/t1/k/1", b"w", ttl=1)
    assert await store.expire("s/t1/k", 100, under="v/t1/k/") is False
    clock.advance(2)
    assert await store.read("v/t1/k/1") == Versioned(b"w", 2)
    assert await store.get("s/t1/k") is None  # never created by it
    await store.expire("s/t1/k", 1, under="v/t1/k/")  # shortened as expire() may
    clock.advance(1)
    assert await store.read("v/t1/k/1") is None


async def test_delete_returns_how_many_of_the_keys_existed(store: SessionStore) -> None:
    await store.set("sess:a", b"1")
    await store.set("sess:b", b"2")
    assert await store.delete("sess:a", "sess:b", "sess:never") == 2
    assert await store.get("sess:a") is None
    assert await store.get("sess:b") is None


async def test_delete_of_nothing_returns_zero(store: SessionStore) -> None:
    assert await store.delete() == 0
    assert await store.delete("sess:never") == 0


async def test_delete_does_not_count_expired_keys(store: SessionStore, clock: FakeClock) -> None:
    await store.set("sess:live", b"1")
    await store.set("sess:gone", b"2", ttl=1)
    clock.advance(1)
    assert await store.delete("sess:live", "sess:gone") == 1


async def test_delete_leaves_other_keys_alone(store: SessionStore) -> None:
    await store.set("sess:a", b"1")
    await store.set("sess:b", b"2")
    await store.delete("sess:a")
    assert await store.get("sess:b") == b"2"


async def test_keys_lists_live_keys_with_the_prefix_sorted(store: SessionStore) -> None:
    for key in ("t1:s:b", "t1:s:a", "t1:s:c", "t2:s:a", "t1:x:a"):
        await store.set(key, b"v")
    assert await store.keys("t1:s:") == ["t1:s:a", "t1:s:b", "t1:s:c"]
    assert await store.keys("") == ["t1:s:a", "t1:s:b", "t1:s:c", "t1:x:a", "t2:s:a"]


async def test_keys_does_not_list_expired_keys(store: SessionStore, clock: FakeClock) -> None:
    await store.set("sess:live", b"1", ttl=100)
    await store.set("sess:gone", b"2", ttl=1)
    clock.advance(1)
    assert await store.keys("sess:") == ["sess:live"]


async def test_a_tenants_listing_sees_only_its_own_live_keys(
    store: SessionStore, clock: FakeClock
) -> None:
    await store.set("session/acme/k1", b"v", ttl=100)
    await store.set("session/acme/k2", b"v", ttl=1)
    await store.set("session/acme/k3", b"v")
    await store.set("session/acme2/k1", b"v")
    await store.set("session/acm/k1", b"v")
    await store.set("site-data/acme/k1", b"v")
    clock.advance(1)
    assert await store.keys("session/acme/") == ["session/acme/k1", "session/acme/k3"]
    assert await store.count("session/acme/") == 2
    assert await store.keys("session/acme") == [
        "session/acme/k1",
        "session/acme/k3",
        "session/acme2/k1",
    ]
    assert await store.count("session/") == 4
    clock.advance(100)
    assert await store.keys("session/acme/") == ["session/acme/k3"]
    assert await store.count("session/acme/") == 1


async def test_count_counts_what_keys_lists(store: SessionStore, clock: FakeClock) -> None:
    for key in ("t1:s:b", "t1:s:a", "t1/s/a", "t1/s/b", "t1/x/a", "t2/s/a", "t1/s/c/d"):
        await store.set(key, b"v", ttl=10 if key.endswith("b") else None)
    await store.delete("t1/s/a")
    clock.advance(10)
    for prefix in ("", "t1", "t1:", "t1/", "t1/s/", "t1/s", "t1/s/c/", "t3/"):
        assert await store.count(prefix) == len(await store.keys(prefix)), prefix
    assert await store.keys("t1/") == ["t1/s/c/d", "t1/x/a"]


async def test_a_key_whose_expiry_was_moved_is_listed_until_the_new_expiry(
    store: SessionStore, clock: FakeClock
) -> None:
    await store.set("session/acme/k1", b"v", ttl=1)
    await store.expire("session/acme/k1", 100)
    clock.advance(50)
    assert await store.keys("session/acme/") == ["session/acme/k1"]
    await store.expire("session/acme/k1", 1)
    clock.advance(1)
    assert await store.keys("session/acme/") == []
    assert await store.count("session/") == 0
    await store.set("session/acme/k1", b"again")  # listed again once written again
    assert await store.keys("session/acme/") == ["session/acme/k1"]


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("a%", ["a%b"]),
        ("a_", ["a_b"]),
        ("a\\", ["a\\b"]),
    ],
    ids=["percent", "underscore", "backslash"],
)
async def test_keys_matches_wildcard_characters_in_the_prefix_literally(
    store: SessionStore, prefix: str, expected: list[str]
) -> None:
    for key in ("a%b", "a_b", "a\\b", "axb", "ab"):
        await store.set(key, b"v")
    assert await store.keys(prefix) == expected


async def test_keys_prefix_is_case_sensitive(store: SessionStore) -> None:
    await store.set("t1:s:a", b"v")
    await store.set("T1:s:b", b"v")
    assert await store.keys("T1:") == ["T1:s:b"]


async def test_keys_lists_every_key_under_the_prefix_and_none_beside_it(
    store: SessionStore,
) -> None:
    # Keys that sort just inside and just outside the prefix, by code point: the last
    # character of "session/a/" moved up is "0"; "\ud7ff" and "\U0010ffff" end the ranges
    # where a next character would be a surrogate or none.
    inside = ["session/a/", "session/a/\x01", "session/a/z", "session/a/\U0010ffff\U0010ffff"]
    beside = [
        "session/a",
        "session/a.",
        "session/a0",
        "session/a0/x",
        "session/b/x",
        "session/a\u00e9",
    ]
    for key in inside + beside + ["w\ud7ff", "w\ud7ffx", "w\ue000", "z\U0010ffff", "z\U0010ffffq"]:
        await store.set(key, b"v")
    assert await store.keys("session/a/") == sorted(inside)
    assert await store.keys("w\ud7ff") == ["w\ud7ff", "w\ud7ffx"]
    assert await store.keys("z\U0010ffff") == ["z\U0010ffff", "z\U0010ffffq"]


async def test_delete_counts_a_key_named_twice_once(store: SessionStore) -> None:
    await store.set("sess:a", b"v")
    assert await store.delete("sess:a", "sess:a") == 1
    assert await store.get("sess:a") is None


async def test_read_many_answers_each_key_in_order_as_read_does(
    store: SessionStore, clock: FakeClock
) -> None:
    await store.set("sess:a", b"\x00a", ttl=10)
    await store.set("sess:b", b"b")
    await store.set("sess:b", b"b2")
    await store.set("sess:gone", b"x", ttl=1)
    clock.advance(5)
    keys = ["sess:b", "sess:missing", "sess:a", "sess:gone", "sess:b"]
    assert await store.read_many(keys) == [await store.read(k) for k in keys]
    assert await store.read_many(keys) == [
        Versioned(b"b2", 2),
        None,
        Versioned(b"\x00a", 1),
        None,
        Versioned(b"b2", 2),
    ]
    assert await store.read_many([]) == []


# --- revisions: a writer never overwrites what another wrote since it read -----------------


async def test_a_first_write_has_revision_one_and_each_set_adds_one(store: SessionStore) -> None:
    assert await store.read("sess:a") is None
    await store.set("sess:a", b"1")
    await store.set("sess:a", b"2")
    assert await store.read("sess:a") == Versioned(b"2", 2)


async def test_write_at_the_revision_read_replaces_the_value(store: SessionStore) -> None:
    assert await store.write("sess:a", b"new", ttl=None, revision=0) == 1
    assert await store.write("sess:a", b"newer", ttl=None, revision=1) == 2
    assert await store.read("sess:a") == Versioned(b"newer", 2)


async def test_write_at_a_stale_revision_changes_nothing(
    store: SessionStore, clock: FakeClock
) -> None:
    await store.write("sess:a", b"mine", ttl=100, revision=0)
    await store.set("sess:a", b"theirs", ttl=100)  # another replica wrote since
    assert await store.write("sess:a", b"stale", ttl=1, revision=1) is None
    assert await store.write("sess:b", b"x", ttl=None, revision=3) is None
    assert await store.read("sess:a") == Versioned(b"theirs", 2)
    assert await store.get("sess:b") is None
    clock.advance(50)  # the refused write's ttl of 1 s was not applied either
    assert await store.get("sess:a") == b"theirs"


async def test_creating_what_another_writer_just_created_is_refused(store: SessionStore) -> None:
    assert await store.write("sess:a", b"first", ttl=None, revision=0) == 1
    assert await store.write("sess:a", b"second", ttl=None, revision=0) is None
    assert await store.get("sess:a") == b"first"


async def test_an_expired_key_counts_as_absent_for_a_write(
    store: SessionStore, clock: FakeClock
) -> None:
    await store.set("sess:a", b"old", ttl=1)
    clock.advance(1)
    assert await store.write("sess:a", b"new", ttl=10, revision=0) is not None
    assert await store.get("sess:a") == b"new"
    clock.advance(10)
    assert await store.get("sess:a") is None


async def test_expire_keeps_the_revision(store: SessionStore) -> None:
    await store.set("sess:a", b"v", ttl=10)
    await store.expire("sess:a", 100)
    assert await store.read("sess:a") == Versioned(b"v", 1)


@pytest.mark.parametrize("backend", DURABLE, ids=ids)
async def test_of_two_concurrent_writes_at_one_revision_exactly_one_wins(
    two: tuple[SessionStore, SessionStore],
) -> None:
    first, second = two
    await first.set("sess:a", b"base")
    results = await asyncio.gather(
        *(
            (first if i % 2 else second).write("sess:a", f"w{i}".encode(), ttl=None, revision=1)
            for i in range(8)
        )
    )
    won = [r for r in results if r is not None]
    assert won == [2]
    winner = results.index(2)
    assert await second.get("sess:a") == f"w{winner}".encode()


@pytest.mark.parametrize("backend", DURABLE, ids=ids)
async def test_of_concurrent_deletes_of_one_key_exactly_one_counts_it(
    two: tuple[SessionStore, SessionStore], clock: FakeClock
) -> None:
    # A live-view ticket is single use because of this: of two redeemers only the one
    # whose delete removed it may win (sitekeep.service.live.LiveSessions.redeem).
    first, second = two
    for round_ in range(10):
        key = f"ticket:{round_}"
        await first.set(key, b"one use", ttl=30)
        counts = await asyncio.gather(*((first if i % 2 else second).delete(key) for i in range(8)))
        assert sorted(counts) == [0] * 7 + [1], counts
    # An expired key is removed by a delete but not counted: it was already gone.
    await first.set("ticket:old", b"one use", ttl=30)
    clock.advance(31)
    assert await second.delete("ticket:old") == 0
    clock.advance(-31)
    assert await first.get("ticket:old") is None


# --- backend-specific: what only some backends promise -----------------------------------


@pytest.mark.parametrize("backend", DURABLE, ids=ids)
async def test_a_durable_store_reopened_on_the_same_url_reads_what_was_written(
    url: str, clock: FakeClock
) -> None:
    first = open_session_store(url, clock)
    await first.set("sess:a", b"\x00kept", ttl=100)
    await first.set("sess:b", b"gone", ttl=1)
    await first.aclose()
    clock.advance(50)
    second = open_session_store(url, clock)
    try:
        assert await second.get("sess:a") == b"\x00kept"
        assert await second.keys("sess:") == ["sess:a"]
        clock.advance(50)
        assert await second.get("sess:a") is None
    finally:
        await second.aclose()


@pytest.fixture
async def raw_redis(url_of: dict[str, str]) -> AsyncIterator[tuple[str, redis.asyncio.Redis]]:
    """The Redis store's URL, and a plain client to look under it (keys: its prefix + key)."""
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    yield url_of["redis"], client
    await client.aclose()


def _prefix(url: str) -> str:
    return url.split("prefix=")[1]


async def test_redis_lets_the_server_expire_keys_natively(
    raw_redis: tuple[str, redis.asyncio.Redis],
) -> None:
    """The value and its native TTL are written at once (no set-then-expire)."""
    url, client = raw_redis
    store, prefix = open_session_store(url), _prefix(url)
    try:
        await store.set("sess:a", b"v", ttl=30)
        await store.write("sess:b", b"v", ttl=60, revision=0)
        await store.set("sess:c", b"v")
        assert 0 < await client.pttl(prefix + "sess:a") <= 30_000
        assert 30_000 < await client.pttl(prefix + "sess:b") <= 60_000
        assert await client.pttl(prefix + "sess:c") == -1
        await store.expire("sess:c", 5)
        assert 0 < await client.pttl(prefix + "sess:c") <= 5_000
    finally:
        await store.aclose()


async def test_redis_lists_a_tenant_from_its_index_without_scanning(
    raw_redis: tuple[str, redis.asyncio.Redis], clock: FakeClock
) -> None:
    """A tenant's listing reads that tenant's index, never the key space: a record the
    index does not hold is not listed; an expired member is left out, and pruned from the
    index once Redis dropped its hash."""
    url, client = raw_redis
    store, prefix = open_session_store(url, clock), _prefix(url)
    try:
        await store.set("session/acme/k1", b"v")
        await store.set("session/acme/k2", b"v", ttl=1)
        await store.set("session/other/k1", b"v")
        assert await store.count("session/") == 3  # (the index is now marked complete)
        await client.hset(prefix + "session/acme/stray", mapping={"v": b"v", "r": 1})
        clock.advance(1)
        assert await store.keys("session/acme/") == ["session/acme/k1"]
        index = prefix.encode() + b"\xffgroup:session/acme/"
        assert await client.zrange(index, 0, -1) == [b"session/acme/k2", b"session/acme/k1"]
        await client.delete(prefix + "session/acme/k2")  # as Redis's own expiry does
        assert await store.keys("session/acme/") == ["session/acme/k1"]
        assert await client.zrange(index, 0, -1) == [b"session/acme/k1"]
        await store.delete("session/acme/k1")
        assert await client.exists(index) == 0
        assert await client.zrange(prefix.encode() + b"\xffgroups", 0, -1) == [b"session/other/"]
    finally:
        await store.aclose()


async def test_redis_a_replica_whose_clock_runs_ahead_never_prunes_a_live_key_from_the_index(
    raw_redis: tuple[str, redis.asyncio.Redis], clock: FakeClock
) -> None:
    """Replicas' clocks differ. One running 60 s ahead sees a key as expired before the
    others do (its own reads and listings leave it out), but its listing must not drop the
    key from the shared index while Redis still holds the hash: the hash's native TTL, kept
    by the server's clock, says when it is gone."""
    url, client = raw_redis
    prefix = _prefix(url)
    ahead = FakeClock(clock() + 60)
    writer, skewed = open_session_store(url, clock), open_session_store(url, ahead)
    try:
        await writer.set("session/acme/k1", b"v", ttl=30)
        await writer.set("session/acme/k2", b"v", ttl=300)
        assert await skewed.keys("session/acme/") == ["session/acme/k2"]
        assert await skewed.count("session/") == 1
        assert await writer.keys("session/acme/") == ["session/acme/k1", "session/acme/k2"]
        assert await writer.count("session/") == 2
        await client.delete(prefix + "session/acme/k1")  # as Redis's own expiry does
        assert await skewed.count("session/") == 1
        index = prefix.encode() + b"\xffgroup:session/acme/"
        assert await client.zrange(index, 0, -1) == [b"session/acme/k2"]
    finally:
        await writer.aclose()
        await skewed.aclose()


async def test_redis_indexes_records_written_before_the_index_once(
    raw_redis: tuple[str, redis.asyncio.Redis], clock: FakeClock
) -> None:
    url, client = raw_redis
    prefix, now = _prefix(url), clock()
    await client.hset(prefix + "session/acme/old", mapping={"v": b"v", "r": 1})
    await client.hset(prefix + "session/acme/gone", mapping={"v": b"v", "r": 1, "x": repr(now + 1)})
    await client.set(prefix + "lock:session/acme/old", b"a lease, not a record")
    store = open_session_store(url, clock)
    try:
        clock.advance(1)
        assert await store.keys("session/") == ["session/acme/old"]
        await client.hset(prefix + "session/acme/later", mapping={"v": b"v", "r": 1})
        again = open_session_store(url, clock)  # the marker says: done once
        assert await again.keys("session/") == ["session/acme/old"]
        await again.aclose()
    finally:
        await store.aclose()


async def test_redis_calls_past_the_pool_size_wait_for_a_connection_and_all_succeed(
    raw_redis: tuple[str, redis.asyncio.Redis],
) -> None:
    """A burst of more concurrent calls than the connection pool holds queues for the
    pool's connections instead of failing (each call needs one for its round trip)."""
    url, _ = raw_redis
    store = open_session_store(url + "&max_connections=4")
    try:
        await store.set("sess:a", b"v")
        assert await asyncio.gather(*(store.get("sess:a") for _ in range(60))) == [b"v"] * 60
        await asyncio.gather(*(store.set(f"sess:{i}", b"w", ttl=60) for i in range(60)))
        assert await store.count("sess:") == 61
    finally:
        await store.aclose()


async def test_redis_a_call_that_waits_past_the_pool_timeout_is_a_503_store_unavailable(
    raw_redis: tuple[str, redis.asyncio.Redis],
) -> None:
    """Every pooled connection busy for longer than the pool's timeout: the call fails
    with the store-unavailable error (HTTP 503) saying so, and works again once one is
    free."""
    url, _ = raw_redis
    parsed = parse_store_url(url + "&max_connections=2&timeout=0.2", "S", allowed=("redis",))
    client = connect(parsed.url)
    store = RedisStore(client, parsed.prefix)
    try:
        await store.set("sess:a", b"v")
        held = [await client.connection_pool.get_connection() for _ in range(2)]
        with pytest.raises(StoreUnavailable) as caught:
            await store.get("sess:a")
        assert "no free Redis connection" in caught.value.message
        assert status_of(caught.value) == 503
        assert json.loads(error_response(caught.value).body)["error"]["type"] == (
            "store_unavailable"
        )
        for conn in held:
            await client.connection_pool.release(conn)
        assert await store.get("sess:a") == b"v"
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    "bad", ["redis-ish://x", "mysql://x", "", "/tmp/s.db", "sqlite://", "sqlite:///"]
)
def test_an_unknown_session_store_url_is_invalid_input_naming_the_setting(bad: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        open_session_store(bad)
    assert caught.value.field == "SITEKEEP_SESSION_STORE"
