"""HTTP routes of sessions and their pages: ``/v1/sessions…`` (SPEC §3, §4, §5, §6).

Handlers parse, call the service and return its result. A page operation's body is its
arguments, validated by ``sitekeep.steps`` so errors name the field.

Routes::

    GET    /v1/sessions                          {sessions: [row]}
    POST   /v1/sessions                          open (or return to) a session's browser
    GET    /v1/sessions/{key}                    where it is, and its saved data in short
    GET    /v1/sessions/{key}/webdriver          hand its live browser over (SPEC §21)
    POST   /v1/sessions/{key}/navigate|back|…    one page operation (``steps.OPERATIONS``)
    POST   /v1/sessions/{key}/flows              several steps in one call
    POST   /v1/sessions/{key}/save-site-data     save what its sites keep
    DELETE /v1/sessions/{key}/browser            close its browser (the session stays)
    DELETE /v1/sessions/{key}                    delete it
    GET    /v1/sessions/{key}/site-data          saved site data by host, counts only
    GET    /v1/sessions/{key}/site-data/{site}   one host in full (owner or admin)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, FastAPI, Request
from pydantic import BaseModel, Field

from sitekeep.api.body import StrictBody
from sitekeep.api.deps import JSON, KEY_PATTERN, Key, Site, Svc, Who
from sitekeep.limits import MAX_KEY, MAX_NAME, MAX_STEPS, MAX_URL
from sitekeep.steps import OPERATIONS

__all__ = ["SessionChoice", "current", "install_current", "router"]


class SessionChoice(StrictBody):
    """Which session, in which browser, at which URL, from which profile, through which
    country's proxy: what ``POST /v1/sessions`` and ``POST /v1/live-sessions`` share."""

    key: str | None = Field(default=None, pattern=KEY_PATTERN, max_length=MAX_KEY)
    browser: Literal["chromium", "firefox"] | None = None
    url: str | None = Field(default=None, max_length=MAX_URL)
    profile: str | None = Field(default=None, max_length=MAX_NAME)
    country: str | None = Field(default=None, max_length=MAX_NAME)


class OpenBody(SessionChoice):
    restore_site_data: bool = True
    fresh: bool = False
    insecure: bool = False
    keep_user_agent: bool | None = None
    """Run under the User-Agent the site data was saved under (kept for the session)."""


class NavigateBody(StrictBody):
    url: str = Field(max_length=MAX_URL)


class SaveBody(StrictBody):
    profile: str | None = Field(default=None, max_length=MAX_NAME)
    indexed_db: bool = False
    """Also carry every visited origin's IndexedDB databases (schema and records)."""
    full: bool = False
    """Read every origin through the spare tab (ignore the copies captured on leave)."""


class FlowBody(StrictBody):
    steps: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_STEPS)
    on_error: Literal["stop", "continue"] = "stop"


# GET /v1/sessions/{key}, the hottest read: install_current puts it on the app itself. (No
# docstring: it would become the operation's description in the OpenAPI document.)
async def current(key: Key, who: Who, svc: Svc) -> JSON:
    return await svc.current(who, key)


def install_current(app: FastAPI) -> None:
    """Serve :func:`current` as a route of ``app`` itself, to be matched first: an
    included router is matched through a wrapper (FastAPI 0.16x), 0.02 ms of CPU a
    request (``bench/api_load.py --in-process``)."""
    app.get("/v1/sessions/{key}", tags=["sessions"])(current)


router = APIRouter(prefix="/v1/sessions")


@router.get("", tags=["sessions"])
async def list_sessions(who: Who, svc: Svc) -> JSON:
    """The caller's tenant's sessions, most recently used first (no browser touched)."""
    return {"sessions": await svc.sessions(who)}


@router.get("/{key}/webdriver", tags=["sessions"])
async def webdriver(key: Key, who: Who, svc: Svc, request: Request) -> JSON:
    """Hand the session's live browser over (admin or the session's owner: it goes
    signed in): a WebDriver URL and session id, a BiDi URL, served by sitekeep and
    reaching this browser only, until ``expires_at`` or sooner (SPEC §21)."""
    return await svc.webdriver(who, key, str(request.base_url))


@router.post("", tags=["sessions"])
async def open_session(who: Who, svc: Svc, body: OpenBody | None = None) -> JSON:
    return await svc.open_session(who, **(body or OpenBody()).model_dump())


@router.post("/{key}/navigate", tags=["pages"])
async def navigate(key: Key, body: NavigateBody, who: Who, svc: Svc) -> JSON:
    return await svc.navigate(who, key, body.url)


def _page_route(op: str, model: type[BaseModel]) -> None:
    """``POST /v1/sessions/{key}/<op>`` (``type_secret`` → ``type-secret``): the body is
    the operation's arguments, validated by ``sitekeep.steps`` so errors name the field."""

    async def handler(
        key: Key, who: Who, svc: Svc, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> JSON:
        return await svc.act(who, key, op, **(body or {}))

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
    return await svc.run_flow(who, key, body.steps, body.on_error)


@router.post("/{key}/save-site-data", tags=["site data"])
async def save_site_data(key: Key, who: Who, svc: Svc, body: SaveBody | None = None) -> JSON:
    return await svc.save_site_data(who, key, **(body or SaveBody()).model_dump())


@router.delete("/{key}/browser", tags=["sessions"])
async def close_browser(key: Key, who: Who, svc: Svc) -> JSON:
    return await svc.close_browser(who, key)


@router.delete("/{key}", tags=["sessions"])
async def delete_session(key: Key, who: Who, svc: Svc) -> JSON:
    return await svc.delete_session(who, key)


@router.get("/{key}/site-data", tags=["site data"])
async def site_data(key: Key, who: Who, svc: Svc) -> JSON:
    return await svc.site_data(who, key)


@router.get("/{key}/site-data/{site}", tags=["site data"])
async def site_data_host(key: Key, site: Site, who: Who, svc: Svc) -> JSON:
    return await svc.site_data_host(who, key, site)
