"""Profiles: named, shared, sealed site data that sessions open from (SPEC §9, §12).

A profile is metadata in the clear (name, visibility, country, the hosts of its cookies,
when it was captured and when its first persistent cookie expires) and a SiteData sealed
for ``(tenant, "profile", id)``: the store never sees a value, and a blob moved to another
profile, tenant or kind does not open.

**One gate** (:func:`gate`) decides every operation, for every facade:

==============  =======================  ================================================
visibility      who                      read · use          update · delete · capture
==============  =======================  ================================================
private         its creator              yes                 yes
private         anyone else (admins too) 404 — no existence leak
workspace       its creator, an admin    yes                 yes
workspace       another member           yes                 403
==============  =======================  ================================================

Another tenant's profile is never found (rows are keyed by tenant). Values (the storage
state export) go only to those who may manage the profile: a member who may only use a
workspace profile sees its metadata and per-host counts.

Each write of a profile's site data (a capture, a save with ``profile``, an import, a
restore) keeps the site data it replaces as a version (issue #26), sealed for
``(tenant, "profile-version", "{id}/{version}")``, the newest ``SITEKEEP_VERSIONS``; a
write goes in only over the envelope it read (``ProfileStore.put_over``), so two captures
at once never lose one: the later is written over the earlier, which it keeps.
"""

from __future__ import annotations

import builtins
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from sitekeep.cookies import cookie_host, cookie_origin, covers_host
from sitekeep.errors import Conflict, Forbidden, InvalidInput, NotFound
from sitekeep.history import origin_of
from sitekeep.limits import MAX_PROFILE_NAME
from sitekeep.masking import carried
from sitekeep.model import (
    OriginStorage,
    Principal,
    SignIn,
    SiteData,
    dump_site_data,
    load_site_data,
)
from sitekeep.signin import judge
from sitekeep.state_preview import select_cookies
from sitekeep.stores.base import (
    Clock,
    ProfileRow,
    ProfileStore,
    ProfileVersionRow,
    Visibility,
    system_clock,
)
from sitekeep.stores.cipher import Cipher
from sitekeep.versions import PROFILE_VERSION_KIND, kept_at, new_id
from sitekeep.versions import check_id as check_version

__all__ = [
    "EXPIRY_SOON_DAYS",
    "KIND",
    "GatedProfiles",
    "Loaded",
    "Op",
    "captured",
    "check_country",
    "first_site",
    "gate",
    "landing",
    "may_manage",
    "profile_json",
]

KIND = "profile"
"""The cipher's kind for a profile's sealed site data (SPEC §12)."""

EXPIRY_SOON_DAYS = 7
"""Within this many days of ``expires_at`` a list says "expires in N days" (SPEC §9)."""

Op = Literal["read", "use", "update", "delete", "capture"]
_MANAGE: frozenset[Op] = frozenset({"update", "delete", "capture"})
_VISIBILITIES: tuple[Visibility, ...] = ("private", "workspace")
_COUNTRY = re.compile(r"^[a-z]{2}$")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def may_manage(row: ProfileRow, who: Principal) -> bool:
    """Whether ``who`` may update, delete or capture into ``row`` (and see its values)."""
    if who.tenant != row.tenant:
        return False
    if who.subject == row.created_by:
        return True
    return row.visibility == "workspace" and who.role == "admin"


def gate(
    row: ProfileRow | None, who: Principal, op: Op, ident: str, field: str | None = "id"
) -> ProfileRow:
    """The one gate of every profile operation (SPEC §9). ``field`` is the caller's
    argument that held ``ident`` (``id`` in the routes, ``profile`` in ``open_session``).

    Returns:
        ``row``, when ``who`` may do ``op`` with it.

    Raises:
        NotFound: ``("profile", ident)`` (``field``) — no such profile in ``who``'s tenant, or a
            private one of someone else (admins included: its existence is not revealed).
        Forbidden: a workspace profile that ``who`` may read and use but not manage.
    """
    if row is None or row.tenant != who.tenant:
        raise NotFound("profile", ident, field=field)
    if row.visibility == "private" and row.created_by != who.subject:
        raise NotFound("profile", ident, field=field)
    if op in _MANAGE and not may_manage(row, who):
        raise Forbidden(
            f"profile {ident!r} is shared with the workspace: only its creator or an admin "
            f"may {op} it"
        )
    return row


