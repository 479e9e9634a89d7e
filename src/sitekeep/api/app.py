"""The HTTP API: a thin facade over ``sitekeep.service`` (SPEC §5).

Handlers parse, call the service and return its result; errors are mapped in one table
(``api.errors``). Every ``/v1`` route needs ``Authorization: Bearer <token>``; the token
names the tenant, subject and role (``sitekeep token create``). MCP over streamable HTTP
is served at ``/mcp`` behind the same token (``sitekeep.mcp.http``).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
from fastapi import Body, Depends, FastAPI, Path, Query, Request
from fastapi.responses import PlainTextResponse, Response
from pydantic import BaseModel

from sitekeep import __version__
from sitekeep.api.body import BodyGuard
from sitekeep.api.errors import install_error_handlers
from sitekeep.api.openapi import install_openapi
from sitekeep.args import (
    KEY_PATTERN,
    MAX_KEY,
    MAX_NAME,
    MAX_SITE,
    OPERATIONS,
    FlowBody,
    NavigateBody,
    OpenBody,
    SaveBody,
)
from sitekeep.config import Settings
from sitekeep.mcp import build_server
from sitekeep.mcp.http import mcp_route, principal_from_request
from sitekeep.model import Principal
from sitekeep.service import Service, require_admin

__all__ = ["Ident", "Key", "Name", "Site", "create_app"]

Key = Annotated[
    str, Path(description="The session's key.", pattern=KEY_PATTERN, max_length=MAX_KEY)
]
Name = Annotated[str, Path(description="A name in the tenant's catalogue.", max_length=MAX_NAME)]
Site = Annotated[str, Path(description="A host or origin.", max_length=MAX_SITE)]
Ident = Annotated[
    str,
    Path(
        description="An id sitekeep made (a profile's, a live session's, a token's).",
        max_length=MAX_NAME,
    ),
]


_SCRAPE_ERRORS = {
    401: "No scrape token (SITEKEEP_METRICS_TOKEN) is set, or the header does not carry it.",
    503: "A store cannot be reached.",
}


def _error_response(why: str) -> dict[str, Any]:
    """An OpenAPI response of the one error shape (``api.openapi``'s ``Error``)."""
    schema = {"$ref": "#/components/schemas/Error"}
    return {"description": why, "content": {"application/json": {"schema": schema}}}


def _service_of(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


async def _service(request: Request) -> Service:
    # async: FastAPI runs a plain def dependency in a worker thread, a hop per request.
    return _service_of(request)


async def _principal(request: Request) -> Principal:
    # The service parses the header. No HTTPBearer sub-dependency: it parsed the header
    # a second time and was a tenth of a read's FastAPI cost; the OpenAPI document names
    # the scheme all the same (api.openapi).
    return await _service_of(request).catalogue.authenticate(request.headers.get("authorization"))


Who = Annotated[Principal, Depends(_principal)]
Svc = Annotated[Service, Depends(_service)]


async def _admin(request: Request, who: Who) -> Principal:
    # A dependency, so a member is refused before its body or query is even read.
    return require_admin(who, f"{request.method} {request.url.path}")


Admin = Annotated[Principal, Depends(_admin)]
JSON = dict[str, Any]


def _page_route(app: FastAPI, op: str, model: type[BaseModel]) -> None:
    """``POST /v1/sessions/{key}/<op>`` (``type_secret`` → ``type-secret``): the body is
    the operation's arguments, validated by ``sitekeep.args`` so errors name the field."""

    async def handler(
        key: Key, who: Who, svc: Svc, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> JSON:
        return await svc.sessions.act(who, key, op, **(body or {}))

    schema = {"content": {"application/json": {"schema": model.model_json_schema()}}}
    app.post(
        f"/v1/sessions/{{key}}/{op.replace('_', '-')}",
        tags=["pages"],
        name=op,
        openapi_extra={"requestBody": schema},
    )(handler)


GC_THRESHOLD = (10_000, 20, 100)
"""The collector's thresholds in a served process (Python's default is ``(700, 10, 10)``):
a read allocates a few hundred objects, so the default ran a young collection on most
requests and a full one every hundred."""


def _settle_heap() -> None:
    """Move everything start-up made out of the collector's sight (``gc.freeze``: the
    modules, the routes, the schemas, the pools live as long as the process) and collect
    less often: a full collection then walks only what requests made. Measured by
    ``bench/api_load.py --in-process``: 0.03–0.1 ms of CPU less per browser-free read."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def create_app(settings: Settings | None = None, *, settle_heap: bool = False) -> FastAPI:
    """The ASGI app; the service and token store open in its lifespan.

    Args:
        settle_heap: once started, freeze the start-up heap and collect less often (see
            :func:`_settle_heap`) — for the one app of a served process (``sitekeep
            serve``), not for a process that makes many apps (a frozen object is never
            collected).
    """
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = app.state.service = Service.from_settings(settings)
        try:
            await service.reaper.warm_up()
            if settle_heap:
                _settle_heap()
            async with anyio.create_task_group() as background:
                background.start_soon(service.reaper.run_reaper)
                async with mcp_server.session_manager.run():
                    yield
                background.cancel_scope.cancel()
        finally:
            await service.aclose()

    app = FastAPI(title="sitekeep", version=__version__, lifespan=lifespan)
    install_error_handlers(app)
    install_openapi(app, auth=_principal, admin=_admin)
    app.add_middleware(BodyGuard, max_body=settings.max_body)
    # Imported here, not at the top: sitekeep.api.secrets imports Who from this module.
    from sitekeep.api.admin import router as admin_router
    from sitekeep.api.live import router as live_router
    from sitekeep.api.profiles import router as profiles_router
    from sitekeep.api.profiles import sessions_router
    from sitekeep.api.proxies import router as proxies_router
    from sitekeep.api.secrets import router as secrets_router
    from sitekeep.api.webdriver import router as webdriver_router
    from sitekeep.ui import install as install_admin_ui

    # Routes are matched in order, one pattern after another: the browser-free reads
    # come first (no two routes here match one method and path, so order changes
    # nothing else), before some thirty routes of pages and ops.
    _hot_routes(app)
    app.include_router(secrets_router)
    app.include_router(admin_router)
    _routes(app)
    # MCP over streamable HTTP at /mcp: the same service, the caller from the bearer token.
    mcp_server = build_server(lambda: app.state.service, principal_from_request)
    app.router.routes.append(mcp_route(mcp_server, lambda: app.state.service, host=settings.host))
    app.include_router(profiles_router)
    app.include_router(sessions_router)
    app.include_router(proxies_router)
    app.include_router(live_router)
    app.include_router(webdriver_router)
    install_admin_ui(app)
    return app


def _hot_routes(app: FastAPI) -> None:
    @app.get("/v1/sessions/{key}", tags=["sessions"])
    async def current(key: Key, who: Who, svc: Svc) -> JSON:
        return await svc.views.current(who, key)

    @app.get("/admin/runs", tags=["admin"])
    async def admin_runs(
        who: Admin,
        svc: Svc,
        open_only: Annotated[bool, Query(alias="open")] = True,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> JSON:
        """The run ledger of the caller's tenant, newest first (admin; SPEC §13): every
        live browser of every replica, or with ``open=false`` the closed ones too."""
        return {"runs": await svc.admin.runs(who, open_only=open_only, limit=limit)}


def _routes(app: FastAPI) -> None:
    @app.get("/healthz", tags=["ops"])
    async def healthz() -> JSON:
        return {"ok": True, "version": __version__}

    @app.get("/", tags=["ops"])
    async def root() -> JSON:
        """The service's name and version, and where to go from here (no token needed)."""
        return {
            "name": "sitekeep",
            "version": __version__,
            "links": {
                "openapi": "/openapi.json",
                "docs": "/docs",
                "health": "/healthz",
                "metrics": "/metrics",
                "sessions": "/v1/sessions",
                "mcp": "/mcp",
                "admin": "/admin",
            },
        }

    @app.get(
        "/metrics",
        tags=["ops"],
        response_class=PlainTextResponse,
        responses={status: _error_response(why) for status, why in _SCRAPE_ERRORS.items()},
    )
    async def metrics(request: Request, svc: Svc) -> Response:
        """Prometheus text format, counts only (never a key or value) but of every tenant:
        it needs ``Authorization: Bearer <SITEKEEP_METRICS_TOKEN>`` (the scrape token, not
        an API token), and is closed (401) while that setting is unset."""
        authorization = request.headers.get("authorization")
        text, media = await svc.reaper.metrics_text(authorization)
        return Response(text, media_type=media)

    @app.get("/v1/sessions", tags=["sessions"])
    async def list_sessions(who: Who, svc: Svc) -> JSON:
        """The caller's tenant's sessions, most recently used first (no browser touched)."""
        return {"sessions": await svc.views.sessions(who)}

    @app.get("/v1/sessions/{key}/webdriver", tags=["sessions"])
    async def webdriver(key: Key, who: Who, svc: Svc, request: Request) -> JSON:
        """Hand the session's live browser over (admin or the session's owner: it goes
        signed in): a WebDriver URL and session id, a BiDi URL, served by sitekeep and
        reaching this browser only, until ``expires_at`` or sooner (SPEC §21)."""
        return await svc.handovers.issue(who, key, str(request.base_url))

    @app.post("/v1/sessions", tags=["sessions"])
    async def open_session(who: Who, svc: Svc, body: OpenBody | None = None) -> JSON:
        return await svc.sessions.open(who, body or OpenBody())

    @app.post("/v1/sessions/{key}/navigate", tags=["pages"])
    async def navigate(key: Key, body: NavigateBody, who: Who, svc: Svc) -> JSON:
        return await svc.sessions.navigate(who, key, body.url)

    for op, model in OPERATIONS.items():
        if op not in ("navigate", "save_site_data", "wait_for", "assert_text"):
            _page_route(app, op, model)

    @app.post("/v1/sessions/{key}/flows", tags=["flows"])
    async def run_flow(key: Key, body: FlowBody, who: Who, svc: Svc) -> JSON:
        return await svc.flows.run(who, key, body)

    @app.post("/v1/sessions/{key}/save-site-data", tags=["site data"])
    async def save_site_data(key: Key, who: Who, svc: Svc, body: SaveBody | None = None) -> JSON:
        return await svc.sessions.save_site_data(who, key, body or SaveBody())

    @app.delete("/v1/sessions/{key}/browser", tags=["sessions"])
    async def close_browser(key: Key, who: Who, svc: Svc) -> JSON:
        return await svc.sessions.close(who, key)

    @app.delete("/v1/sessions/{key}", tags=["sessions"])
    async def delete_session(key: Key, who: Who, svc: Svc) -> JSON:
        return await svc.sessions.delete(who, key)

    @app.get("/v1/sessions/{key}/site-data", tags=["site data"])
    async def site_data(key: Key, who: Who, svc: Svc) -> JSON:
        return await svc.views.site_data(who, key)

    @app.get("/v1/sessions/{key}/site-data/{site}", tags=["site data"])
    async def site_data_host(key: Key, site: Site, who: Who, svc: Svc) -> JSON:
        return await svc.views.site_data_host(who, key, site)
