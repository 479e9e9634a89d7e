"""The secrets catalogue (SPEC §7, §12): the vault's rules over the ``SecretStore`` port,
and the port itself, on every SQL backend (memory, SQLite, the real PostgreSQL).

The byte-level checks (no value in the database, a moved blob, tampered clear columns) read
and write the rows behind the vault's back, through the same database.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from sitekeep.errors import InvalidInput, NotFound, StoreUnavailable
from sitekeep.secrets import SecretInfo
from sitekeep.stores import open_database, schema
from sitekeep.stores.base import SecretRow
from sitekeep.stores.cipher import Cipher
from sitekeep.stores.database import Database
from sitekeep.stores.secrets import SqlSecretStore
from sitekeep.vault import Vault

from .conftest import SQL_BACKENDS, ids

KEY = bytes(range(32))
USER = "dummy-user-c01d"
PASS = "dummy-pass-7f3a"
GITHUB: dict[str, Any] = {
    "description": "the staging admin login",
    "hosts": ["github.com", "*.github.com"],
    "values": {"username": USER, "password": PASS},
}

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("backend", SQL_BACKENDS, ids=ids)]


class Clock:
    """Seconds since the epoch that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(database: Database, clock: Clock) -> Vault:
    return Vault(SqlSecretStore(database), Cipher(KEY), clock)


async def put(store: Vault, name: str = "github", tenant: str = "t1", **over: Any) -> SecretInfo:
    args = {**GITHUB, **over}
    return await store.put(tenant, name, args["description"], args["hosts"], args["values"])


async def test_put_answers_the_info_and_never_the_values(store: Vault, clock: Clock) -> None:
    info = await put(store)
    assert info == SecretInfo(
        name="github",
        description="the staging admin login",
        hosts=("github.com", "*.github.com"),
        keys=("username", "password"),
        updated_at=clock.now,
    )
    assert PASS not in repr(info) and USER not in repr(info)


async def test_get_info_and_list_give_what_put_stored(store: Vault) -> None:
    await put(store, "zeta")
    stored = await put(store, "alpha", hosts=["App.Example.test"])
    await put(store, "mid")
    assert await store.get_info("t1", "alpha") == stored
    assert stored.hosts == ("app.example.test",)
    assert [info.name for info in await store.list("t1")] == ["alpha", "mid", "zeta"]
    assert (await store.list("t1"))[0] == stored


async def test_reveal_gives_each_value_under_its_key(store: Vault) -> None:
    await put(store)
    assert await store.reveal("t1", "github", "username") == USER
    assert await store.reveal("t1", "github", "password") == PASS


async def test_a_second_put_replaces_everything(store: Vault, clock: Clock) -> None:
    await put(store)
    clock.now += 60
    info = await put(
        store, description="rotated", hosts=["git.example.test"], values={"token": "dummy-tok"}
    )
    assert info.updated_at == clock.now
    assert await store.get_info("t1", "github") == info
    assert await store.reveal("t1", "github", "token") == "dummy-tok"
    with pytest.raises(InvalidInput):
        await store.reveal("t1", "github", "password")
    assert len(await store.list("t1")) == 1


async def test_delete_says_whether_it_existed_and_the_secret_is_gone(store: Vault) -> None:
    await put(store)
    await put(store, "other")
    assert await store.delete("t1", "github") is True
    assert await store.delete("t1", "github") is False
    assert [info.name for info in await store.list("t1")] == ["other"]
    for read in (
        lambda: store.get_info("t1", "github"),
        lambda: store.reveal("t1", "github", "password"),
    ):
        with pytest.raises(NotFound) as caught:
            await read()
        assert (caught.value.kind, caught.value.name) == ("secret", "github")


async def test_an_unknown_secret_is_not_found(store: Vault) -> None:
    assert await store.list("t1") == []
    with pytest.raises(NotFound):
        await store.get_info("t1", "nope")
    with pytest.raises(NotFound):
        await store.reveal("t1", "nope", "password")
    assert await store.delete("t1", "nope") is False


async def test_an_unknown_secret_names_the_argument_that_held_its_name(store: Vault) -> None:
    for read in (
        lambda: store.get_info("t1", "nope", name_field="secret"),
        lambda: store.reveal("t1", "nope", "password", name_field="secret"),
    ):
        with pytest.raises(NotFound) as caught:
            await read()
        assert caught.value.field == "secret"
    with pytest.raises(NotFound) as caught:
        await store.get_info("t1", "nope")
    assert caught.value.field is None  # no argument named it (a proxy's stored secret)


async def test_one_tenant_never_sees_another_tenants_secret(store: Vault) -> None:
    await put(store, tenant="t1")
    assert await store.list("t2") == []
    with pytest.raises(NotFound):
        await store.get_info("t2", "github")
    with pytest.raises(NotFound):
        await store.reveal("t2", "github", "password")
    assert await store.delete("t2", "github") is False
    # The same name in t2 is t2's own secret; t1's is untouched.
    await put(store, tenant="t2", values={"password": "dummy-t2-pass"})
    assert await store.reveal("t2", "github", "password") == "dummy-t2-pass"
    assert await store.reveal("t1", "github", "password") == PASS
    assert (await store.get_info("t2", "github")).keys == ("password",)


async def test_an_unknown_key_names_the_available_keys_and_no_value(store: Vault) -> None:
    await put(store)
    with pytest.raises(InvalidInput) as caught:
        await store.reveal("t1", "github", PASS)  # a value pasted where a key name goes
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
async def test_bad_input_names_the_field_and_changes_nothing(
    store: Vault, clock: Clock, name: str, over: dict[str, Any], field: str
) -> None:
    before = await put(store)
    clock.now += 60
    with pytest.raises(InvalidInput) as caught:
        await put(store, name, **over)
    assert caught.value.field == field
    assert PASS not in caught.value.message
    assert await store.list("t1") == [before]
    assert await store.reveal("t1", "github", "password") == PASS


