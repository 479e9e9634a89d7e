"""Bearer tokens (SPEC §1): the ``TokenStore`` port on every SQL backend, and the one
``Authorization`` parser above it (``sitekeep.auth``)."""

from __future__ import annotations

import hashlib

import anyio
import pytest
import sqlalchemy as sa

from sitekeep.auth import Authenticator, hash_token
from sitekeep.errors import InvalidInput, NotFound, Unauthorized
from sitekeep.model import Principal
from sitekeep.stores import schema
from sitekeep.stores.base import TokenRow
from sitekeep.stores.database import Database
from sitekeep.stores.tokens import SqlTokenStore

from .conftest import SQL_BACKENDS, ids

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("backend", SQL_BACKENDS, ids=ids)]


@pytest.fixture
def auth(database: Database) -> Authenticator:
    return Authenticator(SqlTokenStore(database), lambda: 1_700_000_000.0)


async def test_the_store_returns_the_row_it_was_given(database: Database) -> None:
    store = SqlTokenStore(database)
    row = TokenRow("ab" * 32, "t1", "agent@example.test", "admin", 1.25)
    await store.add(row)
    assert await store.find("ab" * 32) == row
    assert await store.find("cd" * 32) is None


async def test_a_created_token_resolves_to_its_principal(auth: Authenticator) -> None:
    token = await auth.create("tenant-1", "agent@example.test", "admin")
    assert token.startswith("sk_") and len(token) > 40
    assert await auth.resolve(token) == Principal("tenant-1", "agent@example.test", "admin")
    assert await auth.principal(f"Bearer {token}") == await auth.resolve(token)


async def test_each_create_issues_a_different_token(auth: Authenticator) -> None:
    first = await auth.create("t1", "agent", "member")
    second = await auth.create("t1", "agent", "member")
    assert first != second
    assert await auth.resolve(first) == await auth.resolve(second)


async def test_an_unknown_token_resolves_to_none_and_is_unauthorized(auth: Authenticator) -> None:
    await auth.create("t1", "agent", "member")
    assert await auth.resolve("sk_not-a-real-token") is None
    with pytest.raises(Unauthorized) as caught:
        await auth.principal("Bearer sk_not-a-real-token")
    assert caught.value.message == "unknown token"


