"""The ``ProfileStore`` and ``ProxyStore`` ports (SPEC §9, §14) on every SQL backend
(memory, SQLite, the real PostgreSQL): rows as given, per tenant, the sealed blob swapped
only over the envelope it replaces; a profile's versions (issue #26) kept with a capture,
the newest few, and gone with the profile."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sitekeep.stores.base import ProfileRow, ProfileVersionRow, ProxyRow
from sitekeep.stores.database import Database
from sitekeep.stores.profiles import SqlProfileStore, SqlProxyStore

from .conftest import SQL_BACKENDS, ids

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("backend", SQL_BACKENDS, ids=ids)]

ROW = ProfileRow(
    tenant="t1",
    id="p1",
    name="staging admin",
    visibility="private",
    country="de",
    cookie_domains=("app.example.test", "example.test"),
    created_by="ada",
    created_at=1_700_000_000.0,
    updated_at=1_700_000_001.5,
    captured_at=1_700_000_001.5,
    expires_at=1_700_086_400.0,
    sealed=b'{"v":1,"kid":"k","nonce":"n","ct":"c"}',
)


@pytest.fixture
def profiles(database: Database) -> SqlProfileStore:
    return SqlProfileStore(database)


@pytest.fixture
def proxies(database: Database) -> SqlProxyStore:
    return SqlProxyStore(database)


async def test_a_profile_row_comes_back_as_it_was_put(profiles: SqlProfileStore) -> None:
    await profiles.put(ROW)
    assert await profiles.get("t1", "p1") == ROW
    blank = replace(
        ROW,
        id="p2",
        country=None,
        cookie_domains=(),
        captured_at=None,
        expires_at=None,
        sealed=None,
    )
    await profiles.put(blank)
    assert await profiles.get("t1", "p2") == blank


async def test_put_replaces_the_row_of_its_tenant_and_id(profiles: SqlProfileStore) -> None:
    await profiles.put(ROW)
    await profiles.put(replace(ROW, name="renamed", visibility="workspace"))
    assert await profiles.get("t1", "p1") == replace(ROW, name="renamed", visibility="workspace")
    assert len(await profiles.list("t1")) == 1


async def test_profiles_of_one_tenant_stay_out_of_another(profiles: SqlProfileStore) -> None:
    await profiles.put(ROW)
    await profiles.put(replace(ROW, tenant="t2", name="theirs"))
    assert await profiles.get("t3", "p1") is None
    assert [r.name for r in await profiles.list("t1")] == ["staging admin"]
    assert [r.tenant for r in await profiles.list(None)] == ["t1", "t2"]
    assert await profiles.delete("t1", "p1") is True
    assert await profiles.delete("t1", "p1") is False
    assert (await profiles.get("t2", "p1")) is not None


async def test_list_is_sorted_by_name(profiles: SqlProfileStore) -> None:
    for ident, name in (("a", "zeta"), ("b", "alpha"), ("c", "mid")):
        await profiles.put(replace(ROW, id=ident, name=name))
    assert [r.name for r in await profiles.list("t1")] == ["alpha", "mid", "zeta"]


async def test_swap_sealed_replaces_only_the_envelope_it_was_given(
    profiles: SqlProfileStore,
) -> None:
    await profiles.put(ROW)
    assert ROW.sealed is not None
    assert await profiles.swap_sealed("t1", "p1", b"not what is there", b"new") is False
    assert (await profiles.get("t1", "p1")) == ROW
    assert await profiles.swap_sealed("t1", "p1", ROW.sealed, b"new") is True
    assert (await profiles.get("t1", "p1")) == replace(ROW, sealed=b"new")
    assert await profiles.swap_sealed("t1", "absent", b"new", b"newer") is False


def _version(n: int, profile: str = "p1", tenant: str = "t1") -> ProfileVersionRow:
    return ProfileVersionRow(tenant, profile, f"v{n:02d}", 1_700_000_000.0 + n, b"sealed-%d" % n)


async def test_put_over_writes_only_over_the_envelope_it_read_and_keeps_the_version(
    profiles: SqlProfileStore,
) -> None:
    await profiles.put(replace(ROW, sealed=None))
    first = replace(ROW, sealed=b"first")
    assert await profiles.put_over(first, over=b"not there", version=_version(1), keep=3) is False
    assert (await profiles.get("t1", "p1")) == replace(ROW, sealed=None)
    assert await profiles.versions("t1", "p1") == []  # nothing written, not even the version
    assert await profiles.put_over(first, over=None) is True
    second = replace(ROW, sealed=b"second", name="renamed meanwhile")
    assert await profiles.put_over(second, over=b"first", version=_version(1), keep=3) is True
    assert (await profiles.get("t1", "p1")) == second
    assert await profiles.versions("t1", "p1") == [_version(1)]
    assert await profiles.version("t1", "p1", "v01") == _version(1)
    assert await profiles.version("t1", "p1", "v02") is None
    assert await profiles.version("t2", "p1", "v01") is None  # another tenant's: none
    gone = replace(ROW, id="absent")
    assert await profiles.put_over(gone, over=None, version=_version(9, "absent"), keep=3) is False
    assert await profiles.get("t1", "absent") is None
    assert await profiles.versions("t1", "absent") == []


async def test_only_the_newest_versions_are_kept_newest_first(profiles: SqlProfileStore) -> None:
    await profiles.put(replace(ROW, sealed=b"s0"))
    for n in range(1, 6):
        row = replace(ROW, sealed=b"s%d" % n)
        assert await profiles.put_over(row, over=b"s%d" % (n - 1), version=_version(n), keep=3)
    assert [v.id for v in await profiles.versions("t1", "p1")] == ["v05", "v04", "v03"]
    assert await profiles.put_over(replace(ROW, sealed=b"s6"), over=b"s5", version=_version(6))
    assert [v.id for v in await profiles.versions("t1", "p1")] == ["v05", "v04", "v03"]  # keep 0


async def test_versions_go_with_their_profile_and_stay_out_of_others(
    profiles: SqlProfileStore,
) -> None:
    for tenant, ident in (("t1", "p1"), ("t1", "p2"), ("t2", "p1")):
        await profiles.put(replace(ROW, tenant=tenant, id=ident, sealed=b"s0"))
        row = replace(ROW, tenant=tenant, id=ident, sealed=b"s1")
        assert await profiles.put_over(row, over=b"s0", version=_version(1, ident, tenant), keep=2)
    assert [v.profile for v in await profiles.versions("t1", "p2")] == ["p2"]
    assert [(v.tenant, v.profile) for v in await profiles.every_version()] == [
        ("t1", "p1"),
        ("t1", "p2"),
        ("t2", "p1"),
    ]
    assert await profiles.delete("t1", "p1") is True
    assert await profiles.versions("t1", "p1") == []
    assert [(v.tenant, v.profile) for v in await profiles.every_version()] == [
        ("t1", "p2"),
        ("t2", "p1"),
    ]


async def test_swap_version_sealed_replaces_only_the_envelope_it_was_given(
    profiles: SqlProfileStore,
) -> None:
    await profiles.put(replace(ROW, sealed=b"s0"))
    await profiles.put_over(replace(ROW, sealed=b"s1"), over=b"s0", version=_version(1), keep=2)
    assert await profiles.swap_version_sealed("t1", "p1", "v01", b"other", b"new") is False
    assert await profiles.swap_version_sealed("t1", "p1", "v01", b"sealed-1", b"new") is True
    assert await profiles.version("t1", "p1", "v01") == replace(_version(1), sealed=b"new")
    assert await profiles.swap_version_sealed("t1", "p1", "v09", b"new", b"newer") is False


async def test_proxy_rows_per_tenant_put_get_list_delete(proxies: SqlProxyStore) -> None:
    de = ProxyRow("t1", "berlin", "de", "http://127.0.0.1:3128", "proxy-login", 1.0)
    fr = ProxyRow("t1", "after", "fr", "http://127.0.0.1:3129", None, 2.0)
    await proxies.put(de)
    await proxies.put(fr)
    await proxies.put(replace(de, tenant="t2"))
    assert await proxies.get("t1", "berlin") == de
    assert [p.name for p in await proxies.list("t1")] == ["after", "berlin"]
    await proxies.put(replace(de, country="at"))
    assert (await proxies.get("t1", "berlin")) == replace(de, country="at")
    assert await proxies.delete("t1", "berlin") is True
    assert await proxies.get("t1", "berlin") is None
    assert await proxies.get("t2", "berlin") == replace(de, tenant="t2")