async def test_an_empty_tenant_is_refused(store: Vault) -> None:
    with pytest.raises(InvalidInput) as caught:
        await put(store, tenant="")
    assert caught.value.field == "tenant"


async def test_the_database_holds_no_value(store: Vault, database: Database) -> None:
    await put(store)
    await put(store, "second", values={"password": PASS + "-2"})
    assert await store.reveal("t1", "github", "password") == PASS
    raw = _raw_rows(database)
    # The bytes read hold the rows: the clear columns are there, the values are not.
    assert b"the staging admin login" in raw and b"username" in raw
    for value in (PASS, USER):
        assert value.encode() not in raw
        assert value.encode("utf-16-le") not in raw


def _raw_rows(database: Database) -> bytes:
    """What the database holds: a SQLite file's bytes (and its -wal, where rows sit), or
    every row of the ``secrets`` table as the server returns it."""
    path = database.url.path
    if path is not None:
        files = [p for p in path.parent.iterdir() if p.name.startswith(path.name)]
        return b"".join(p.read_bytes() for p in files)
    with database.engine.connect() as conn:
        rows = conn.execute(sa.select(schema.secrets)).all()
    return b"".join(v if isinstance(v, bytes) else str(v).encode() for r in rows for v in r)


def _copy_sealed(database: Database, source: tuple[str, str], target: tuple[str, str]) -> None:
    table = schema.secrets
    where = sa.and_(table.c.tenant == source[0], table.c.name == source[1])
    with database.engine.begin() as conn:
        sealed = conn.execute(sa.select(table.c.sealed).where(where)).scalar_one()
        conn.execute(
            sa.update(table)
            .where(table.c.tenant == target[0], table.c.name == target[1])
            .values(sealed=sealed)
        )


@pytest.mark.parametrize("target", [("t1", "other"), ("t2", "github")])
async def test_a_sealed_blob_moved_to_another_row_does_not_open(
    store: Vault, database: Database, target: tuple[str, str]
) -> None:
    await put(store, "github", "t1")
    await put(store, target[1], target[0], values={"username": "u", "password": "dummy-other"})
    _copy_sealed(database, ("t1", "github"), target)
    with pytest.raises(StoreUnavailable) as caught:
        await store.reveal(*target, "password")
    assert PASS not in caught.value.message
    assert await store.reveal("t1", "github", "password") == PASS


@pytest.mark.parametrize(
    ("column", "tampered"),
    [("hosts", '["github.com", "*.github.com", "evil.test"]'), ("keys", '["password"]')],
)
async def test_clear_columns_changed_behind_the_store_make_reveal_refuse(
    store: Vault, database: Database, column: str, tampered: str
) -> None:
    await put(store)
    with database.engine.begin() as conn:
        conn.execute(sa.update(schema.secrets).values({column: tampered}))
    with pytest.raises(StoreUnavailable) as caught:
        await store.reveal("t1", "github", "password")
    assert PASS not in caught.value.message


async def test_a_second_vault_on_the_same_database_sees_the_secrets(store: Vault, url: str) -> None:
    if url == "memory://":
        return  # memory:// is one process's database: there is no second one
    stored = await put(store)
    db = open_database(url)
    try:
        again = Vault(SqlSecretStore(db), Cipher(KEY))
        assert await again.get_info("t1", "github") == stored
        assert await again.reveal("t1", "github", "password") == PASS
    finally:
        db.dispose()


# --- the SecretStore port itself: rows in, the same rows out --------------------------------


async def test_the_store_returns_rows_exactly_as_put_and_replaces_them_whole(
    database: Database,
) -> None:
    rows = SqlSecretStore(database)
    first = SecretRow("t1", "b", "d", ("a.example.test",), ("k",), b"\x00sealed\xff", 1.5)
    await rows.put(first)
    await rows.put(SecretRow("t1", "a", "", ("x.example.test",), ("u", "p"), b"s", 2.0))
    await rows.put(SecretRow("t2", "b", "", ("y.example.test",), ("k",), b"t2", 3.0))
    assert await rows.get("t1", "b") == first
    assert [r.name for r in await rows.list("t1")] == ["a", "b"]
    replaced = SecretRow("t1", "b", "new", ("z.example.test",), ("only",), b"new", 4.0)
    await rows.put(replaced)
    assert await rows.get("t1", "b") == replaced
    assert await rows.delete("t1", "b") is True
    assert await rows.get("t1", "b") is None
    assert await rows.get("t2", "b") is not None


async def test_every_lists_all_tenants_and_swap_sealed_replaces_only_what_it_was_given(
    database: Database,
) -> None:
    rows = SqlSecretStore(database)
    mine = SecretRow("t1", "a", "", ("x.example.test",), ("k",), b"old", 1.0)
    await rows.put(SecretRow("t2", "b", "", ("y.example.test",), ("k",), b"t2", 1.0))
    await rows.put(mine)
    assert [(r.tenant, r.name) for r in await rows.every()] == [("t1", "a"), ("t2", "b")]
    assert await rows.swap_sealed("t1", "a", b"not it", b"new") is False
    assert await rows.get("t1", "a") == mine
    assert await rows.swap_sealed("t1", "a", b"old", b"new") is True
    assert (await rows.get("t1", "a")) == SecretRow(
        "t1", "a", "", ("x.example.test",), ("k",), b"new", 1.0
    )
