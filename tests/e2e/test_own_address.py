"""The browser never reaches the sitekeep server itself (issue #8 item 5; SPEC §12).

The app is served on a real socket (a free port) and every request that socket receives
is recorded: the test's own calls go in-process, so anything recorded came from the
browser. A page on an allowed host frames the server, loads an image from it and
fetches from it, each in another spelling of its address; a 302 from an allowed host
sends the top-level page there. Nothing may arrive, and the redirected navigation is
refused as ``own_address`` (403).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote, urlsplit

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from conftest import on_mapper
from fixtures.serve import free_port
from fixtures.sites import Sites
from sitekeep.config import Settings
from support import Api, ApiFactory, serving

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


class Recorder:
    """Records the path of every HTTP request the wrapped app receives on the socket."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
        await self.app(scope, receive, send)


@pytest.fixture
async def served(make_api: ApiFactory) -> AsyncIterator[tuple[Api, Recorder, int]]:
    """The app, its service listening on a real port (its own address), and what that
    socket received."""
    port = free_port()
    api: Api = await make_api(host="127.0.0.1", port=port)
    recorder = Recorder(api.http._transport.app)  # type: ignore[attr-defined]
    async with serving(recorder, port):
        yield api, recorder, port


@pytest.mark.parametrize(
    ("browser", "via"), [("chromium", "local"), ("firefox", "local"), ("chromium", "grid")]
)
async def test_no_request_of_the_browser_reaches_the_server_in_any_spelling(
    served: tuple[Api, Recorder, int], sites: Sites
) -> None:
    api, recorder, port = served
    await api.open(key="k", url=sites.url("app.example.test"))
    body = (
        f'<iframe id="f" src="http://127.1:{port}/openapi.json"></iframe>'
        f'<img id="i" src="http://0x7f000001:{port}/healthz">'
        f'<iframe src="http://[::ffff:127.0.0.1]:{port}/admin"></iframe>'
        f"<script>fetch('http://localhost.:{port}/healthz').catch(() => 0)</script>"
    )
    page = sites.url("app.example.test", "/__fixture/html?body=" + quote(body))
    landed = await api.go("k", page)
    assert landed["title"] == "Fixture HTML"  # the page itself loads
    # A 302 from an allowed host to the server: the hop is refused.
    hop = sites.url("app.example.test", f"/__fixture/redirect?to=http://2130706433:{port}/")
    reply = await api.http.post("/v1/sessions/k/navigate", json={"url": hop})
    assert reply.status_code == 403, reply.text
    assert reply.json()["error"]["type"] == "own_address"
    # A spelling the URL check knows is refused before the browser is asked.
    reply = await api.http.post(
        "/v1/sessions/k/navigate", json={"url": f"http://any.example.test:{port}/"}
    )
    assert reply.status_code == 403 and reply.json()["error"]["field"] == "url"
    # The page can still reach the allowed host (the guard holds only the server's port).
    assert (await api.go("k", sites.url("app.example.test")))["title"]
    assert recorder.paths == []


@pytest.mark.parametrize("browser", ["chromium"])
@pytest.mark.skipif(
    on_mapper(),
    reason="checks the run's chromedriver and its browser's DevTools port, which the mapper "
    "engine has neither of (its own port: test_mapper_engine.py "
    "test_the_mapper_port_is_refused_and_hands_out_no_webdriver)",
)
async def test_the_webdriver_endpoint_is_refused_like_the_server(
    make_api: ApiFactory, settings: Settings, sites: Sites
) -> None:
    """Attacker review C1: a page that reached the shared chromedriver could list every
    session and read another tenant's cookies and typed fields. Its address and port are
    refused in every spelling, by the URL check and by the browser for a redirect hop;
    the fixture sites on the same address (other ports) stay reachable."""
    assert settings.webdriver_url  # the run's chromedriver on 127.0.0.1
    port = urlsplit(settings.webdriver_url).port
    api: Api = await make_api()
    await api.open(key="k", url=sites.url("app.example.test"))
    await assert_port_refused(api, sites, port, "/sessions", "/session/x/cookie")
    debugger = (await api.browser("k")).ref.debugger  # Chromium's DevTools endpoint
    assert debugger, "chromedriver reports its browser's debuggerAddress"
    dev_port = debugger.rsplit(":", 1)[1]
    for url in (f"http://127.1:{dev_port}/json/list", f"http://0x7f000001:{dev_port}/json"):
        reply = await api.http.post("/v1/sessions/k/navigate", json={"url": url})
        assert reply.status_code == 403, reply.text
    text = await api.call("POST", "/v1/sessions/k/read", {})
    assert "sessionId" not in str(text) and "ready" not in str(text)
    assert (await api.go("k", sites.url("app.example.test")))["title"]


async def assert_port_refused(api: Api, sites: Sites, port: int | str, *paths: str) -> None:
    """Navigating session ``k`` to ``paths`` on ``port`` in three spellings of the
    loopback address (URL check), and through a 302 hop of an allowed host (the
    browser's guard), is refused as ``own_address``."""
    first, second = paths
    for url in (
        f"http://127.1:{port}{first}",
        f"http://0x7f000001:{port}{second}",
        f"http://driver.example.test:{port}/status",
    ):
        reply = await api.http.post("/v1/sessions/k/navigate", json={"url": url})
        assert reply.status_code == 403, reply.text
        assert reply.json()["error"]["type"] == "own_address"
    hop = sites.url("app.example.test", f"/__fixture/redirect?to=http://2130706433:{port}{first}")
    reply = await api.http.post("/v1/sessions/k/navigate", json={"url": hop})
    assert reply.status_code == 403, reply.text
    assert reply.json()["error"]["type"] == "own_address"
