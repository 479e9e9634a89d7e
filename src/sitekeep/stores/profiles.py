"""Profiles and the proxy pool in the SQL database (SPEC §9, §14; ``ProfileStore``,
``ProxyStore``).

Rows as given: a profile's metadata in the clear, its site data only inside ``sealed`` —
an envelope :mod:`sitekeep.profiles` made with the cipher; this store never sees a value.
A profile's versions (issue #26) are rows of ``profile_versions``, each sealed on its own;
they go with their profile. A proxy row holds no credentials, only the name of the secret
that does.
"""

from __future__ import annotations

import builtins
import json
from dataclasses import asdict
from typing import Any

import sqlalchemy as sa

from sitekeep.stores.base import ProfileRow, ProfileVersionRow, ProxyRow
from sitekeep.stores.database import Database
from sitekeep.stores.schema import profile_versions, profiles, proxies

__all__ = ["SqlProfileStore", "SqlProxyStore"]

_PROFILES = "the profiles database"
_PROXIES = "the proxies database"


def _profile(row: Any) -> ProfileRow:
    return ProfileRow(
        tenant=row.tenant,
        id=row.id,
        name=row.name,
        visibility=row.visibility,
        country=row.country,
        cookie_domains=tuple(json.loads(row.cookie_domains)),
        created_by=row.created_by,
        created_at=row.created_at,
        updated_at=row.updated_at,
        captured_at=row.captured_at,
        expires_at=row.expires_at,
        sealed=bytes(row.sealed) if row.sealed is not None else None,
    )


