"""HTTP routes of the per-site sign-in checks (SPEC §18; issue #26).

Routes::

    GET    /v1/sessions/{key}/checks            {key, checks: {host: check}}
    GET    /v1/sessions/{key}/checks/{host}     {key, host, check}
    PUT    /v1/sessions/{key}/checks/{host}     {url, signed_in, signed_out?} -> {key, host, check}
    DELETE /v1/sessions/{key}/checks/{host}     {key, host, deleted}
    POST   /v1/sessions/{key}/check             run now -> {key, sign_in}
    … and the same under /v1/profiles/{id} ({id, …})
"""

from __future__ import annotations

from fastapi import APIRouter

from sitekeep.api.deps import JSON, Ident, Key, Site, Svc, Who
from sitekeep.args import CheckBody

__all__ = ["profiles_router", "sessions_router"]

sessions_router = APIRouter(prefix="/v1/sessions", tags=["sign-in"])
profiles_router = APIRouter(prefix="/v1/profiles", tags=["sign-in"])


@sessions_router.get("/{key}/checks")
async def session_checks(key: Key, who: Who, svc: Svc) -> JSON:
    """The session's sign-in checks, by host."""
    return await svc.checks.session_checks(who, key)


@sessions_router.get("/{key}/checks/{host}")
async def session_check(key: Key, host: Site, who: Who, svc: Svc) -> JSON:
    """The session's check of one host."""
    return await svc.checks.session_check(who, key, host)


@sessions_router.put("/{key}/checks/{host}")
async def put_session_check(key: Key, host: Site, body: CheckBody, who: Who, svc: Svc) -> JSON:
    """Define (or replace) the session's check of ``host``: a page of that host loaded in
    a background tab, and what it shows when signed in (and, optionally, signed out)."""
    return await svc.checks.put_session_check(who, key, host, body)


@sessions_router.delete("/{key}/checks/{host}")
async def delete_session_check(key: Key, host: Site, who: Who, svc: Svc) -> JSON:
    """Remove the session's check of ``host``."""
    return await svc.checks.delete_session_check(who, key, host)


@sessions_router.post("/{key}/check")
async def run_session_checks(key: Key, who: Who, svc: Svc) -> JSON:
    """Judge every site of the session now: its checks in background tabs (the page is
    untouched), the heuristic for the rest; ``sign_in`` by host."""
    return await svc.checks.run_session(who, key)


@profiles_router.get("/{ident}/checks")
async def profile_checks(ident: Ident, who: Who, svc: Svc) -> JSON:
    """The profile's sign-in checks, by host."""
    return await svc.checks.profile_checks(who, ident)


@profiles_router.get("/{ident}/checks/{host}")
async def profile_check(ident: Ident, host: Site, who: Who, svc: Svc) -> JSON:
    """The profile's check of one host."""
    return await svc.checks.profile_check(who, ident, host)


@profiles_router.put("/{ident}/checks/{host}")
async def put_profile_check(ident: Ident, host: Site, body: CheckBody, who: Who, svc: Svc) -> JSON:
    """Define (or replace) the profile's check of ``host`` (who may manage it)."""
    return await svc.checks.put_profile_check(who, ident, host, body)


@profiles_router.delete("/{ident}/checks/{host}")
async def delete_profile_check(ident: Ident, host: Site, who: Who, svc: Svc) -> JSON:
    """Remove the profile's check of ``host``."""
    return await svc.checks.delete_profile_check(who, ident, host)


@profiles_router.post("/{ident}/check")
async def run_profile_checks(ident: Ident, who: Who, svc: Svc) -> JSON:
    """Judge every site of the profile now, in a throwaway browser its data is restored
    into; ``sign_in`` by host."""
    return await svc.checks.run_profile(who, ident)