async def test_only_the_sha256_of_a_token_is_stored(
    auth: Authenticator, database: Database
) -> None:
    token = await auth.create("t1", "agent", "member")
    with database.engine.connect() as conn:
        rows = conn.execute(sa.select(schema.tokens)).all()
    stored = "".join(str(value) for row in rows for value in row)
    assert token not in stored and token.removeprefix("sk_") not in stored
    assert rows[0].token_hash == hashlib.sha256(token.encode()).hexdigest() == hash_token(token)


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
async def test_a_bad_tenant_or_subject_is_invalid_input_naming_the_field(
    auth: Authenticator, tenant: str, subject: str, field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        await auth.create(tenant, subject, "member")
    assert caught.value.field == field


async def test_a_resolved_token_is_remembered_so_reads_skip_the_database(
    database: Database,
) -> None:
    store = SqlTokenStore(database)
    auth = Authenticator(store)
    token = await auth.create("t1", "agent", "member")
    assert await auth.resolve(token) is not None
    with database.engine.begin() as conn:
        conn.execute(sa.delete(schema.tokens))
    assert await auth.resolve(token) == Principal("t1", "agent", "member")  # cached
    assert await Authenticator(store).resolve(token) is None  # a new replica asks the store


async def test_an_unknown_token_is_remembered_briefly_and_forgotten_when_one_is_made(
    database: Database,
) -> None:
    store = SqlTokenStore(database)
    asked: list[str] = []

    class Counting:
        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

        async def find(self, token_hash: str) -> TokenRow | None:
            asked.append(token_hash)
            return await store.find(token_hash)

    auth = Authenticator(Counting())  # type: ignore[arg-type]
    for _ in range(3):
        with pytest.raises(Unauthorized):
            await auth.principal("Bearer sk_unknown")
    assert asked == [hash_token("sk_unknown")]  # one database trip for three refusals
    await auth.create("t1", "agent", "member")
    assert await auth.resolve("sk_unknown") is None
    assert len(asked) == 2  # making a token forgot the unknown ones


async def test_tokens_are_listed_by_tenant_and_deleted_by_hash(database: Database) -> None:
    store = SqlTokenStore(database)
    rows = [
        TokenRow("ab" * 32, "t1", "agent", "member", 2.0),
        TokenRow("cd" * 32, "t2", "other", "admin", 1.0),
        TokenRow("ef" * 32, "t1", "boss", "admin", 3.0),
    ]
    for row in rows:
        await store.add(row)
    assert await store.list("t1") == [rows[0], rows[2]]
    assert await store.list(None) == [rows[1], rows[0], rows[2]]
    assert await store.delete("ab" * 32) is True
    assert await store.delete("ab" * 32) is False
    assert await store.list("t1") == [rows[2]]


async def test_a_list_shows_ids_never_tokens_and_a_revoked_token_stops_at_once(
    auth: Authenticator,
) -> None:
    token = await auth.create("t1", "agent", "member")
    other = await auth.create("t2", "agent", "member")
    assert await auth.resolve(token) is not None  # remembered in this process
    [info] = await auth.list("t1")
    assert info.id == hash_token(token)[:16] and info.subject == "agent"
    assert token not in repr(await auth.list()) and hash_token(token) not in repr(info)
    with pytest.raises(NotFound):  # another tenant's token is not found from t1
        await auth.revoke(hash_token(other)[:16], "t1")
    assert (await auth.revoke(info.id, "t1")) == info
    assert await auth.resolve(token) is None
    with pytest.raises(Unauthorized):
        await auth.principal(f"Bearer {token}")
    assert await auth.resolve(other) is not None
    with pytest.raises(NotFound):
        await auth.revoke(info.id)


@pytest.mark.parametrize("bad", ["", "ABCDEF0123456789", "0123", "g" * 16, "0" * 64])
async def test_a_malformed_token_id_is_invalid_input_naming_id(
    auth: Authenticator, bad: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        await auth.revoke(bad)
    assert caught.value.field == "id"


async def test_a_standing_token_holds_until_revoked_here_at_once_and_elsewhere_in_the_window(
    database: Database,
) -> None:
    store = SqlTokenStore(database)
    here, there, uncached = Authenticator(store), Authenticator(store), Authenticator(store)
    token = await here.create("t1", "agent", "member")
    principal = await here.resolve(token)
    assert principal is not None and principal.token == hash_token(token)[:16]
    id_ = principal.token
    assert await here.holds(id_, "t1") and await there.holds(id_, "t1")
    assert not await here.holds(id_, "t2")  # another tenant's id never holds
    await here.revoke(id_, "t1")
    assert not await here.holds(id_, "t1")  # the revoking process: at once
    assert await there.holds(id_, "t1")  # another replica: until its 30 s memory runs out
    assert not await uncached.holds(id_, "t1")  # ...then it asks the store


async def test_a_lookup_in_flight_during_a_revocation_neither_caches_nor_returns_the_token(
    database: Database,
) -> None:
    store = SqlTokenStore(database)
    read, release = anyio.Event(), anyio.Event()

    class Slow:
        """A store whose first find reads the row, then answers only once released — a
        PostgreSQL round trip that read before the revocation's delete committed."""

        slow = True

        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

        async def find(self, token_hash: str) -> TokenRow | None:
            row = await store.find(token_hash)
            if self.slow:
                self.slow = False
                read.set()
                await release.wait()
            return row

    auth = Authenticator(Slow())  # type: ignore[arg-type]
    token = await auth.create("t1", "agent", "member")
    found: list[Principal | None] = []
    async with anyio.create_task_group() as tasks:

        async def look() -> None:
            found.append(await auth.resolve(token))

        tasks.start_soon(look)
        await read.wait()
        await auth.revoke(hash_token(token)[:16], "t1")
        release.set()
    assert found == [None]  # the revocation wins the race...
    assert await auth.resolve(token) is None  # ...and nothing of it was remembered
    assert not await auth.holds(hash_token(token)[:16], "t1")


@pytest.mark.parametrize("asked", ["resolve", "holds"])
async def test_a_lookup_asked_again_after_one_revocation_still_loses_to_the_next(
    database: Database, asked: str
) -> None:
    """Two revocations in a row: the lookup of token B (``resolve``, or ``holds`` that a
    live socket asks every half second), asked again because token A was revoked while
    it was in flight, reads B's row before B's revocation deletes it and answers after
    that revocation returned — it must still not stand for B."""
    store = SqlTokenStore(database)
    read, release = anyio.Event(), anyio.Event()
    held = 0  # reads of the lookup to hold; the revocations' own listings pass

    async def slow(answer: object) -> object:
        nonlocal held
        if held:
            held -= 1
            gate = release
            read.set()
            await gate.wait()
        return answer

    class Slow:
        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

        async def find(self, token_hash: str) -> object:
            return await slow(await store.find(token_hash))

        async def list(self, tenant: str | None = None) -> object:
            return await slow(await store.list(tenant))

    auth = Authenticator(Slow())  # type: ignore[arg-type]
    first = await auth.create("t1", "agent", "member")
    second = await auth.create("t1", "agent", "member")
    second_id = hash_token(second)[:16]
    found: list[object] = []
    async with anyio.create_task_group() as tasks:

        async def look() -> None:
            if asked == "resolve":
                found.append(await auth.resolve(second))
            else:
                found.append(await auth.holds(second_id, "t1") or None)

        held = 1
        tasks.start_soon(look)
        await read.wait()  # B's first read is in flight...
        read = anyio.Event()
        gate, release = release, anyio.Event()
        await auth.revoke(hash_token(first)[:16], "t1")  # ...while A is revoked
        held = 1
        gate.set()
        await read.wait()  # B is asked again, and read before...
        await auth.revoke(second_id, "t1")  # ...B's own revocation returns
        release.set()
    assert found == [None]
    assert await auth.resolve(second) is None
