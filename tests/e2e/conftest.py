"""End-to-end fixtures: the real HTTP app in-process, with its lifespan, on real Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from sitekeep.api.app import create_app
from sitekeep.browser.live import LiveBrowser
from sitekeep.config import Settings
from sitekeep.model import Principal, SiteData
from sitekeep.service import Service
from sitekeep.stores.sql import TokenStore

pytestmark = pytest.mark.anyio

WHO = Principal("t1", "agent", "member")


@dataclass
class Api:
    """An authorised client of the in-process app, and the service behind it."""

    http: httpx.AsyncClient
    service: Service

    async def call(self, method: str, path: str, body: Any = None, *, status: int = 200) -> Any:
        reply = await self.http.request(method, path, json=body)
        assert reply.status_code == status, reply.text
        return reply.json()

    async def open(self, **body: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("POST", "/v1/sessions", body)
        return result

    async def go(self, key: str, url: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call(
            "POST", f"/v1/sessions/{key}/navigate", {"url": url}
        )
        return result

    async def save(self, key: str, **body: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.call(
            "POST", f"/v1/sessions/{key}/save-site-data", body or None
        )
        return result

    async def close(self, key: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("DELETE", f"/v1/sessions/{key}/browser")
        return result

    async def browser(self, key: str) -> LiveBrowser:
        """The session's live browser, to drive a page the way a person would."""
        live = await self.service.live_browser(WHO, key)
        assert live is not None, f"session {key} has no live browser"
        return live

    async def snapshot(self, key: str) -> SiteData:
        stored = await self.service._load_snapshot(WHO.tenant, key)
        assert stored is not None, f"session {key} has no snapshot"
        return stored


ApiFactory = Callable[..., Any]


@pytest.fixture
async def make_api(settings: Settings) -> AsyncIterator[ApiFactory]:
    """``await make_api(**setting overrides)`` → an :class:`Api`; all closed at teardown."""
    opened: list[tuple[Any, httpx.AsyncClient, Service]] = []

    async def make(**overrides: Any) -> Api:
        app = create_app(settings.model_copy(update=overrides))
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        tokens: TokenStore = app.state.tokens
        token = tokens.create(WHO.tenant, WHO.subject, WHO.role)
        http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://sitekeep.test",
            headers={"Authorization": f"Bearer {token}"},
            timeout=120,
        )
        service: Service = app.state.service
        opened.append((lifespan, http, service))
        return Api(http, service)

    yield make
    for lifespan, http, service in reversed(opened):
        await service.browsers.close_all()
        await http.aclose()
        await lifespan.__aexit__(None, None, None)


@pytest.fixture
async def api(make_api: ApiFactory) -> Api:
    result: Api = await make_api()
    return result
