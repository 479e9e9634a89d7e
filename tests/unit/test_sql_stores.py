"""The SQL stores' shared guards: a URL that is not SQLite is refused naming the setting;
a database that fails becomes ``StoreUnavailable`` naming the store, never its content."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sitekeep.errors import InvalidInput, StoreUnavailable
from sitekeep.stores.cipher import Cipher
from sitekeep.stores.secrets import SecretStore
from sitekeep.stores.sql import TokenStore
from sitekeep.stores.sqlite import SqliteStore

CIPHER = Cipher(b"k" * 32)


@pytest.mark.parametrize("make", [TokenStore, lambda url: SecretStore(url, CIPHER)])
def test_a_database_url_that_is_not_sqlite_is_refused_naming_the_setting(
    make: Callable[[str], object],
) -> None:
    with pytest.raises(InvalidInput) as caught:
        make("postgresql://db.example.test/sitekeep")
    assert caught.value.field == "SITEKEEP_DATABASE_URL"


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (TokenStore, "the token database"),
        (lambda url: SecretStore(url, CIPHER), "the secrets database"),
        (SqliteStore, "the SQLite session store"),
    ],
)
def test_a_database_that_fails_is_unavailable_by_name_without_its_content(
    tmp_path: Path, make: Callable[[str], object], what: str
) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"dummy-not-a-database " * 50)
    with pytest.raises(StoreUnavailable) as caught:
        make(f"sqlite:///{broken}")
    assert caught.value.message.startswith(f"{what} failed: ")
    assert "dummy" not in caught.value.message
