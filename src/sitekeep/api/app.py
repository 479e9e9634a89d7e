"""The HTTP API: a thin facade over ``sitekeep.service`` (SPEC §5).

Handlers parse, call the service and return its result; errors are mapped in one table
(``api.errors``). Every ``/v1`` route needs ``Authorization: Bearer <token>``; the token
names the tenant, subject and role (``sitekeep token create``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict

from sitekeep import __version__
from sitekeep.api.errors import install_error_handlers
from sitekeep.config import Settings
from sitekeep.errors import Unauthorized
from sitekeep.model import Principal
from sitekeep.service import Service
from sitekeep.stores.sql import TokenStore

__all__ = ["create_app"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OpenBody(_Body):
    key: str | None = None
    browser: str | None = None
    url: str | None = None
    profile: str | None = None
    restore_site_data: bool = True
    fresh: bool = False
    insecure: bool = False
    country: str | None = None


class NavigateBody(_Body):
    url: str


class SaveBody(_Body):
    profile: str | None = None
    full: bool = False
    """Read every origin through the spare tab (ignore the copies captured on leave)."""


_bearer = HTTPBearer(auto_error=False)


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


async def _principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthorized("send Authorization: Bearer <token> (sitekeep token create)")
    tokens: TokenStore = request.app.state.tokens
    principal = await tokens.resolve(credentials.credentials)
    if principal is None:
        raise Unauthorized("unknown token")
    return principal


Who = Annotated[Principal, Depends(_principal)]
Svc = Annotated[Service, Depends(_service)]
JSON = dict[str, Any]


def create_app(settings: Settings | None = None) -> FastAPI:
    """The ASGI app; the service and token store open in its lifespan."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.service = Service.from_settings(settings)
        app.state.tokens = TokenStore(settings.database)
        await app.state.service.browsers.warm_up()
        try:
            yield
        finally:
            await app.state.service.aclose()
            app.state.tokens.close()

    app = FastAPI(title="sitekeep", version=__version__, lifespan=lifespan)
    install_error_handlers(app)
    _routes(app)
    return app


def _routes(app: FastAPI) -> None:
    @app.get("/healthz", tags=["ops"])
    async def healthz() -> JSON:
        return {"ok": True, "version": __version__}

    @app.post("/v1/sessions", tags=["sessions"])
    async def open_session(who: Who, svc: Svc, body: OpenBody | None = None) -> JSON:
        return await svc.open_session(who, **(body or OpenBody()).model_dump())

    @app.get("/v1/sessions/{key}", tags=["sessions"])
    async def current(key: str, who: Who, svc: Svc) -> JSON:
        return await svc.current(who, key)

    @app.post("/v1/sessions/{key}/navigate", tags=["pages"])
    async def navigate(key: str, body: NavigateBody, who: Who, svc: Svc) -> JSON:
        return await svc.navigate(who, key, body.url)

    @app.post("/v1/sessions/{key}/back", tags=["pages"])
    async def back(key: str, who: Who, svc: Svc) -> JSON:
        return await svc.back(who, key)

    @app.post("/v1/sessions/{key}/forward", tags=["pages"])
    async def forward(key: str, who: Who, svc: Svc) -> JSON:
        return await svc.forward(who, key)

    @app.post("/v1/sessions/{key}/save-site-data", tags=["site data"])
    async def save_site_data(key: str, who: Who, svc: Svc, body: SaveBody | None = None) -> JSON:
        body = body or SaveBody()
        return await svc.save_site_data(who, key, profile=body.profile, full=body.full)

    @app.delete("/v1/sessions/{key}/browser", tags=["sessions"])
    async def close_browser(key: str, who: Who, svc: Svc) -> JSON:
        return await svc.close_browser(who, key)

    @app.delete("/v1/sessions/{key}", tags=["sessions"])
    async def delete_session(key: str, who: Who, svc: Svc) -> JSON:
        return await svc.delete_session(who, key)

    @app.get("/v1/sessions/{key}/site-data", tags=["site data"])
    async def site_data(key: str, who: Who, svc: Svc) -> JSON:
        return await svc.site_data(who, key)

    @app.get("/v1/sessions/{key}/site-data/{site}", tags=["site data"])
    async def site_data_host(key: str, site: str, who: Who, svc: Svc) -> JSON:
        return await svc.site_data_host(who, key, site)
