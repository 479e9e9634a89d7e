"""Test support: the real HTTP app in-process, with its lifespan, and an authorised client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import uvicorn
from mcp import Client
from mcp.types import TextContent
from starlette.types import ASGIApp

from fixtures.sites import SECRET_VALUES, Sites
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.webdriver import session_alive
from sitekeep.config import Settings
from sitekeep.errors import BrowserUnavailable
from sitekeep.model import BrowserRef, Principal, Role, SiteData
from sitekeep.service import Service

WHO = Principal("t1", "agent", "member")


async def gone(ref: BrowserRef) -> bool:
    """Whether the browser ``ref`` names is gone: its WebDriver session ended, or its
    server with it (a per-browser server: embedded Firefox's geckodriver, the mapper
    engine's Node process, each ends with its browser)."""
    try:
        return not await session_alive(ref.endpoint, ref.session_id)
    except BrowserUnavailable:
        return True


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

    async def close(self, key: str, *, autosave: bool = True) -> dict[str, Any]:
        """Close the session's browser; ``autosave=False``: without its automatic save."""
        query = "" if autosave else "?autosave=false"
        result: dict[str, Any] = await self.call("DELETE", f"/v1/sessions/{key}/browser{query}")
        return result

    async def browser(self, key: str) -> LiveBrowser:
        """The session's live browser, to drive a page the way a person would."""
        live = await self.service.views.live_browser(WHO, key)
        assert live is not None, f"session {key} has no live browser"
        return live

    async def snapshot(self, key: str) -> SiteData:
        stored = await self.service.parts.seam.records.load_snapshot(WHO.tenant, key)
        assert stored is not None, f"session {key} has no snapshot"
        return stored


ApiFactory = Callable[..., Any]

SIGNED_IN = {
    "app.example.test": "App — signed in as alice",
    "token.example.test": "Token — signed in as bob",
    "shop.example.test": "Shop — pref dummy-pref",
    "id.example.test": "IdP — known",
}
"""The title of each fixture site's home page once ``sign_in_everywhere`` signed in."""


async def sign_in_everywhere(api: Api, sites: Sites, key: str) -> None:
    """Open ``key`` and sign in: the cookie app via the IdP, the token app, a
    sessionStorage cart (two items, its page last), a parent-domain cookie."""
    await api.open(key=key)
    page = await api.go(key, sites.url("app.example.test", "/login"))
    assert page["title"] == SIGNED_IN["app.example.test"]
    page = await api.go(key, sites.url("token.example.test", "/login"))
    assert page["title"] == SIGNED_IN["token.example.test"]
    await api.go(key, sites.url("www.example.test", "/set-parent"))
    await api.go(key, sites.url("tabs.example.test", "/add"))
    await api.go(key, sites.url("tabs.example.test", "/add"))
    page = await api.go(key, sites.url("tabs.example.test", "/"))
    assert page["title"] == "Tabs — cart 2"


async def assert_signed_in(
    api: Api, sites: Sites, key: str, hosts: tuple[str, ...] = tuple(SIGNED_IN)
) -> None:
    """Session ``key`` goes to each of ``hosts``' home page, in order, and each shows its
    signed-in title (``SIGNED_IN``)."""
    for host in hosts:
        url = sites.url(host)
        assert (await api.go(key, url))["title"] == SIGNED_IN[host], url


def on_service(settings: Settings, use: Callable[[Service], Awaitable[Any]]) -> Any:
    """``use(service)`` on a service of ``settings``, opened and closed in a thread of its
    own (so sync and async tests alike can set a data dir up)."""

    async def run() -> Any:
        service = Service.from_settings(settings)
        try:
            return await use(service)
        finally:
            await service.aclose()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, run).result()


def cli_data_dir(monkeypatch: Any, data_dir: Any) -> Any:
    """Point ``sitekeep`` commands run in this test at ``data_dir`` alone: no database,
    key or session store from the environment, a wide console. Returns ``data_dir``."""
    for name in ("SITEKEEP_DATABASE_URL", "SITEKEEP_MASTER_KEY", "SITEKEEP_SESSION_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(data_dir))
    monkeypatch.setenv("COLUMNS", "200")
    return data_dir


def make_token(
    settings: Settings, tenant: str = "t1", subject: str = "agent", role: Role = "member"
) -> str:
    """A new bearer token in the stores of ``settings``."""
    token: str = on_service(settings, lambda svc: svc.catalogue.create_token(tenant, subject, role))
    return token


async def call_tool(
    client: Client, tool: str, *, structured: bool = False, **args: Any
) -> dict[str, Any]:
    """An MCP tool's JSON result through the SDK client: it must not be an error nor carry
    a secret value; with ``structured``, its structured content must equal its text."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    shown = result.model_dump_json()
    assert not any(v in shown for v in SECRET_VALUES), f"{tool} returned a secret value"
    text = result.content[0]
    assert isinstance(text, TextContent)
    body: dict[str, Any] = json.loads(text.text)
    if structured:
        assert body == result.structured_content
    return body


@asynccontextmanager
async def serving(app: ASGIApp, port: int) -> AsyncIterator[None]:
    """``app`` (its lifespan already run) served on ``127.0.0.1:port`` for the block: a real
    socket, for what a browser or a WebDriver client must reach."""
    config = uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="error")
    server = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        assert not task.done(), "the server did not start"
        await asyncio.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        await task
