"""Test support: the real HTTP app in-process, with its lifespan, and an authorised client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from sitekeep.browser.live import LiveBrowser
from sitekeep.model import Principal, SiteData
from sitekeep.service import Service

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
