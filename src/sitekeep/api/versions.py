"""HTTP routes of the versions of saved site data (issue #26), for sessions and profiles.

Every save keeps the snapshot it replaces as a version; these list them (newest first,
counts and sizes, never a value), show one, show one host of one in full (who may see the
values: ``…/hosts/{site}``, so no host is ever taken for ``restore``), and make one
current again. ``sessions_router`` is matched before the sessions' own routes:
``…/site-data/versions`` would otherwise be a host named ``versions``.

Routes::

    GET  /v1/sessions/{key}/site-data/versions                      {key, versions: [...]}
    GET  /v1/sessions/{key}/site-data/versions/{version}            {key, id, kept_at, …}
    GET  /v1/sessions/{key}/site-data/versions/{version}/hosts/{site} one host (owner)
    POST /v1/sessions/{key}/site-data/versions/{version}/restore    {key, restored, hint?}
    GET  /v1/profiles/{id}/versions                                 {profile, versions: [...]}
    GET  /v1/profiles/{id}/versions/{version}                       {profile, id, kept_at, …}
    GET  /v1/profiles/{id}/versions/{version}/hosts/{site}          one host (managers)
    POST /v1/profiles/{id}/versions/{version}/restore               {profile, restored}
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from sitekeep.api.deps import JSON, Ident, Key, Site, Svc, Who
from sitekeep.args import MAX_NAME, VERSION_PATTERN, VersionChoice, unchecked

__all__ = ["profiles_router", "sessions_router"]

Version = Annotated[
    str,
    Path(
        description="A version's id, from the versions list.",
        pattern=VERSION_PATTERN,
        max_length=MAX_NAME,
    ),
]


def _choice(version: str) -> VersionChoice:
    return unchecked(VersionChoice, version=version)  # the service checks its form


sessions_router = APIRouter(prefix="/v1/sessions/{key}/site-data/versions", tags=["site data"])


@sessions_router.get("")
async def session_versions(key: Key, who: Who, svc: Svc) -> JSON:
    """The versions of the session's saved site data, newest first: per host, counts,
    sizes and the sign-in state recorded with it — never a value."""
    return await svc.versions.of_session(who, key)


@sessions_router.get("/{version}")
async def session_version(key: Key, version: Version, who: Who, svc: Svc) -> JSON:
    """One version, as the list shows it."""
    return await svc.versions.session_version(who, key, _choice(version))


@sessions_router.get("/{version}/hosts/{site}")
async def session_version_host(key: Key, version: Version, site: Site, who: Who, svc: Svc) -> JSON:
    """One host of one version in full, httpOnly values ``•••`` (owner or admin)."""
    return await svc.versions.session_version_host(who, key, _choice(version), site)


@sessions_router.post("/{version}/restore")
async def restore_session_version(key: Key, version: Version, who: Who, svc: Svc) -> JSON:
    """Make the version the session's saved site data; the one it replaces is kept as a
    version. The live browser keeps what it has (owner or admin)."""
    return await svc.versions.restore_session_version(who, key, _choice(version))


profiles_router = APIRouter(prefix="/v1/profiles/{ident}/versions", tags=["profiles"])


@profiles_router.get("")
async def profile_versions(ident: Ident, who: Who, svc: Svc) -> JSON:
    """The versions of the profile's site data, newest first (never a value)."""
    return await svc.versions.of_profile(who, ident)


@profiles_router.get("/{version}")
async def profile_version(ident: Ident, version: Version, who: Who, svc: Svc) -> JSON:
    """One version, as the list shows it."""
    return await svc.versions.profile_version(who, ident, _choice(version))


@profiles_router.get("/{version}/hosts/{site}")
async def profile_version_host(
    ident: Ident, version: Version, site: Site, who: Who, svc: Svc
) -> JSON:
    """One host of one version in full (who may manage the profile)."""
    return await svc.versions.profile_version_host(who, ident, _choice(version), site)


@profiles_router.post("/{version}/restore")
async def restore_profile_version(ident: Ident, version: Version, who: Who, svc: Svc) -> JSON:
    """Make the version the profile's site data; the one it replaces is kept as a
    version (who may capture into it)."""
    return await svc.versions.restore_profile_version(who, ident, _choice(version))
