"""The secrets catalogue's rules over a ``SecretStore``: checks, sealing, reveal (SPEC §7, §12).

One row per (tenant, name). Name, description, host patterns and key names are kept in the
clear so they can be listed; the values are one JSON object ``{"hosts": [pattern],
"values": {key: value}}`` sealed by :class:`~sitekeep.stores.cipher.Cipher` for
``(tenant, "secret", name)``, so the store never holds a value in the clear and a sealed
blob copied to another row does not open. :meth:`Vault.reveal` is the only way a value
comes out, and only while the clear host patterns still match the sealed copy: whoever can
write the database but not read the key cannot widen where a secret may be typed.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping
from typing import Any

from sitekeep.errors import InvalidInput, NotFound, StoreUnavailable
from sitekeep.secrets import SecretInfo, check_description, check_hosts, check_name, check_values
from sitekeep.stores.base import Clock, SecretRow, SecretStore, system_clock
from sitekeep.stores.cipher import Cipher

__all__ = ["Vault"]

_KIND = "secret"


def _info(row: SecretRow) -> SecretInfo:
    return SecretInfo(row.name, row.description, row.hosts, row.keys, row.updated_at)


def _check_tenant(tenant: str) -> str:
    if not isinstance(tenant, str) or not tenant:
        raise InvalidInput("tenant must not be empty", field="tenant")
    return tenant


class Vault:
    """Per-tenant named secrets: info in the clear, values sealed (SPEC §7)."""

    def __init__(self, store: SecretStore, cipher: Cipher, clock: Clock = system_clock) -> None:
        self._store = store
        self._cipher = cipher
        self._clock = clock

    async def put(
        self,
        tenant: str,
        name: str,
        description: str,
        hosts: Iterable[str],
        values: Mapping[str, object],
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
        sealed = self._cipher.seal(
            json.dumps({"hosts": patterns, "values": checked}, separators=(",", ":")).encode(),
            tenant=tenant,
            kind=_KIND,
            ident=name,
        )
        row = SecretRow(tenant, name, description, patterns, tuple(checked), sealed, self._clock())
        await self._store.put(row)
        return _info(row)

    async def list(self, tenant: str) -> builtins.list[SecretInfo]:
        """The tenant's secrets, sorted by name, without values."""
        return [_info(row) for row in await self._store.list(tenant)]

    async def get_info(
        self, tenant: str, name: str, *, name_field: str | None = None
    ) -> SecretInfo:
        """One secret's info, without values.

        Args:
            name_field: the caller's argument that held ``name`` (``name`` for the
                secret routes, ``secret`` for ``type_secret``), None when none did.

        Raises:
            NotFound: ``("secret", name)`` — none of that name in this tenant (field
                ``name_field``).
        """
        return _info(await self._row(tenant, name, name_field))

    async def delete(self, tenant: str, name: str) -> bool:
        """Delete one secret; whether it existed."""
        return await self._store.delete(tenant, name)

    async def reveal(
        self, tenant: str, name: str, key: str, *, name_field: str | None = None
    ) -> str:
        """The value under ``key`` of secret ``name``: the one place a value comes out, for
        typing into a page whose host the caller has checked (SPEC §7).

        Raises:
            InvalidInput: a key the secret lacks (field ``field``; the message lists the
                secret's key names, never the key asked for, which may be a value pasted in
                the wrong place).
            NotFound: ``("secret", name)``, naming ``name_field`` (the argument that
                held ``name``).
            StoreUnavailable: the sealed values do not open for this (tenant, name), or the
                clear host patterns or key names no longer match the sealed copy.
        """
        row = await self._row(tenant, name, name_field)
        if key not in row.keys:
            raise InvalidInput(
                f"secret {name!r} has no such field; its fields are: {', '.join(row.keys)}",
                field="field",
            )
        plain = self._cipher.open(row.sealed, tenant=tenant, kind=_KIND, ident=name)
        sealed: dict[str, Any] = json.loads(plain)
        values: dict[str, str] = sealed["values"]
        if sealed["hosts"] != list(row.hosts) or list(values) != list(row.keys):
            # The clear columns were changed behind the vault's back: refuse, type nothing.
            raise StoreUnavailable(
                f"secret {name!r} no longer matches its sealed copy; write it again"
            )
        return values[key]

    async def _row(self, tenant: str, name: str, field: str | None) -> SecretRow:
        row = await self._store.get(tenant, name)
        if row is None:
            raise NotFound("secret", name, field=field)
        return row
