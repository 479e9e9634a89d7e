"""The ``SessionStore`` contract (``sitekeep.stores.base``), run against every backend.

Each backend is opened by URL through ``open_session_store`` with a controllable clock, so
expiry is tested by moving time, never by sleeping. To add a backend (``redis://``,
``postgresql://``), add one ``Backend`` to ``BACKENDS``: every contract test runs on it. A
networked backend's ``url`` must hand each test an empty store (its own database, schema or
key namespace), and its expiry must follow the clock it is given.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sitekeep.errors import InvalidInput
from sitekeep.model import Principal
from sitekeep.stores import SessionStore, open_session_store
from sitekeep.stores.sql import TokenStore

pytestmark = pytest.mark.anyio


class FakeClock:
    """Seconds since the epoch that move only when a test says so."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Backend:
    """How to reach one backend: a name for the test id and its URL for a temp dir."""

    name: str
    url: Callable[[Path], str]
    durable: bool = False
    """Whether a second store on the same URL sees what the first wrote."""


BACKENDS = [
    Backend("memory", lambda _tmp: "memory://"),
    Backend("sqlite", lambda tmp: f"sqlite:///{tmp}/s.db", durable=True),
]


@pytest.fixture(params=BACKENDS, ids=lambda b: b.name)
def backend(request: pytest.FixtureRequest) -> Backend:
    backend: Backend = request.param
    return backend


@pytest.fixture
def clock() -> FakeClock:
    # Starts at the real time so a backend that stores absolute expiry times stays sane.
    return FakeClock(time.time())


@pytest.fixture
async def store(backend: Backend, tmp_path: Path, clock: FakeClock) -> AsyncIterator[SessionStore]:
    opened = open_session_store(backend.url(tmp_path), clock)
    yield opened
    await opened.aclose()


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


async def test_delete_counts_a_key_named_twice_once(store: SessionStore) -> None:
    await store.set("sess:a", b"v")
    assert await store.delete("sess:a", "sess:a") == 1
    assert await store.get("sess:a") is None


# --- backend-specific: what only some backends promise -----------------------------------


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.durable], ids=lambda b: b.name)
async def test_a_durable_store_reopened_on_the_same_url_reads_what_was_written(
    backend: Backend, tmp_path: Path, clock: FakeClock
) -> None:
    url = backend.url(tmp_path)
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


@pytest.mark.parametrize("url", ["redis-ish://x", "mysql://x", "", "/tmp/s.db"])
def test_an_unknown_session_store_url_is_invalid_input_naming_the_setting(url: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        open_session_store(url)
    assert caught.value.field == "SITEKEEP_SESSION_STORE"


# --- TokenStore (sqlite) ------------------------------------------------------------------


@pytest.fixture
def tokens(tmp_path: Path, clock: FakeClock) -> Iterator[TokenStore]:
    store = TokenStore(f"sqlite:///{tmp_path}/db.sqlite", clock)
    yield store
    store.close()


async def test_a_created_token_resolves_to_its_principal(tokens: TokenStore) -> None:
    token = tokens.create("tenant-1", "agent@example.test", "admin")
    assert token.startswith("sk_")
    assert len(token) > 40
    assert await tokens.resolve(token) == Principal("tenant-1", "agent@example.test", "admin")


async def test_each_create_issues_a_different_token(tokens: TokenStore) -> None:
    first = tokens.create("t1", "agent", "member")
    second = tokens.create("t1", "agent", "member")
    assert first != second
    assert await tokens.resolve(first) == await tokens.resolve(second)


async def test_an_unknown_token_resolves_to_none(tokens: TokenStore) -> None:
    tokens.create("t1", "agent", "member")
    assert await tokens.resolve("sk_not-a-real-token") is None
    assert await tokens.resolve("") is None


def test_only_the_sha256_of_a_token_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    store = TokenStore(f"sqlite:///{path}")
    token = store.create("t1", "agent", "member")
    store.close()
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("db."))
    assert token.encode() not in on_disk
    assert token.removeprefix("sk_").encode() not in on_disk
    with sqlite3.connect(path) as conn:
        (stored,) = conn.execute("SELECT token_hash FROM tokens").fetchone()
    assert stored == hashlib.sha256(token.encode()).hexdigest()


@pytest.mark.parametrize(
    ("tenant", "subject", "field"),
    [
        ("", "agent", "tenant"),
        ("t 1", "agent", "tenant"),
        ("t1", "", "subject"),
        ("t1", "agent/../x", "subject"),
        ("t1", "a" * 129, "subject"),
    ],
)
def test_a_bad_tenant_or_subject_is_invalid_input_naming_the_field(
    tokens: TokenStore, tenant: str, subject: str, field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        tokens.create(tenant, subject, "member")
    assert caught.value.field == field
