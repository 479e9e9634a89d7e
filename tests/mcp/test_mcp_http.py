"""MCP over streamable HTTP at ``/mcp`` of a real ``sitekeep serve``, driven by the SDK's
client (SPEC §5): the bearer token names the caller, ``X-Sitekeep-Session`` the default
session; no token, no MCP."""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from conftest import HOST_RULES, chromium_engine_env
from fixtures.sites import FORM_PASSWORD, FORM_USER, Sites
from sitekeep.config import Settings
from support import call_tool as call
from support import make_token

pytestmark = pytest.mark.e2e

SITEKEEP = str(Path(sys.executable).parent / "sitekeep")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


@dataclass
class Served:
    """A running ``sitekeep serve`` and tokens of two tenants."""

    url: str
    token: str
    other_token: str
    admin_token: str
    """An admin token of the same tenant and subject as ``token``."""

    @asynccontextmanager
    async def client(self, token: str, session: str | None = None) -> AsyncIterator[Client]:
        """The SDK's client on ``/mcp``, its HTTP client carrying the token (and session)."""
        headers = {"Authorization": f"Bearer {token}"}
        if session is not None:
            headers["X-Sitekeep-Session"] = session
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60)) as http,
            Client(streamable_http_client(f"{self.url}/mcp", http_client=http)) as client,
        ):
            yield client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path, driver_url: str) -> Iterator[Served]:
    data_dir = tmp_path / "data"
    settings = Settings(data_dir=data_dir)
    token, other = make_token(settings), make_token(settings, "t2")
    admin = make_token(settings, role="admin")
    port = free_port()
    env = {
        **os.environ,
        "SITEKEEP_DATA_DIR": str(data_dir),
        **chromium_engine_env(driver_url),
        "SITEKEEP_BROWSER_ARGS": HOST_RULES,
        "SITEKEEP_WARM_BROWSERS": "0",
    }
    process = subprocess.Popen(
        [SITEKEEP, "serve", "--port", str(port), "--log-level", "warning"], env=env
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not _healthy(url):
        assert process.poll() is None, "sitekeep serve exited"
        assert time.monotonic() < deadline, "sitekeep serve did not answer"
        time.sleep(0.05)
    yield Served(url, token, other, admin)
    process.send_signal(signal.SIGTERM)  # a clean shutdown runs the lifespan's exit
    assert process.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.anyio
async def test_an_agent_signs_in_over_http_mcp_in_the_session_its_header_names(
    served: Served, sites: Sites
) -> None:
    async with served.client(served.token, session="web") as client:
        assert len((await client.list_tools()).tools) == 18
        opened = await call(client, "open_session", url=sites.url("form.example.test", "/login"))
        assert (opened["key"], opened["title"]) == ("web", "Form — sign in")
        await call(client, "type", selector="#user", text=FORM_USER)
        await call(client, "type", selector="#pass", text=FORM_PASSWORD, submit=True)
        await call(client, "save_site_data")
        await call(client, "close_session")
        back = await call(client, "open_session", url=sites.url("form.example.test", "/"))
        assert back["title"] == f"Form — signed in as {FORM_USER} (plan free)"

    # The token names the tenant: the HTTP API sees the same session, another tenant none.
    page = httpx.get(
        f"{served.url}/v1/sessions/web", headers={"Authorization": f"Bearer {served.token}"}
    )
    assert page.json()["title"] == back["title"]
    async with served.client(served.other_token) as stranger:
        closed = await stranger.call_tool("close_session", {"key": "web"})
        assert closed.is_error and '"not_found"' in str(closed.content[0])
        with pytest.raises(MCPError, match="not_found"):
            await stranger.read_resource("sitekeep://sessions/web/current")
    async with served.client(served.token, session="web") as client:
        assert (await call(client, "close_session"))["closed"] is True


@pytest.mark.parametrize(
    ("authorization", "says"),
    [(None, "Authorization: Bearer"), ("Bearer sk_not-a-token", "unknown token")],
)
def test_mcp_without_a_known_token_gets_401(
    served: Served, authorization: str | None, says: str
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    reply = httpx.post(f"{served.url}/mcp", json=INITIALIZE, headers=headers)
    assert reply.status_code == 401
    assert reply.headers["www-authenticate"] == "Bearer"
    error = reply.json()["error"]
    assert error["type"] == "unauthorized" and says in error["message"]


def _post(
    served: Served, token: str, body: dict[str, object], session: str | None = None
) -> httpx.Response:
    """One JSON-RPC message to ``/mcp`` with ``token`` (and ``session``'s id)."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    if session is not None:
        headers["Mcp-Session-Id"] = session
    return httpx.post(f"{served.url}/mcp", json=body, headers=headers, timeout=30)


def test_an_mcp_session_answers_only_the_principal_that_opened_it(served: Served) -> None:
    """Another tenant's token with a leaked ``Mcp-Session-Id`` gets 404, as for an unknown
    id; the opener's own token still reaches the session."""
    post = functools.partial(_post, served)
    opened = post(served.token, INITIALIZE)
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(served.token, initialized, session).status_code == 202

    stranger = post(served.other_token, listing, session)
    assert stranger.status_code == 404
    assert "Session not found" in stranger.text and "open_session" not in stranger.text
    ended = httpx.delete(
        f"{served.url}/mcp",
        headers={"Authorization": f"Bearer {served.other_token}", "Mcp-Session-Id": session},
    )
    assert ended.status_code == 404

    own = post(served.token, listing, session)
    assert own.status_code == 200 and "open_session" in own.text


def test_an_mcp_session_answers_only_the_token_that_opened_it(served: Served) -> None:
    """A member token of the very subject whose admin token opened the session gets 404
    with its leaked ``Mcp-Session-Id``: the session is bound to the token, not only to
    (tenant, subject)."""
    post = functools.partial(_post, served)
    opened = post(served.admin_token, INITIALIZE)
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(served.admin_token, initialized, session).status_code == 202
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    twin = post(served.token, listing, session)
    assert twin.status_code == 404 and "open_session" not in twin.text
    own = post(served.admin_token, listing, session)
    assert own.status_code == 200 and "open_session" in own.text
