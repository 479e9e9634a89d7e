"""The secrets catalogue in the SQL database (SQLAlchemy Core), values sealed (SPEC §7, §12).

One ``secrets`` row per (tenant, name), in the same database as the tokens
(``Settings.database``; embedded default a SQLite file). Name, description, host patterns and
key names are stored in the clear so they can be listed; the values are one JSON object
``{"hosts": [pattern], "values": {key: value}}`` sealed by
:class:`~sitekeep.stores.cipher.Cipher` for ``(tenant, "secret", name)``, so the database
never holds a value in the clear and a sealed blob copied to another row does not open.
:meth:`SecretStore.reveal_sync` is the only way a value comes out, and only while the
clear ``hosts`` column still matches the sealed copy: whoever can write the database but not
read the key cannot widen where a secret may be typed.

Each method has a blocking core (``*_sync``, for the CLI) and an async twin that runs it in a
worker thread (for the API and the service).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import anyio.to_thread
import sqlalchemy as sa

from sitekeep.errors import InvalidInput, NotFound, StoreUnavailable
from sitekeep.secrets import (
    SecretInfo,
    check_description,
    check_hosts,
    check_name,
    check_values,
)
from sitekeep.stores.base import Clock, system_clock
from sitekeep.stores.cipher import Cipher
from sitekeep.stores.sqlite import guarded, sqlite_engine, sqlite_url

__all__ = ["SecretStore"]

T = TypeVar("T")

_KIND = "secret"

_metadata = sa.MetaData()
_secrets = sa.Table(
    "secrets",
    _metadata,
    sa.Column("tenant", sa.String, primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("description", sa.String, nullable=False),
    sa.Column("hosts", sa.String, nullable=False),  # JSON list of patterns
    sa.Column("keys", sa.String, nullable=False),  # JSON list of key names
    sa.Column("sealed", sa.LargeBinary, nullable=False),  # envelope of {hosts, values}
    sa.Column("updated_at", sa.Float, nullable=False),
)
# ``.c.keys`` is the column collection's own method: the column is reached by subscript.
_KEYS = _secrets.c["keys"]
_INFO = (
    _secrets.c.name,
    _secrets.c.description,
    _secrets.c.hosts,
    _KEYS.label("key_names"),
    _secrets.c.updated_at,
)


def _info(row: Any) -> SecretInfo:
    return SecretInfo(
        name=row.name,
        description=row.description,
        hosts=tuple(json.loads(row.hosts)),
        keys=tuple(json.loads(row.key_names)),
        updated_at=row.updated_at,
    )


def _check_tenant(tenant: str) -> str:
    if not isinstance(tenant, str) or not tenant:
        raise InvalidInput("tenant must not be empty", field="tenant")
    return tenant


class SecretStore:
    """Per-tenant named secrets: info in the clear, values sealed (SPEC §7).

    Every method raises :class:`StoreUnavailable` when the database fails, and then has
    written nothing.
    """

    def __init__(self, url: str, cipher: Cipher, clock: Clock = system_clock) -> None:
        """Open (and create when absent) the ``secrets`` table at ``url``.

        Raises:
            InvalidInput: ``url`` is not ``sqlite:///path`` (field ``SITEKEEP_DATABASE_URL``).
            StoreUnavailable: the database cannot be opened.
        """
        self._engine = sqlite_engine(sqlite_url(url, "SITEKEEP_DATABASE_URL"))
        self._cipher = cipher
        self._clock = clock
        self._run(lambda: _metadata.create_all(self._engine))

    def _run(self, fn: Callable[[], T]) -> T:
        return guarded("the secrets database", fn)

    def put_sync(
        self,
        tenant: str,
        name: str,
        description: str,
        hosts: Iterable[str],
        values: Mapping[str, str],
    ) -> SecretInfo:
        """Create or replace the secret ``name`` of ``tenant`` (description, hosts, values).

        Args:
            hosts: 1–32 host patterns (``app.example.test``, ``*.example.test``).
            values: 1–32 ``{key name: non-empty string ≤ 8192 chars}``.

        Returns:
            The stored secret's info (never its values).

        Raises:
            InvalidInput: a bad tenant, name, description, pattern or value, naming the field
                (``name``, ``hosts[2]``, ``values.password``); nothing was changed.
        """
        _check_tenant(tenant)
        check_name(name)
        description = check_description(description)
        patterns = check_hosts(hosts)
        checked = check_values(values)
        info = SecretInfo(name, description, patterns, tuple(checked), self._clock())
        sealed = self._cipher.seal(
            json.dumps({"hosts": patterns, "values": checked}, separators=(",", ":")).encode(),
            tenant=tenant,
            kind=_KIND,
            ident=name,
        )
        row = {
            "tenant": tenant,
            "name": name,
            "description": info.description,
            "hosts": json.dumps(info.hosts),
            "keys": json.dumps(info.keys),
            "sealed": sealed,
            "updated_at": info.updated_at,
        }

        def write() -> None:
            with self._engine.begin() as conn:
                conn.execute(sa.delete(_secrets).where(*self._where(tenant, name)))
                conn.execute(sa.insert(_secrets).values(**row))

        self._run(write)
        return info

    def list_sync(self, tenant: str) -> builtins.list[SecretInfo]:
        """The tenant's secrets, sorted by name, without values."""

        def read() -> builtins.list[SecretInfo]:
            with self._engine.connect() as conn:
                rows = conn.execute(
                    sa.select(*_INFO).where(_secrets.c.tenant == tenant).order_by(_secrets.c.name)
                ).all()
            return [_info(row) for row in rows]

        return self._run(read)

    def get_info_sync(self, tenant: str, name: str) -> SecretInfo:
        """One secret's info, without values.

        Raises:
            NotFound: ``("secret", name)`` — none of that name in this tenant.
        """

        def read() -> Any:
            with self._engine.connect() as conn:
                return conn.execute(sa.select(*_INFO).where(*self._where(tenant, name))).first()

        row = self._run(read)
        if row is None:
            raise NotFound("secret", name)
        return _info(row)

    def delete_sync(self, tenant: str, name: str) -> bool:
        """Delete one secret; whether it existed."""

        def remove() -> bool:
            with self._engine.begin() as conn:
                result = conn.execute(sa.delete(_secrets).where(*self._where(tenant, name)))
            return result.rowcount > 0

        return self._run(remove)

    def reveal_sync(self, tenant: str, name: str, key: str) -> str:
        """The value under ``key`` of secret ``name``: the one place a value comes out, for
        typing into a page whose host the caller has checked (SPEC §7).

        Raises:
            InvalidInput: a key the secret lacks (field ``field``; the message lists the
                secret's key names, never the key asked for, which may be a value pasted in
                the wrong place).
            NotFound: ``("secret", name)``.
            StoreUnavailable: the sealed values do not open for this (tenant, name), or the
                clear host patterns or key names no longer match the sealed copy.
        """

        def read() -> Any:
            with self._engine.connect() as conn:
                return conn.execute(
                    sa.select(_KEYS.label("key_names"), _secrets.c.hosts, _secrets.c.sealed).where(
                        *self._where(tenant, name)
                    )
                ).first()

        row = self._run(read)
        if row is None:
            raise NotFound("secret", name)
        keys: builtins.list[str] = json.loads(row.key_names)
        if key not in keys:
            raise InvalidInput(
                f"secret {name!r} has no such field; its fields are: {', '.join(keys)}",
                field="field",
            )
        plain = self._cipher.open(bytes(row.sealed), tenant=tenant, kind=_KIND, ident=name)
        sealed: dict[str, Any] = json.loads(plain)
        values: dict[str, str] = sealed["values"]
        if sealed["hosts"] != json.loads(row.hosts) or list(values) != keys:
            # The clear columns were changed behind the store's back: refuse, type nothing.
            raise StoreUnavailable(
                f"secret {name!r} no longer matches its sealed copy; write it again"
            )
        return values[key]

    async def put(
        self,
        tenant: str,
        name: str,
        description: str,
        hosts: Iterable[str],
        values: Mapping[str, str],
    ) -> SecretInfo:
        """:meth:`put_sync` in a worker thread."""
        return await anyio.to_thread.run_sync(
            self.put_sync, tenant, name, description, hosts, values
        )

    async def list(self, tenant: str) -> builtins.list[SecretInfo]:
        """:meth:`list_sync` in a worker thread."""
        return await anyio.to_thread.run_sync(self.list_sync, tenant)

    async def get_info(self, tenant: str, name: str) -> SecretInfo:
        """:meth:`get_info_sync` in a worker thread."""
        return await anyio.to_thread.run_sync(self.get_info_sync, tenant, name)

    async def delete(self, tenant: str, name: str) -> bool:
        """:meth:`delete_sync` in a worker thread."""
        return await anyio.to_thread.run_sync(self.delete_sync, tenant, name)

    async def reveal(self, tenant: str, name: str, key: str) -> str:
        """:meth:`reveal_sync` in a worker thread."""
        return await anyio.to_thread.run_sync(self.reveal_sync, tenant, name, key)

    def close(self) -> None:
        self._engine.dispose()

    @staticmethod
    def _where(tenant: str, name: str) -> tuple[sa.ColumnElement[bool], ...]:
        return (_secrets.c.tenant == tenant, _secrets.c.name == name)
