"""Versions of a snapshot (issue #26): the pure rules (ids, what a listing shows — never a
value), and a profile's versions through its gate over a real SQL store (in memory): each
write keeps what it replaces, a write landing meanwhile is kept too, a restore is undone
by the version it keeps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sitekeep.errors import Forbidden, InvalidInput, NotFound
from sitekeep.model import Cookie, OriginStorage, Principal, SessionStorage, SiteData
from sitekeep.profiles import GatedProfiles
from sitekeep.stores import open_database
from sitekeep.stores.cipher import Cipher
from sitekeep.stores.database import Database
from sitekeep.stores.profiles import SqlProfileStore
from sitekeep.versions import check_id, host_sizes, kept_at, new_id, summary

pytestmark = pytest.mark.anyio

APP = "http://app.example.test"
ADA = Principal("t1", "ada", "admin")
BOB = Principal("t1", "bob", "member")


def data(n: int) -> SiteData:
    return SiteData(
        cookies=(
            Cookie("sid", f"dummy-{n}", "app.example.test", http_only=True),
            Cookie("pref", "é", ".example.test"),
        ),
        origins={APP: OriginStorage({"token": "dummy-token", "lone": "x\ud800"})},
        session=SessionStorage(APP, {"cart": "12"}),
        saved_at=1_000.0 + n,
    )


def test_an_id_says_when_it_was_kept_and_ids_sort_as_kept_whatever_the_clock() -> None:
    first = new_id(1_700_000_000.1234)
    assert check_id(first) == first and kept_at(first) == 1_700_000_000.123
    same_ms = new_id(1_700_000_000.1234, after=kept_at(first))
    earlier_clock = new_id(1_600_000_000.0, after=kept_at(same_ms))
    assert first < same_ms < earlier_clock  # strictly after, never beside
    assert kept_at(earlier_clock) == pytest.approx(1_700_000_000.125)


@pytest.mark.parametrize(
    "bad", ["", "v1", "v1700000000123-12345", "V1700000000123-abcd", "../../x", 7, None]
)
def test_a_malformed_id_is_invalid_input_naming_the_field_without_echoing_it(bad: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_id(bad, field="version")
    assert caught.value.field == "version"
    assert str(bad) not in caught.value.message or bad in ("", "v1")


def test_a_summary_gives_hosts_counts_and_sizes_and_never_a_value() -> None:
    snapshot = data(1)
    ident = new_id(2_000.0)
    shown = summary(ident, snapshot)
    assert "dummy" not in repr(shown) and "12" not in repr(shown["hosts"])
    assert shown["id"] == ident and shown["kept_at"] == 2_000.0 and shown["saved_at"] == 1_001.0
    assert shown["sign_in"] == {}
    [app] = shown["hosts"]  # the parent-domain cookie is shared under the host it covers
    assert app == {
        "site": "app.example.test",
        "cookies": 1,
        "shared_cookies": 1,
        "local": 2,
        "session": 1,
        "cookie_bytes": len("sid") + len("dummy-1") + len("pref") + len("é".encode()),
        "local_bytes": len("token") + len("dummy-token") + len("lone") + 4,  # x + surrogate
        "session_bytes": len("cart") + len("12"),
    }
    assert shown["bytes"] > sum(h.cookie_bytes + h.local_bytes for h in host_sizes(snapshot))


@pytest.fixture
def database() -> Iterator[Database]:
    db = open_database("memory://")
    yield db
    db.dispose()


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1
        return self.now


@pytest.fixture
def profiles(database: Database) -> GatedProfiles:
    return GatedProfiles(SqlProfileStore(database), Cipher(bytes(range(32))), Clock(), versions=3)


async def values(profiles: GatedProfiles, ident: str) -> list[str]:
    return [d.cookies[0].value for _, d in await profiles.versions(ADA, ident)]


async def test_each_write_keeps_what_it_replaces_newest_first_and_only_the_last_n(
    profiles: GatedProfiles,
) -> None:
    row = await profiles.create(ADA, "staging")
    for n in range(1, 6):
        await profiles.write(ADA, row.id, data(n))
    assert await values(profiles, row.id) == ["dummy-4", "dummy-3", "dummy-2"]
    loaded = await profiles.load(ADA, row.id, "use")
    assert loaded.site_data == data(5)


async def test_a_write_landing_meanwhile_is_kept_as_a_version_never_lost(
    profiles: GatedProfiles, database: Database
) -> None:
    row = await profiles.create(ADA, "staging")
    await profiles.write(ADA, row.id, data(1))
    store = profiles._store
    real = store.put_over
    landed: list[bool] = []

    async def another_write_first(*args: object, **kw: object) -> bool:
        if not landed:  # another replica's capture lands between this one's read and write
            landed.append(True)
            other = GatedProfiles(store, profiles._cipher, Clock(), versions=3)
            await other.write(ADA, row.id, data(2))
        return await real(*args, **kw)  # type: ignore[arg-type]

    store.put_over = another_write_first  # type: ignore[method-assign]
    await profiles.write(ADA, row.id, data(3))
    assert landed and await values(profiles, row.id) == ["dummy-2", "dummy-1"]
    assert (await profiles.load(ADA, row.id, "use")).site_data == data(3)


async def test_a_restore_makes_a_version_current_and_keeps_what_it_replaced(
    profiles: GatedProfiles,
) -> None:
    row = await profiles.create(ADA, "staging", visibility="workspace")
    await profiles.write(ADA, row.id, data(1))
    await profiles.write(ADA, row.id, data(2))
    [(first, _)] = await profiles.versions(ADA, row.id)
    restored, was = await profiles.restore_version(ADA, row.id, first)
    assert (await profiles.load(ADA, row.id, "use")).site_data == data(1) == was
    assert restored.captured_at is not None
    assert await values(profiles, row.id) == ["dummy-2", "dummy-1"]
    assert await values(profiles, row.id) == [  # a member may read them, not restore one
        d.cookies[0].value for _, d in await profiles.versions(BOB, row.id)
    ]
    with pytest.raises(Forbidden):
        await profiles.restore_version(BOB, row.id, first)


async def test_an_unknown_or_malformed_version_names_the_field_and_changes_nothing(
    profiles: GatedProfiles,
) -> None:
    row = await profiles.create(ADA, "staging")
    await profiles.write(ADA, row.id, data(1))
    await profiles.write(ADA, row.id, data(2))
    for bad, error in (("v0000000000001-0000", NotFound), ("nope", InvalidInput)):
        with pytest.raises(error) as caught:
            await profiles.restore_version(ADA, row.id, bad)
        assert caught.value.field == "version"
    assert await values(profiles, row.id) == ["dummy-1"]
    assert (await profiles.load(ADA, row.id, "use")).site_data == data(2)
    with pytest.raises(NotFound) as gone:  # another's private profile is never found
        await profiles.versions(BOB, row.id)
    assert gone.value.field == "id"


def test_a_version_lists_the_sign_in_state_its_save_recorded_as_json() -> None:
    from sitekeep.model import SignIn

    judged = SignIn("signed_in", {"source": "heuristic", "cookies": ["sid"]}, 1_700_000_000.0)
    snapshot = SiteData(cookies=(), sign_in={"app.example.test": judged})
    listed = summary(new_id(1_700_000_100.0), snapshot)
    assert listed["sign_in"] == {
        "app.example.test": {
            "state": "signed_in",
            "evidence": {"source": "heuristic", "cookies": ["sid"]},
            "at": 1_700_000_000.0,
        }
    }
    assert summary(new_id(1_700_000_100.0), SiteData())["sign_in"] == {}