def _profile_where(tenant: str, ident: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (profiles.c.tenant == tenant, profiles.c.id == ident)


def _profile_values(row: ProfileRow) -> dict[str, Any]:
    return {
        "tenant": row.tenant,
        "id": row.id,
        "name": row.name,
        "visibility": row.visibility,
        "country": row.country,
        "cookie_domains": json.dumps(list(row.cookie_domains)),
        "created_by": row.created_by,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "captured_at": row.captured_at,
        "expires_at": row.expires_at,
        "sealed": row.sealed,
    }


def _version(row: Any) -> ProfileVersionRow:
    return ProfileVersionRow(row.tenant, row.profile, row.id, row.kept_at, bytes(row.sealed))


def _versions_of(tenant: str, ident: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (profile_versions.c.tenant == tenant, profile_versions.c.profile == ident)


_NEWEST_FIRST = (profile_versions.c.kept_at.desc(), profile_versions.c.id.desc())


def _keep_version(conn: sa.Connection, version: ProfileVersionRow, keep: int) -> None:
    """Add ``version`` to its profile's versions and drop all but the newest ``keep``."""
    conn.execute(sa.insert(profile_versions).values(**asdict(version)))  # columns as fields
    where = _versions_of(version.tenant, version.profile)
    ids = conn.execute(sa.select(profile_versions.c.id).where(*where).order_by(*_NEWEST_FIRST))
    extra = [r.id for r in ids.all()[keep:]]
    if extra:
        conn.execute(sa.delete(profile_versions).where(*where, profile_versions.c.id.in_(extra)))


class SqlProfileStore:
    """The ``profiles`` and ``profile_versions`` tables; see ``ProfileStore`` for the
    contract."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def put(self, row: ProfileRow) -> None:
        values = _profile_values(row)

        def write(conn: sa.Connection) -> None:
            conn.execute(sa.delete(profiles).where(*_profile_where(row.tenant, row.id)))
            conn.execute(sa.insert(profiles).values(**values))

        await self._db.run(_PROFILES, write, write=True)

    async def put_over(
        self,
        row: ProfileRow,
        *,
        over: bytes | None,
        version: ProfileVersionRow | None = None,
        keep: int = 0,
    ) -> bool:
        values = _profile_values(row)
        where = _profile_where(row.tenant, row.id)
        still = profiles.c.sealed.is_(None) if over is None else profiles.c.sealed == over

        def write(conn: sa.Connection) -> bool:
            if conn.execute(sa.update(profiles).where(*where, still).values(**values)).rowcount:
                if version is not None and keep > 0:
                    _keep_version(conn, version, keep)
                return True
            return False

        return await self._db.run(_PROFILES, write, write=True)

    async def versions(self, tenant: str, ident: str) -> builtins.list[ProfileVersionRow]:
        def read(conn: sa.Connection) -> builtins.list[ProfileVersionRow]:
            query = sa.select(profile_versions).where(*_versions_of(tenant, ident))
            return [_version(r) for r in conn.execute(query.order_by(*_NEWEST_FIRST))]

        return await self._db.read(_PROFILES, read)

    async def version(self, tenant: str, ident: str, version: str) -> ProfileVersionRow | None:
        def read(conn: sa.Connection) -> ProfileVersionRow | None:
            where = (*_versions_of(tenant, ident), profile_versions.c.id == version)
            row = conn.execute(sa.select(profile_versions).where(*where)).first()
            return _version(row) if row else None

        return await self._db.read(_PROFILES, read)

    async def every_version(self) -> builtins.list[ProfileVersionRow]:
        def read(conn: sa.Connection) -> builtins.list[ProfileVersionRow]:
            rows = [_version(r) for r in conn.execute(sa.select(profile_versions))]
            return sorted(rows, key=lambda r: (r.tenant, r.profile, r.id))

        return await self._db.read(_PROFILES, read)

    async def swap_version_sealed(
        self, tenant: str, ident: str, version: str, old: bytes, new: bytes
    ) -> bool:
        where = (*_versions_of(tenant, ident), profile_versions.c.id == version)

        def swap(conn: sa.Connection) -> bool:
            update = (
                sa.update(profile_versions)
                .where(*where, profile_versions.c.sealed == old)
                .values(sealed=new)
            )
            return conn.execute(update).rowcount > 0

        return await self._db.run(_PROFILES, swap, write=True)

    async def get(self, tenant: str, ident: str) -> ProfileRow | None:
        def read(conn: sa.Connection) -> ProfileRow | None:
            found = conn.execute(sa.select(profiles).where(*_profile_where(tenant, ident)))
            row = found.first()
            return _profile(row) if row else None

        return await self._db.read(_PROFILES, read)

    async def list(self, tenant: str | None) -> builtins.list[ProfileRow]:
        def read(conn: sa.Connection) -> builtins.list[ProfileRow]:
            query = sa.select(profiles)
            if tenant is not None:
                query = query.where(profiles.c.tenant == tenant)
            rows = [_profile(r) for r in conn.execute(query).all()]
            return sorted(rows, key=lambda r: (r.tenant, r.name, r.id))

        return await self._db.read(_PROFILES, read)

    async def delete(self, tenant: str, ident: str) -> bool:
        def remove(conn: sa.Connection) -> bool:
            conn.execute(sa.delete(profile_versions).where(*_versions_of(tenant, ident)))
            return (
                conn.execute(sa.delete(profiles).where(*_profile_where(tenant, ident))).rowcount > 0
            )

        return await self._db.run(_PROFILES, remove, write=True)

    async def swap_sealed(self, tenant: str, ident: str, old: bytes, new: bytes) -> bool:
        def swap(conn: sa.Connection) -> bool:
            update = (
                sa.update(profiles)
                .where(*_profile_where(tenant, ident), profiles.c.sealed == old)
                .values(sealed=new)
            )
            return conn.execute(update).rowcount > 0

        return await self._db.run(_PROFILES, swap, write=True)


def _proxy(row: Any) -> ProxyRow:
    return ProxyRow(row.tenant, row.name, row.country, row.url, row.auth_secret, row.updated_at)


def _proxy_where(tenant: str, name: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (proxies.c.tenant == tenant, proxies.c.name == name)


class SqlProxyStore:
    """The ``proxies`` table; see ``ProxyStore`` for the contract."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def put(self, row: ProxyRow) -> None:
        values = {
            "tenant": row.tenant,
            "name": row.name,
            "country": row.country,
            "url": row.url,
            "auth_secret": row.auth_secret,
            "updated_at": row.updated_at,
        }

        def write(conn: sa.Connection) -> None:
            conn.execute(sa.delete(proxies).where(*_proxy_where(row.tenant, row.name)))
            conn.execute(sa.insert(proxies).values(**values))

        await self._db.run(_PROXIES, write, write=True)

    async def get(self, tenant: str, name: str) -> ProxyRow | None:
        def read(conn: sa.Connection) -> ProxyRow | None:
            row = conn.execute(sa.select(proxies).where(*_proxy_where(tenant, name))).first()
            return _proxy(row) if row else None

        return await self._db.read(_PROXIES, read)

    async def list(self, tenant: str) -> builtins.list[ProxyRow]:
        def read(conn: sa.Connection) -> builtins.list[ProxyRow]:
            rows = conn.execute(sa.select(proxies).where(proxies.c.tenant == tenant)).all()
            return sorted((_proxy(r) for r in rows), key=lambda r: r.name)

        return await self._db.read(_PROXIES, read)

    async def delete(self, tenant: str, name: str) -> bool:
        def remove(conn: sa.Connection) -> bool:
            return conn.execute(sa.delete(proxies).where(*_proxy_where(tenant, name))).rowcount > 0

        return await self._db.run(_PROXIES, remove, write=True)
