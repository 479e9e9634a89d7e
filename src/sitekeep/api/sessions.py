"""HTTP routes of sessions and their pages: ``/v1/sessions…`` (SPEC §3, §4, §5, §6).

Handlers parse, call the service and return its result. A page operation's body is its
arguments, validated by ``sitekeep.args`` so errors name the field.

Routes::

    GET    /v1/sessions                          {sessions: [row]}
    POST   /v1/sessions                          open (or return to) a session's browser
    GET    /v1/sessions/{key}                    where it is, and its saved data in short
    GET    /v1/sessions/{key}/webdriver          hand its live browser over (SPEC §21)
    POST   /v1/sessions/{key}/navigate|back|…    one page operation (``args.OPERATIONS``)
    POST   /v1/sessions/{key}/flows              several steps in one call
    POST   /v1/sessions/{key}/save-site-data     save what its sites keep
    DELETE /v1/sessions/{key}/browser            close its browser (the session stays; it
                                                 saves by itself first unless ?autosave=false)
    DELETE /v1/sessions/{key}                    delete it
    GET    /v1/sessions/{key}/site-data          saved site data by host, counts only
    GET    /v1/sessions/{key}/site-data/{site}   one host in full (owner or admin)
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, FastAPI, Query, Request
from pydantic import BaseModel

from sitekeep.api.deps import JSON, Key, Site, Svc, Who
from sitekeep.args import OPERATIONS, FlowBody, NavigateBody, OpenBody, SaveBody

__all__ = ["current", "install_current", "router"]


# GET /v1/sessions/{key}, the hottest read: install_current puts it on the app itself. (No
# docstring: it would become the operation's description in the OpenAPI document.)
async def current(key: Key, who: Who, svc: Svc) -> JSON:
    return await svc.views.current(who, key)


def install_current(app: FastAPI) -> None:
    """Serve :func:`current` as a route of ``app`` itself, to be matched first: an
    included router is matched through a wrapper (FastAPI 0.16x), 0.02 ms of CPU a
    request (``bench/api_load.py --in-process``)."""
    app.get("/v1/sessions/{key}", tags=["sessions"])(current)


router = APIRouter(prefix="/v1/sessions")

AutosaveQuery = Annotated[
    bool,
    Query(
        description="false: close without the automatic save (this close only; the "
        "session's own autosave setting stays)."
    ),
]


@router.get("", tags=["sessions"])
async def list_sessions(who: Who, svc: Svc) -> JSON:
    """The caller's tenant's sessions, most recently used first (no browser touched)."""
    return {"sessions": await svc.views.sessions(who)}


@router.get("/{key}/webdriver", tags=["sessions"])
async def webdriver(key: Key, who: Who, svc: Svc, request: Request) -> JSON:
    """Hand the session's live browser over (admin or the session's owner: it goes
    signed in): a WebDriver URL and session id, a BiDi URL, served by sitekeep and
    reaching this browser only, until ``expires_at`` or sooner (SPEC §21)."""
    return await svc.handovers.issue(who, key, str(request.base_url))


@router.post("", tags=["sessions"])
async def open_session(who: Who, svc: Svc, body: OpenBody | None = None) -> JSON:
    return await svc.sessions.open(who, body or OpenBody())


@router.post("/{key}/navigate", tags=["pages"])
async def navigate(key: Key, body: NavigateBody, who: Who, svc: Svc) -> JSON:
    return await svc.sessions.navigate(who, key, body.url)


def _page_route(op: str, model: type[BaseModel]) -> None:
    """``POST /v1/sessions/{key}/<op>`` (``type_secret`` → ``type-secret``): the body is
    the operation's arguments, validated by ``sitekeep.args`` so errors name the field."""

    async def handler(
        key: Key, who: Who, svc: Svc, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> JSON:
        return await svc.sessions.act(who, key, op, **(body or {}))

    schema = {"content": {"application/json": {"schema": model.model_json_schema()}}}
    router.post(
        f"/{{key}}/{op.replace('_', '-')}",
        tags=["pages"],
        name=op,
        openapi_extra={"requestBody": schema},
    )(handler)


for _op, _model in OPERATIONS.items():
    if _op not in ("navigate", "save_site_data", "wait_for", "assert_text"):
        _page_route(_op, _model)


@router.post("/{key}/flows", tags=["flows"])
async def run_flow(key: Key, body: FlowBody, who: Who, svc: Svc) -> JSON:
    return await svc.flows.run(who, key, body)


@router.post("/{key}/save-site-data", tags=["site data"])
async def save_site_data(key: Key, who: Who, svc: Svc, body: SaveBody | None = None) -> JSON:
    return await svc.sessions.save_site_data(who, key, body or SaveBody())


@router.delete("/{key}/browser", tags=["sessions"])
async def close_browser(key: Key, who: Who, svc: Svc, autosave: AutosaveQuery = True) -> JSON:
    return await svc.sessions.close(who, key, autosave=autosave)


@router.delete("/{key}", tags=["sessions"])
async def delete_session(key: Key, who: Who, svc: Svc) -> JSON:
    return await svc.sessions.delete(who, key)


@router.get("/{key}/site-data", tags=["site data"])
async def site_data(key: Key, who: Who, svc: Svc) -> JSON:
    return await svc.views.site_data(who, key)


@router.get("/{key}/site-data/{site}", tags=["site data"])
async def site_data_host(key: Key, site: Site, who: Who, svc: Svc) -> JSON:
    return await svc.views.site_data_host(who, key, site)
