"""A session's snapshot versions in the session store (issue #26).

Each save of a session keeps the snapshot it replaces as a version
(:meth:`SnapshotVersions.keep`, called by ``Records.put_snapshot``, the one place a
snapshot is put): one key per version, ``site-data-version/{tenant}/{key}/{id}``, sealed
for ``(tenant, "site-data-version", "{key}/{id}")`` — the store never sees a value, and a
version moved to another session, tenant or id does not open. The newest
``SITEKEEP_VERSIONS`` are kept (0: none, and a save then drops those kept before).

Versions expire with their record: each is written with the session's TTL, and every
write of the record moves them all with its snapshot (``SessionStore.expire(…, under=)``,
in the same round trip).
Deleting the snapshot or the session deletes them; Forget of one host removes the host
from every version (:meth:`SnapshotVersions.forget_host`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from sitekeep import sitedata
from sitekeep.config import Settings
from sitekeep.errors import StoreUnavailable
from sitekeep.model import SiteData, dump_site_data, load_site_data
from sitekeep.stores import SessionStore
from sitekeep.stores.cipher import Cipher
from sitekeep.versions import SESSION_VERSION_KIND, kept_at, new_id

__all__ = ["VERSIONS", "SnapshotVersions", "version_key", "versions_prefix"]

log = logging.getLogger(__name__)

VERSIONS = "site-data-version/"
"""Where the session store keeps every session's versions."""


def versions_prefix(tenant: str, key: str) -> str:
    """The prefix of the keys of a session's versions."""
    return f"{VERSIONS}{tenant}/{key}/"


def version_key(tenant: str, key: str, ident: str) -> str:
    """Where the session store keeps one version of a session's snapshot."""
    return f"{versions_prefix(tenant, key)}{ident}"


@dataclass(frozen=True, slots=True)
class SnapshotVersions:
    """Every session's snapshot versions, over the session store and the cipher."""

    settings: Settings
    store: SessionStore
    cipher: Cipher
    clock: Callable[[], float]

    def _seal(self, tenant: str, key: str, ident: str, plain: bytes) -> bytes:
        return self.cipher.seal(
            plain, tenant=tenant, kind=SESSION_VERSION_KIND, ident=f"{key}/{ident}"
        )

    def _open(self, tenant: str, key: str, ident: str, sealed: bytes) -> SiteData:
        plain = self.cipher.open(
            sealed, tenant=tenant, kind=SESSION_VERSION_KIND, ident=f"{key}/{ident}"
        )
        return load_site_data(plain)

    async def keep(self, tenant: str, key: str, replaced: bytes) -> str | None:
        """Keep the snapshot a save replaces (``replaced``: as the store held it, sealed
        for the session) as the newest version, and drop all but the newest
        ``SITEKEEP_VERSIONS``. Returns its id; None when none are kept, or when
        ``replaced`` does not open for the session (it is logged, never kept: the save
        goes on).

        Raises:
            StoreUnavailable: the store; the save then stores nothing either.
        """
        ident = None
        kept = await self.ids(tenant, key)
        if self.settings.versions > 0:
            try:
                plain = self.cipher.open(replaced, tenant=tenant, kind="site-data", ident=key)
            except StoreUnavailable as exc:  # the cipher's one error: it did not open
                log.warning("a replaced snapshot was not kept as a version: %s", exc)
            else:
                ident = new_id(self.clock(), kept_at(kept[0]) if kept else None)
                sealed = self._seal(tenant, key, ident, plain)
                where = version_key(tenant, key, ident)
                await self.store.set(where, sealed, ttl=self.settings.session_ttl)
                kept.insert(0, ident)
        extra = kept[self.settings.versions :]
        if extra:
            await self.store.delete(*(version_key(tenant, key, i) for i in extra))
        return ident

    async def ids(self, tenant: str, key: str) -> list[str]:
        """The ids of the session's versions, newest first."""
        found = await self.store.keys(versions_prefix(tenant, key))
        return sorted((k.rsplit("/", 1)[-1] for k in found), reverse=True)

    async def load(self, tenant: str, key: str, ident: str) -> SiteData | None:
        """One version, opened; None when there is none of that id.

        Raises:
            StoreUnavailable: the store, or a version that does not open for its place.
        """
        sealed = await self.store.get(version_key(tenant, key, ident))
        return None if sealed is None else self._open(tenant, key, ident, sealed)

    async def load_all(self, tenant: str, key: str) -> list[tuple[str, SiteData]]:
        """Every version of the session, opened, newest first (two store round trips)."""
        ids = await self.ids(tenant, key)
        found = await self.store.read_many([version_key(tenant, key, i) for i in ids])
        return [
            (i, self._open(tenant, key, i, item.value))
            for i, item in zip(ids, found, strict=True)
            if item is not None
        ]

    async def put(self, tenant: str, key: str, ident: str, snapshot: SiteData) -> None:
        """Replace version ``ident`` with ``snapshot`` (a Forget), sealed for its place,
        with the session's TTL."""
        sealed = self._seal(tenant, key, ident, dump_site_data(snapshot))
        await self.store.set(version_key(tenant, key, ident), sealed, ttl=self.settings.session_ttl)

    async def forget_host(self, tenant: str, key: str, host: str) -> int:
        """Remove ``host`` from every version as Forget removes it from the snapshot
        (``sitedata.forget_host``); a version left holding no host goes. Returns how many
        versions held it."""
        changed = 0
        for ident, snapshot in await self.load_all(tenant, key):
            if host not in {r.site for r in sitedata.host_rows(snapshot, ())}:
                continue
            changed += 1
            left = sitedata.forget_host(snapshot, host)
            if sitedata.host_rows(left, ()):
                await self.put(tenant, key, ident, left)
            else:
                await self.store.delete(version_key(tenant, key, ident))
        return changed

    async def holding(self, tenant: str, key: str, host: str) -> bool:
        """Whether a version of the session holds ``host``."""
        return any(
            host in {r.site for r in sitedata.host_rows(snapshot, ())}
            for _, snapshot in await self.load_all(tenant, key)
        )

    async def delete_all(self, tenant: str, key: str) -> int:
        """Delete every version of the session; how many there were."""
        found = await self.store.keys(versions_prefix(tenant, key))
        return await self.store.delete(*found) if found else 0
