"""The HTTP API: a thin facade over ``sitekeep.service`` (SPEC §5).

This module only composes the app: the service opens in its lifespan; the routers (one
per area: ``api/sessions.py``, ``api/admin.py``…, all taking their request dependencies
from :mod:`sitekeep.api.deps`) and the admin UI are included; errors are mapped in one
table (``api.errors``). Every ``/v1`` route needs ``Authorization: Bearer <token>``; the
token names the tenant, subject and role (``sitekeep token create``). MCP over streamable
HTTP is served at ``/mcp`` behind the same token (``sitekeep.api.mcp``).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer

from sitekeep.api import (
    admin,
    checks,
    live,
    ops,
    profiles,
    proxies,
    secrets,
    sessions,
    versions,
    webdriver,
)
from sitekeep.api.body import BodyGuard
from sitekeep.api.deps import get_admin, get_principal
from sitekeep.api.errors import install_error_handlers
from sitekeep.api.mcp import mcp_route, principal_from_request
from sitekeep.api.openapi import install_openapi
from sitekeep.api.ui import install as install_admin_ui
from sitekeep.config import Settings
from sitekeep.mcp import build_server
from sitekeep.service import Service
from sitekeep.version import __version__

__all__ = ["create_app"]

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
    # MCP over streamable HTTP at /mcp: the same service, the caller from the bearer token.
    mcp_server = build_server(lambda: app.state.service, principal_from_request)
    app = FastAPI(
        title="sitekeep",
        version=__version__,
        lifespan=_lifespan(settings, mcp_server, settle_heap=settle_heap),
    )
    install_error_handlers(app)
    install_openapi(app, auth=get_principal, admin=get_admin)
    app.add_middleware(BodyGuard, max_body=settings.max_body)
    # Routes are matched in order, one pattern after another: the browser-free reads
    # come first (no two routes here match one method and path, so order changes
    # nothing else), before some thirty routes of pages and ops.
    sessions.install_current(app)
    admin.install_runs(app)
    for router in (
        secrets.router,
        admin.router,
        ops.router,
        versions.sessions_router,  # before …/site-data/{site} takes "versions" for a host
        sessions.router,
    ):
        app.include_router(router)
    app.router.routes.append(mcp_route(mcp_server, lambda: app.state.service, host=settings.host))
    for router in (
        profiles.router,
        profiles.sessions_router,
        versions.profiles_router,
        checks.sessions_router,
        checks.profiles_router,
        proxies.router,
        live.router,
        webdriver.router,
    ):
        app.include_router(router)
    install_admin_ui(app)
    return app


def _lifespan(
    settings: Settings, mcp_server: MCPServer, *, settle_heap: bool
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Open the service (``app.state.service``), warm the browser pool, run the reaper
    and the MCP session manager; close the service at shutdown (browsers live on)."""

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

    return lifespan
