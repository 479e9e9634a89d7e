"""A session's snapshot versions (issue #26) on every session-store backend — memory,
SQLite, the real PostgreSQL and the real Redis — through ``Records``, the one place a
snapshot is put: each put keeps the snapshot it replaces, sealed, the newest
``SITEKEEP_VERSIONS``; they expire with the record and go with the snapshot, the session
and a forgotten host. Time moves by a controllable clock, never by sleeping."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from sitekeep.config import Settings
from sitekeep.errors import StoreUnavailable
from sitekeep.model import Cookie, OriginStorage, SessionRecord, SiteData
from sitekeep.seam.records import Records
from sitekeep.stores import SessionStore, open_sessions
from sitekeep.stores.cipher import Cipher

from .conftest import FakeClock

pytestmark = pytest.mark.anyio

TTL = 100.0
APP = "http://app.example.test"
IDP = "http://id.example.test"


def snapshot(n: int, *, idp: bool = True) -> SiteData:
    cookies = [Cookie("sid", f"dummy-sid-{n}", "app.example.test", http_only=True)]
    origins = {APP: OriginStorage({"token": f"dummy-token-{n}"})}
    if idp:
        cookies.append(Cookie("idp", f"dummy-idp-{n}", "id.example.test"))
        origins[IDP] = OriginStorage({"k": f"dummy-k-{n}"})
    return SiteData(cookies=tuple(cookies), origins=origins, saved_at=1_000.0 + n)


Make = Callable[..., Records]


@pytest.fixture
async def make(url: str, clock: FakeClock, tmp_path: Path) -> AsyncIterator[Make]:
    """``make(versions=N)``: Records over one store of the backend, as each replica's."""
    store, locks = open_sessions(url, clock)
    cipher = Cipher(bytes(range(32)))

    def made(versions: int = 3) -> Records:
        settings = Settings(data_dir=tmp_path, session_ttl=TTL, versions=versions)
        # No mask is read here: the vault is never asked.
        return Records(settings, store, locks, cipher, None, clock)  # type: ignore[arg-type]

    yield made
    await locks.aclose()
    await store.aclose()


async def saved(records: Records, *values: int, key: str = "s1") -> None:
    for n in values:
        await records.put_snapshot("t1", key, snapshot(n))


async def kept(records: Records, key: str = "s1") -> list[str]:
    """The value of each version's ``sid`` cookie, newest first."""
    return [s.cookies[0].value for _, s in await records.versions.load_all("t1", key)]


async def put_record(records: Records, key: str = "s1") -> None:
    async with records.held("t1", key):
        await records.load("t1", key)  # the revision the write goes over
        await records.put(SessionRecord("t1", key, "ada", "chromium", 0.0, 0.0))


async def test_each_put_keeps_the_snapshot_it_replaces_newest_first_only_the_last_n(
    make: Make,
) -> None:
    records = make(versions=3)
    await saved(records, 1)
    assert await kept(records) == []  # nothing was replaced
    await saved(records, 2, 3, 4, 5)
    assert await kept(records) == ["dummy-sid-4", "dummy-sid-3", "dummy-sid-2"]
    current = await records.load_snapshot("t1", "s1")
    assert current is not None and current.cookies[0].value == "dummy-sid-5"
    ids = await records.versions.ids("t1", "s1")
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 3
    newest = await records.versions.load("t1", "s1", ids[0])
    assert newest == snapshot(4)  # as it was saved, saved_at and all
    assert await records.versions.load("t1", "s1", "v0000000000001-0000") is None


async def test_versions_are_sealed_for_their_place_and_hold_no_value_in_the_clear(
    make: Make,
) -> None:
    records = make()
    await saved(records, 1, 2)
    await saved(records, 1, key="s2")
    [where] = await records.store.keys("site-data-version/t1/s1/")
    raw = await records.store.get(where)
    assert raw is not None and b"dummy" not in raw and b"app.example.test" not in raw
    moved = where.replace("/s1/", "/s2/")  # another session of the tenant
    await records.store.set(moved, raw)
    with pytest.raises(StoreUnavailable):
        await records.versions.load("t1", "s2", where.rsplit("/", 1)[1])


async def test_none_are_kept_with_zero_and_a_save_then_drops_those_kept_before(
    make: Make,
) -> None:
    await saved(make(versions=3), 1, 2, 3)
    none = make(versions=0)
    assert len(await kept(none)) == 2
    await saved(none, 4)
    assert await kept(none) == []
    assert await none.store.keys("site-data-version/") == []


async def test_versions_expire_with_the_record_and_live_as_long_as_it(
    make: Make, clock: FakeClock
) -> None:
    records = make()
    await put_record(records)
    await saved(records, 1, 2)
    clock.advance(TTL * 0.9)
    await put_record(records)  # a use of the session: its snapshot and versions live on
    clock.advance(TTL * 0.9)
    assert await kept(records) == ["dummy-sid-1"]
    assert await records.load("t1", "s1") is not None
    clock.advance(TTL * 0.1)
    assert await records.load("t1", "s1") is None
    assert await records.load_snapshot("t1", "s1") is None
    assert await kept(records) == []


async def test_deleting_the_snapshot_or_the_session_deletes_its_versions_only(
    make: Make,
) -> None:
    records = make()
    for key in ("s1", "s2", "s3"):
        await put_record(records, key)
        await saved(records, 1, 2, 3, key=key)
    assert await records.delete_snapshot("t1", "s1") == 2
    assert await kept(records, "s1") == [] and await records.load_snapshot("t1", "s1") is None
    await records.delete("t1", "s2")
    assert await kept(records, "s2") == [] and await records.load("t1", "s2") is None
    assert await kept(records, "s3") == ["dummy-sid-2", "dummy-sid-1"]
    assert await records.delete_snapshot("t1", "s9") == 0


async def test_forget_removes_the_host_from_every_version_and_drops_one_left_empty(
    make: Make,
) -> None:
    records = make()
    await records.put_snapshot("t1", "s1", SiteData(cookies=snapshot(1).cookies[1:]))
    await saved(records, 2, 3)
    store: SessionStore = records.store
    before = set(await store.keys("site-data-version/"))
    assert await records.versions.holding("t1", "s1", "id.example.test")
    assert await records.versions.forget_host("t1", "s1", "id.example.test") == 2
    left = await records.versions.load_all("t1", "s1")
    assert [s.cookies[0].value for _, s in left] == ["dummy-sid-2"]  # the idp-only one went
    [(_, version)] = left
    assert [c.domain for c in version.cookies] == ["app.example.test"]
    assert set(version.origins) == {APP} and version.saved_at == snapshot(2).saved_at
    assert len(before) == 2 and len(set(await store.keys("site-data-version/"))) == 1
    assert not await records.versions.holding("t1", "s1", "id.example.test")
    assert await records.versions.forget_host("t1", "s1", "id.example.test") == 0
