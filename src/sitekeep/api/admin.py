"""HTTP routes of the admin API: ``/admin/sessions…`` (SPEC §11).

Admin tokens only: a member's token gets 403 before anything is read (the gate is a
dependency calling the one admin gate, :func:`sitekeep.service.require_admin`,
and no route here has a body); another tenant's session is 404. Handlers parse, call
``service.admin`` and return its result.

Routes::

    GET    /admin/runs?open=&limit=               {runs: [run]}: the run ledger (SPEC §13)
    GET    /admin/sessions                        {sessions: [row]} (revisions of both panes)
    GET    /admin/sessions/{key}/history          {key, rows, clears, goes, stays, history_rev}
    DELETE /admin/sessions/{key}/history          Clear: {key, gone: [origins], kept: [origin]}
    GET    /admin/sessions/{key}/site-data        {key, saved_at, hosts, site_data_rev}
    DELETE /admin/sessions/{key}/site-data        Clear: {key, gone: [hosts]}
    GET    /admin/sessions/{key}/site-data/{site} one host in full, httpOnly values "•••"
    DELETE /admin/sessions/{key}/site-data/{site} Forget: {key, site, gone, hosts}
    GET    /admin/sessions/{key}/journal?after=&limit=  {key, rows, next}: the timeline
    GET    /admin/tokens                          {tokens: [{id, tenant, subject, role,
                                                  created_at}]} — never a token
    DELETE /admin/tokens/{id}                     revoke: {revoked: {id, …}}; its UI
                                                  sign-ins end
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, FastAPI, Query

from sitekeep.api.deps import JSON, Admin, Ident, Key, Site, Svc

__all__ = ["admin_runs", "install_runs", "router"]

AdminWho = Admin
"""The app's one admin gate (``api.deps.get_admin``): the OpenAPI document finds it there."""

router = APIRouter(prefix="/admin", tags=["admin"])


async def admin_runs(
    who: AdminWho,
    svc: Svc,
    open_only: Annotated[bool, Query(alias="open")] = True,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JSON:
    """The run ledger of the caller's tenant, newest first (admin; SPEC §13): every
    live browser of every replica, or with ``open=false`` the closed ones too."""
    return {"runs": await svc.admin.runs(who, open_only=open_only, limit=limit)}


def install_runs(app: FastAPI) -> None:
    """Serve :func:`admin_runs` (``GET /admin/runs``, a polled read) as a route of ``app``
    itself, as :func:`sitekeep.api.sessions.install_current` does."""
    app.get("/admin/runs", tags=["admin"])(admin_runs)


@router.get("/sessions")
async def admin_sessions(who: AdminWho, svc: Svc) -> JSON:
    """The tenant's sessions with ``history_count``, ``history_rev``, ``site_data_count``
    and ``site_data_rev``, so each pane repaints only for its own changes."""
    return {"sessions": await svc.admin.sessions(who)}


@router.get("/sessions/{key}/history")
async def admin_history(key: Key, who: AdminWho, svc: Svc) -> JSON:
    """Where the session has been, by host, joined with secrets and snapshot counts."""
    return {"key": key, **(await svc.admin.history(who, key)).as_json()}


@router.delete("/sessions/{key}/history")
async def admin_clear_history(key: Key, who: AdminWho, svc: Svc) -> JSON:
    """Clear: keep only the top entry. Site data and the browser are untouched."""
    return await svc.admin.clear_history(who, key)


@router.get("/sessions/{key}/site-data")
async def admin_site_data(key: Key, who: AdminWho, svc: Svc) -> JSON:
    """The snapshot by host, counts only."""
    return {"key": key, **(await svc.admin.site_data(who, key)).as_json()}


@router.delete("/sessions/{key}/site-data")
async def admin_clear_site_data(key: Key, who: AdminWho, svc: Svc) -> JSON:
    """Clear: delete the snapshot. The history and the live browser are untouched."""
    return await svc.admin.clear_site_data(who, key)


@router.get("/sessions/{key}/site-data/{site}")
async def admin_site_data_host(key: Key, site: Site, who: AdminWho, svc: Svc) -> JSON:
    """One host in full, httpOnly values ``•••``."""
    return await svc.admin.site_data_host(who, key, site)


@router.delete("/sessions/{key}/site-data/{site}")
async def admin_forget(key: Key, site: Site, who: AdminWho, svc: Svc) -> JSON:
    """Forget one host: its storage and its own cookies. The history and the live
    browser are untouched."""
    return await svc.admin.forget(who, key, site)


@router.get("/tokens")
async def admin_tokens(who: AdminWho, svc: Svc) -> JSON:
    """The tenant's bearer tokens, oldest first: id (16 hex digits of the SHA-256),
    tenant, subject, role and ``created_at`` — never the token."""
    return {"tokens": [t.as_json() for t in await svc.catalogue.tokens(who)]}


@router.delete("/tokens/{id_}")
async def admin_revoke_token(id_: Ident, who: AdminWho, svc: Svc) -> JSON:
    """Revoke one of the tenant's tokens: it stops authenticating, and the admin UI
    sign-ins made with it end. 404 for another tenant's token or an unknown id."""
    return {"revoked": (await svc.catalogue.revoke_token(who, id_)).as_json()}


@router.get("/sessions/{key}/journal")
async def admin_journal(
    key: Key,
    who: AdminWho,
    svc: Svc,
    after: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JSON:
    """The session's journal as a timeline (SPEC §8): operation, redacted arguments,
    outcome, url and duration per row, oldest first; ``next`` pages on (None at the end)."""
    return await svc.admin.journal(who, key, after=after, limit=limit)