def check_name(name: object) -> str:
    """A profile's name: 1–128 characters, no control characters, spaces trimmed.

    Raises:
        InvalidInput: field ``name``.
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("a profile needs a name", field="name")
    name = name.strip()
    if len(name) > MAX_PROFILE_NAME or any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise InvalidInput(
            f"a profile name is 1–{MAX_PROFILE_NAME} characters without control characters",
            field="name",
        )
    return name


def check_visibility(value: object) -> Visibility:
    """``private`` or ``workspace``. Raises: InvalidInput (field ``visibility``)."""
    for visibility in _VISIBILITIES:
        if value == visibility:
            return visibility
    raise InvalidInput("visibility must be private or workspace", field="visibility")


def check_country(value: object, field: str = "country") -> str:
    """An ISO 3166-1 alpha-2 country code, lower case (``de``, ``us``).

    Raises:
        InvalidInput: ``field`` — not two letters.
    """
    if not isinstance(value, str) or not _COUNTRY.match(value.strip().lower()):
        raise InvalidInput("a country is its two-letter ISO 3166-1 code (de, us)", field=field)
    return value.strip().lower()


def check_id(ident: object, field: str | None = "id") -> str:
    """A profile id as sitekeep makes them. Raises: NotFound for anything else (``field``)."""
    if not isinstance(ident, str) or not _ID.match(ident):
        raise NotFound("profile", str(ident)[:64], field=field)
    return ident


def captured(
    site_data: SiteData,
    selection: Sequence[Mapping[str, object]] | None,
    now: float,
    landed: str | None = None,
) -> SiteData:
    """What a capture keeps of ``site_data`` (SPEC §9): its unexpired cookies (all, or
    those ``selection`` names as ``{domain, name}``), every origin's localStorage and the
    main tab's sessionStorage; not IndexedDB nor other tabs; the mask of what it keeps
    (``masking.carried``) and the sign-in state of the hosts it keeps (SPEC §18). The
    origin of ``landed`` (the URL the capture was taken on) is kept too, with no storage
    when it had none,
    so the profile knows where it was signed in, scheme and port included (restoring
    writes nothing for it).

    Raises:
        InvalidInput: ``cookies`` — a selection matching no unexpired cookie.
    """
    cookies = select_cookies(site_data.cookies, selection, now)
    origins = {o: replace(s, indexed_db=()) for o, s in site_data.origins.items()}
    origin = origin_of(landed) if landed else None
    if origin is not None and origin not in origins:
        origins[origin] = OriginStorage({})
    kept = SiteData(
        cookies=tuple(cookies),
        origins=origins,
        session=site_data.session,
        saved_at=now,
        user_agent=site_data.user_agent,
    )
    return replace(kept, mask=carried(site_data.mask, kept), sign_in=_still(site_data, kept, now))


def _still(site_data: SiteData, kept: SiteData, now: float) -> dict[str, SignIn]:
    """The sign-in state of each host ``kept`` holds: judged again from the cookies it
    kept (a selection may leave a sign-in cookie out) — unless a check judged it, or it
    was signed out already (a sign-in page: no cookie chosen makes it signed in)."""
    states = judge(kept, now)
    for host, was in site_data.sign_in.items():
        if host in states and (was.evidence.get("source") == "check" or was.state == "signed_out"):
            states[host] = was
    return states


def _derived(site_data: SiteData) -> tuple[tuple[str, ...], float | None]:
    """``cookie_domains`` (hosts, sorted) and ``expires_at`` (the earliest persistent
    cookie's expiry, None when every cookie is a session cookie)."""
    domains = tuple(sorted({cookie_host(c) for c in site_data.cookies}))
    expiries = [c.expiry for c in site_data.cookies if c.expiry is not None]
    return domains, float(min(expiries)) if expiries else None


def _status(row: ProfileRow, now: float) -> dict[str, Any]:
    if row.captured_at is None:
        return {"status": "empty"}
    if row.expires_at is None:
        return {"status": "fresh"}
    left = row.expires_at - now
    if left <= 0:
        return {"status": "expired"}
    days = int(left // 86_400)
    if days < EXPIRY_SOON_DAYS:
        return {"status": "expires_soon", "expires_in_days": days}
    return {"status": "fresh"}


def profile_json(row: ProfileRow, who: Principal, now: float) -> dict[str, Any]:
    """A profile as every facade shows it: metadata, its freshness (``status``: empty,
    fresh, expires_soon with ``expires_in_days``, expired) and whether ``who`` may
    manage it — never the sealed site data."""
    return {
        "id": row.id,
        "name": row.name,
        "visibility": row.visibility,
        "country": row.country,
        "cookie_domains": list(row.cookie_domains),
        "captured_at": row.captured_at,
        "expires_at": row.expires_at,
        "created_by": row.created_by,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        **_status(row, now),
        "can_manage": may_manage(row, who),
    }


@dataclass(frozen=True, slots=True)
class Loaded:
    """A profile's row and its opened site data (empty when never captured)."""

    row: ProfileRow
    site_data: SiteData


_WRITE_ATTEMPTS = 5
"""Writes of a profile's site data tried, each over the envelope read just before, before
the write is refused as busy (another write landed before each)."""


class GatedProfiles:
    """The profile use cases over a ``ProfileStore`` and the cipher, each behind
    :func:`gate` (SPEC §9).

    Args:
        versions: how many versions of its site data a profile keeps (issue #26).
    """

    def __init__(
        self,
        store: ProfileStore,
        cipher: Cipher,
        clock: Clock = system_clock,
        *,
        versions: int = 10,
    ) -> None:
        self._store = store
        self._cipher = cipher
        self._clock = clock
        self._versions = versions

    async def _gated(
        self, who: Principal, ident: str, op: Op, field: str | None = "id"
    ) -> ProfileRow:
        ident = check_id(ident, field)
        return gate(await self._store.get(who.tenant, ident), who, op, ident, field)

    async def create(
        self,
        who: Principal,
        name: object,
        *,
        visibility: object = "private",
        country: object = None,
    ) -> ProfileRow:
        """A new, empty profile of ``who``'s tenant, created by ``who``.

        Raises:
            InvalidInput: a bad ``name``, ``visibility`` or ``country``; nothing stored.
        """
        now = self._clock()
        row = ProfileRow(
            tenant=who.tenant,
            id=secrets.token_hex(8),
            name=check_name(name),
            visibility=check_visibility(visibility),
            country=None if country is None else check_country(country),
            cookie_domains=(),
            created_by=who.subject,
            created_at=now,
            updated_at=now,
        )
        await self._store.put(row)
        return row

    async def list(self, who: Principal) -> builtins.list[ProfileRow]:
        """What ``who`` may read: the tenant's workspace profiles and ``who``'s own."""
        rows = await self._store.list(who.tenant)
        return [r for r in rows if r.visibility == "workspace" or r.created_by == who.subject]

    async def get(
        self, who: Principal, ident: str, op: Op = "read", *, field: str | None = "id"
    ) -> ProfileRow:
        """One profile's row, gated for ``op``. Raises: NotFound (``field``), Forbidden."""
        return await self._gated(who, ident, op, field)

    async def update(self, who: Principal, ident: str, changes: Mapping[str, Any]) -> ProfileRow:
        """Change ``name``, ``visibility`` and/or ``country`` (None clears it).

        Raises:
            InvalidInput: an unknown or bad field; nothing changed.
            NotFound, Forbidden: the gate.
        """
        row = await self._gated(who, ident, "update")
        fields: dict[str, Any] = {}
        for field, value in changes.items():
            if field == "name":
                fields["name"] = check_name(value)
            elif field == "visibility":
                fields["visibility"] = check_visibility(value)
            elif field == "country":
                fields["country"] = None if value is None else check_country(value)
            else:
                raise InvalidInput(f"a profile has no field {field!r} to change", field=field)
        row = replace(row, **fields, updated_at=self._clock())
        await self._store.put(row)
        return row

    async def delete(self, who: Principal, ident: str) -> None:
        """Delete a profile and its site data. Raises: NotFound, Forbidden."""
        row = await self._gated(who, ident, "delete")
        await self._store.delete(row.tenant, row.id)

    async def write(self, who: Principal, ident: str, site_data: SiteData) -> ProfileRow:
        """Replace the profile's site data with ``site_data`` (already what a capture
        keeps), deriving ``cookie_domains`` and ``expires_at``; sealed for this profile.

        Raises:
            NotFound, Forbidden: the gate (``capture``).
        """
        row = await self._gated(who, ident, "capture")
        return await self._write(row, site_data)

    async def _write(self, row: ProfileRow, site_data: SiteData) -> ProfileRow:
        """Write ``site_data`` over the row's, keeping the replaced one as a version; read
        again and tried again while another write lands first.

        Raises:
            NotFound: the profile was deleted meanwhile. Conflict: other writes landed
                first :data:`_WRITE_ATTEMPTS` times; nothing was written.
        """
        domains, expires_at = _derived(site_data)
        plain = dump_site_data(site_data)
        for _ in range(_WRITE_ATTEMPTS):
            now = self._clock()
            kept = self._version_of(row, now)
            now = max(now, kept.kept_at) if kept else now  # never before the version it keeps
            sealed = self._cipher.seal(plain, tenant=row.tenant, kind=KIND, ident=row.id)
            new = replace(
                row,
                cookie_domains=domains,
                expires_at=expires_at,
                captured_at=now,
                updated_at=now,
                sealed=sealed,
            )
            if await self._store.put_over(new, over=row.sealed, version=kept, keep=self._versions):
                return new
            found = await self._store.get(row.tenant, row.id)
            if found is None:
                raise NotFound("profile", row.id, field="id")
            row = found
        raise Conflict(f"profile {row.id!r} was written by other calls meanwhile: try again")

    def _version_of(self, row: ProfileRow, now: float) -> ProfileVersionRow | None:
        """The row's site data as a version kept at ``now``, sealed for its place; None
        when it holds none or none are kept."""
        if row.sealed is None or self._versions == 0:
            return None
        plain = self._cipher.open(row.sealed, tenant=row.tenant, kind=KIND, ident=row.id)
        # The newest version before this one was kept when the row's data was written.
        ident = new_id(now, row.captured_at)
        sealed = self._cipher.seal(
            plain, tenant=row.tenant, kind=PROFILE_VERSION_KIND, ident=f"{row.id}/{ident}"
        )
        return ProfileVersionRow(row.tenant, row.id, ident, kept_at(ident), sealed)

    async def versions(self, who: Principal, ident: str) -> builtins.list[tuple[str, SiteData]]:
        """The profile's versions, opened, newest first, gated for ``read``.

        Raises:
            NotFound, Forbidden: the gate. StoreUnavailable: a version does not open for
            its place.
        """
        row = await self._gated(who, ident, "read")
        found = await self._store.versions(row.tenant, row.id)
        return [(v.id, self._open_version(v)) for v in found]

    async def version(
        self, who: Principal, ident: str, version: str, op: Op = "read"
    ) -> tuple[ProfileRow, SiteData]:
        """The profile's row and one version of its site data, gated for ``op``
        (``capture`` — manage — to see its values or restore it).

        Raises:
            InvalidInput: a malformed ``version``. NotFound: the gate, or no such version
            (``version``). Forbidden: the gate.
        """
        version = check_version(version)
        row = await self._gated(who, ident, op)
        found = await self._store.version(row.tenant, row.id, version)
        if found is None:
            raise NotFound("version", version, field="version")
        return row, self._open_version(found)

    def _open_version(self, version: ProfileVersionRow) -> SiteData:
        plain = self._cipher.open(
            version.sealed,
            tenant=version.tenant,
            kind=PROFILE_VERSION_KIND,
            ident=f"{version.profile}/{version.id}",
        )
        return load_site_data(plain)

    async def restore_version(
        self, who: Principal, ident: str, version: str
    ) -> tuple[ProfileRow, SiteData]:
        """Make one version the profile's site data; what it replaces is kept as a
        version (so a restore can itself be undone). Returns the row written and the
        version's site data.

        Raises:
            InvalidInput: a malformed ``version``. NotFound: the gate, or no such version.
            Forbidden: the gate (``capture``). Conflict: see :meth:`_write`.
        """
        row, site_data = await self.version(who, ident, version, "capture")
        return await self._write(row, site_data), site_data

    async def sealed_versions(self) -> builtins.list[ProfileVersionRow]:
        """Every tenant's profile versions (for key rotation)."""
        return await self._store.every_version()

    async def load(self, who: Principal, ident: str, op: Op, *, field: str | None = "id") -> Loaded:
        """The profile's row and site data, gated for ``op`` (``use`` to open a session
        from it; ``capture`` — manage — to export its values).

        Raises:
            NotFound, Forbidden: the gate (NotFound naming ``field``, the caller's
            argument that held ``ident``). StoreUnavailable: the blob does not open for
            this profile (moved or tampered with).
        """
        row = await self._gated(who, ident, op, field)
        if row.sealed is None:
            return Loaded(row, SiteData())
        plain = self._cipher.open(row.sealed, tenant=row.tenant, kind=KIND, ident=row.id)
        return Loaded(row, load_site_data(plain))

    async def sealed_rows(self) -> builtins.list[ProfileRow]:
        """Every tenant's profiles holding site data (for key rotation)."""
        return [r for r in await self._store.list(None) if r.sealed is not None]

    async def reseal(self, row: ProfileRow) -> bool:
        """Seal ``row``'s site data again under the newest key, unless a capture replaced
        it meanwhile; whether it was rewritten.

        Raises:
            StoreUnavailable: the blob does not open for this profile.
        """
        if row.sealed is None:
            return False
        new = self._cipher.reseal(row.sealed, tenant=row.tenant, kind=KIND, ident=row.id)
        if new is None:
            return False
        return await self._store.swap_sealed(row.tenant, row.id, row.sealed, new)


def first_site(site_data: SiteData) -> str | None:
    """Where a session opened from a profile lands when told nowhere: the first origin
    whose storage it carries, or its sessionStorage's origin; None (``about:blank``) when
    it carries cookies only."""
    for origin in site_data.origins:
        return origin
    return site_data.session.origin if site_data.session is not None else None


def landing(site_data: SiteData) -> str | None:
    """Where "Sign in again" lands: the first origin the profile was saved with (scheme,
    host and port as saved) that one of its cookies is sent to (RFC 6265bis §5.1.3,
    :func:`~sitekeep.cookies.covers_host`), else its first origin at all
    (:func:`first_site`), else its first cookie's host — ``https``
    when that cookie is Secure, ``http`` otherwise (no port is known then); None
    (``about:blank``) for an empty profile."""
    origins = list(site_data.origins)
    if site_data.session is not None:
        origins.append(site_data.session.origin)
    for origin in origins:
        host = urlsplit(origin).hostname or ""
        if any(covers_host(cookie, host) for cookie in site_data.cookies):
            return origin + "/"
    first = first_site(site_data)
    if first is not None:
        return first + "/"
    if not site_data.cookies:
        return None
    return cookie_origin(site_data.cookies[0]) + "/"
