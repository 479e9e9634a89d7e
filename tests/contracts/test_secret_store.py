"""The ``SecretStore`` contract (``sitekeep.stores.secrets``, SPEC §7, §12).

Run on a real SQLite file per test. To add a backend (``postgresql://``), add its URL maker
to ``BACKENDS``; the byte-level checks (``test_the_database_files_hold_no_value``, the moved
blob) read and write the SQLite file directly and need their own way in for another backend.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sitekeep.errors import InvalidInput, NotFound, StoreUnavailable
from sitekeep.secrets import SecretInfo
from sitekeep.stores.cipher import Cipher
from sitekeep.stores.secrets import SecretStore

KEY = bytes(range(32))
USER = "dummy-user-c01d"
PASS = "dummy-pass-7f3a"
GITHUB: dict[str, Any] = {
    "description": "the staging admin login",
    "hosts": ["github.com", "*.github.com"],
    "values": {"username": USER, "password": PASS},
}

BACKENDS: dict[str, Callable[[Path], str]] = {
    "sqlite": lambda tmp: f"sqlite:///{tmp}/sitekeep.db",
}


class Clock:
    """Seconds since the epoch that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=sorted(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return BACKENDS[request.param](tmp_path)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(url: str, clock: Clock) -> Iterator[SecretStore]:
    opened = SecretStore(url, Cipher(KEY), clock)
    yield opened
    opened.close()


def put(store: SecretStore, name: str = "github", tenant: str = "t1", **over: Any) -> SecretInfo:
    args = {**GITHUB, **over}
    return store.put_sync(tenant, name, args["description"], args["hosts"], args["values"])


def test_put_answers_the_info_and_never_the_values(store: SecretStore, clock: Clock) -> None:
    info = put(store)
    assert info == SecretInfo(
        name="github",
        description="the staging admin login",
        hosts=("github.com", "*.github.com"),
        keys=("username", "password"),
        updated_at=clock.now,
    )
    assert PASS not in repr(info) and USER not in repr(info)


def test_get_info_and_list_give_what_put_stored(store: SecretStore) -> None:
    put(store, "zeta")
    stored = put(store, "alpha", hosts=["App.Example.test"])
    put(store, "mid")
    assert store.get_info_sync("t1", "alpha") == stored
    assert stored.hosts == ("app.example.test",)
    assert [info.name for info in store.list_sync("t1")] == ["alpha", "mid", "zeta"]
    assert store.list_sync("t1")[0] == stored


def test_reveal_gives_each_value_under_its_key(store: SecretStore) -> None:
    put(store)
    assert store.reveal_sync("t1", "github", "username") == USER
    assert store.reveal_sync("t1", "github", "password") == PASS


def test_a_second_put_replaces_everything(store: SecretStore, clock: Clock) -> None:
    put(store)
    clock.now += 60
    info = put(
        store, description="rotated", hosts=["git.example.test"], values={"token": "dummy-tok"}
    )
    assert info.updated_at == clock.now
    assert store.get_info_sync("t1", "github") == info
    assert store.reveal_sync("t1", "github", "token") == "dummy-tok"
    with pytest.raises(InvalidInput):
        store.reveal_sync("t1", "github", "password")
    assert len(store.list_sync("t1")) == 1


def test_delete_says_whether_it_existed_and_the_secret_is_gone(store: SecretStore) -> None:
    put(store)
    put(store, "other")
    assert store.delete_sync("t1", "github") is True
    assert store.delete_sync("t1", "github") is False
    assert [info.name for info in store.list_sync("t1")] == ["other"]
    for read in (
        lambda: store.get_info_sync("t1", "github"),
        lambda: store.reveal_sync("t1", "github", "password"),
    ):
        with pytest.raises(NotFound) as caught:
            read()
        assert (caught.value.kind, caught.value.name) == ("secret", "github")


def test_an_unknown_secret_is_not_found(store: SecretStore) -> None:
    assert store.list_sync("t1") == []
    with pytest.raises(NotFound):
        store.get_info_sync("t1", "nope")
    with pytest.raises(NotFound):
        store.reveal_sync("t1", "nope", "password")
    assert store.delete_sync("t1", "nope") is False


def test_one_tenant_never_sees_another_tenants_secret(store: SecretStore) -> None:
    put(store, tenant="t1")
    assert store.list_sync("t2") == []
    with pytest.raises(NotFound):
        store.get_info_sync("t2", "github")
    with pytest.raises(NotFound):
        store.reveal_sync("t2", "github", "password")
    assert store.delete_sync("t2", "github") is False
    # The same name in t2 is t2's own secret; t1's is untouched.
    put(store, tenant="t2", values={"password": "dummy-t2-pass"})
    assert store.reveal_sync("t2", "github", "password") == "dummy-t2-pass"
    assert store.reveal_sync("t1", "github", "password") == PASS
    assert store.get_info_sync("t2", "github").keys == ("password",)


def test_an_unknown_key_names_the_available_keys_and_no_value(store: SecretStore) -> None:
    put(store)
    with pytest.raises(InvalidInput) as caught:
        store.reveal_sync("t1", "github", PASS)  # a value pasted where a key name goes
    assert caught.value.field == "field"
    assert "username" in caught.value.message and "password" in caught.value.message
    assert PASS not in caught.value.message and USER not in caught.value.message


@pytest.mark.parametrize(
    ("name", "over", "field"),
    [
        ("bad name", {}, "name"),
        ("github", {"description": "d" * 501}, "description"),
        ("github", {"hosts": []}, "hosts"),
        ("github", {"hosts": ["github.com", "https://github.com"]}, "hosts[1]"),
        ("github", {"hosts": ["*.com"]}, "hosts[0]"),
        ("github", {"values": {}}, "values"),
        ("github", {"values": {"password": ""}}, "values.password"),
        ("github", {"values": {"username": "u", "password": "x" * 8193}}, "values.password"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(
    store: SecretStore, clock: Clock, name: str, over: dict[str, Any], field: str
) -> None:
    before = put(store)
    clock.now += 60
    with pytest.raises(InvalidInput) as caught:
        put(store, name, **over)
    assert caught.value.field == field
    assert PASS not in caught.value.message
    assert store.list_sync("t1") == [before]
    assert store.reveal_sync("t1", "github", "password") == PASS


def test_an_empty_tenant_is_refused(store: SecretStore) -> None:
    with pytest.raises(InvalidInput) as caught:
        put(store, tenant="")
    assert caught.value.field == "tenant"


def test_the_database_files_hold_no_value(store: SecretStore, url: str) -> None:
    put(store)
    put(store, "second", values={"password": PASS + "-2"})
    assert store.reveal_sync("t1", "github", "password") == PASS
    path = Path(url.removeprefix("sqlite:///"))
    files = [p for p in path.parent.iterdir() if p.name.startswith(path.name)]
    raw = b"".join(p.read_bytes() for p in files)  # the file, and its -wal where rows sit
    # The bytes read hold the rows: the clear columns are there, the values are not.
    assert b"the staging admin login" in raw and b"username" in raw
    for value in (PASS, USER):
        assert value.encode() not in raw
        assert value.encode("utf-16-le") not in raw


def _copy_sealed(url: str, source: tuple[str, str], target: tuple[str, str]) -> None:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        db.execute(
            "UPDATE secrets SET sealed = (SELECT sealed FROM secrets WHERE tenant=? AND name=?)"
            " WHERE tenant=? AND name=?",
            (*source, *target),
        )
    db.close()


@pytest.mark.parametrize("target", [("t1", "other"), ("t2", "github")])
def test_a_sealed_blob_moved_to_another_row_does_not_open(
    store: SecretStore, url: str, target: tuple[str, str]
) -> None:
    put(store, "github", "t1")
    put(store, target[1], target[0], values={"username": "u", "password": "dummy-other"})
    _copy_sealed(url, ("t1", "github"), target)
    with pytest.raises(StoreUnavailable) as caught:
        store.reveal_sync(*target, "password")
    assert PASS not in caught.value.message
    assert store.reveal_sync("t1", "github", "password") == PASS


@pytest.mark.parametrize(
    ("column", "tampered"),
    [("hosts", '["github.com", "*.github.com", "evil.test"]'), ("keys", '["password"]')],
)
def test_clear_columns_changed_behind_the_store_make_reveal_refuse(
    store: SecretStore, url: str, column: str, tampered: str
) -> None:
    put(store)
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        db.execute(f"UPDATE secrets SET {column} = ?", (tampered,))
    db.close()
    with pytest.raises(StoreUnavailable) as caught:
        store.reveal_sync("t1", "github", "password")
    assert PASS not in caught.value.message


def test_a_database_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "a-directory.db").mkdir()
    with pytest.raises(StoreUnavailable):
        SecretStore(f"sqlite:///{tmp_path}/a-directory.db", Cipher(KEY))


def test_only_sqlite_urls_are_accepted(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        SecretStore("memory://", Cipher(KEY))
    assert caught.value.field == "SITEKEEP_DATABASE_URL"


def test_a_second_store_on_the_same_file_sees_the_secrets(store: SecretStore, url: str) -> None:
    stored = put(store)
    again = SecretStore(url, Cipher(KEY))
    try:
        assert again.get_info_sync("t1", "github") == stored
        assert again.reveal_sync("t1", "github", "password") == PASS
    finally:
        again.close()


@pytest.mark.anyio
async def test_the_async_methods_do_the_same_in_a_worker_thread(store: SecretStore) -> None:
    info = await store.put("t1", "github", "", ["github.com"], {"password": PASS})
    assert await store.get_info("t1", "github") == info
    assert await store.list("t1") == [info]
    assert await store.reveal("t1", "github", "password") == PASS
    assert await store.delete("t1", "github") is True
    with pytest.raises(NotFound):
        await store.get_info("t1", "github")
