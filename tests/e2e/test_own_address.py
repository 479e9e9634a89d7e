"""The browser never reaches the sitekeep server itself (issue #8 item 5; SPEC §12).

The app is served on a real socket (a free port) and every request that socket receives
is recorded: the test's own calls go in-process, so anything recorded came from the
browser. A page on an allowed host frames the server, loads an image from it and
fetches from it, each in another spelling of its address; a 302 from an allowed host
sends the top-level page there. Nothing may arrive, and the redirected navigation is
refused as ``own_address`` (403).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import AsyncIterator
from urllib.parse import quote, urlsplit

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from conftest import on_mapper
from fixtures.serve import free_port
from fixtures.sites import Sites
from sitekeep.config import Settings
from sitekeep.model import BrowserRef
from support import Api, ApiFactory, serving

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


class Recorder:
    """Records the path of every HTTP request and WebSocket upgrade the wrapped app
    receives on the socket."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            self.paths.append(scope["path"])
        await self.app(scope, receive, send)


EVERY_WAY_TO_RUN = pytest.mark.parametrize(
    ("browser", "via"), [("chromium", "local"), ("firefox", "local"), ("chromium", "grid")]
)


@pytest.fixture
async def served(make_api: ApiFactory) -> AsyncIterator[tuple[Api, Recorder, int]]:
    """The app, its service listening on a real port (its own address), and what that
    socket received."""
    port = free_port()
    api: Api = await make_api(host="127.0.0.1", port=port)
    recorder = Recorder(api.http._transport.app)  # type: ignore[attr-defined]
    async with serving(recorder, port):
        yield api, recorder, port


@EVERY_WAY_TO_RUN
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


ANSWER_WITHIN = 2.0
"""Seconds a call may take once a page's refused navigation was failed: about 0.1 s here,
with room for a loaded machine; a wedged browser answered nothing until each command's
BiDi timeout (5 s here)."""

WAYS = {
    "meta refresh": lambda target: (
        "/__fixture/html?body=" + quote(f'<meta http-equiv="refresh" content="0;url={target}">')
    ),
    "302": lambda target: "/__fixture/redirect?to=" + quote(target),
    "script": lambda target: "/__fixture/later?ms=0&to=" + quote(target),
    "frame": lambda target: "/__fixture/frame?src=" + quote(target),
}
"""How a page on an allowed host sends the browser to ``target``."""


def refused_ports(ref: BrowserRef, own: int) -> dict[str, int]:
    """Every address the browser of ``ref`` must never reach, by what listens there: the
    server, its driver, the BiDi socket (Firefox's own) and Chromium's DevTools port."""
    found = {"sitekeep": own, "driver": urlsplit(ref.endpoint).port or 80}
    found["bidi"] = urlsplit(ref.ws_url).port or 80
    if ref.debugger:
        found["devtools"] = int(ref.debugger.rsplit(":", 1)[1])
    return found


@EVERY_WAY_TO_RUN
async def test_a_refused_navigation_of_any_kind_leaves_the_browser_answering(
    served: tuple[Api, Recorder, int], sites: Sites
) -> None:
    """Issue #24: a page whose meta refresh led to sitekeep's own port wedged Chromium in
    4 tries of 5 — chromedriver's classic page-load wait asked the old document for its
    readyState while Chromium held that question until the navigation ended, and the
    navigation waited for the guard's ``network.failRequest``, queued behind the same
    chromedriver thread. Every refused address, reached every way, is failed and the
    next calls answer at once."""
    api, recorder, port = served
    home = sites.url("app.example.test")
    await api.open(key="k", url=home)
    ports = refused_ports((await api.browser("k")).ref, port)
    for (what, target_port), (way, path) in itertools.product(ports.items(), WAYS.items()):
        page = sites.url("app.example.test", path(f"http://127.0.0.1:{target_port}/x"))
        began = time.monotonic()
        reply = await api.http.post("/v1/sessions/k/navigate", json={"url": page})
        took = time.monotonic() - began
        assert reply.status_code in (200, 403), f"{way} to {what}: {reply.text}"
        for call, body in (("navigate", {"url": home}), ("snapshot", {})):
            began = time.monotonic()
            answer = await api.http.post(f"/v1/sessions/k/{call}", json=body)
            late = time.monotonic() - began
            assert answer.status_code == 200, f"{call} after {way} to {what}: {answer.text}"
            assert late < ANSWER_WITHIN, f"{call} after {way} to {what} took {late:.1f} s"
        assert took < ANSWER_WITHIN * 3, f"{way} to {what} answered after {took:.1f} s"
    assert recorder.paths == []


def spellings(port: int) -> list[str]:
    """URLs a browser reads as ``127.0.0.1:port`` (WHATWG URL: backslashes are slashes in
    http(s), tabs and newlines anywhere are dropped, userinfo, IDNA and percent-decoding,
    trailing dots, IPv4 in any radix, the loopback and unspecified addresses, MAP rules)."""
    return [
        f"http://127.0.0.1:{port}\\@app.example.test/",
        f"http://127.0.0.1:{port}\\sessions",
        f"http:127.0.0.1:{port}/",
        f"http:\\\\127.1:{port}/",
        f"http:/127.0.0.1:{port}/",
        f"https:127.0.0.1:{port}/",
        f"http://127.0.\t0.1:{port}/",
        f"http://127.0.0.1:{str(port)[:1]}\n{str(port)[1:]}/",
        f"http://app.example.test@127.0.0.1:0{port}/",
        f"http://\u24db\u24de\u24d2\u24d0\u24db\u24d7\u24de\u24e2\u24e3:{port}/",
        f"http://127.0.0.1.:{port}/",
        f"http://127.0.0.1%2e:{port}/",
        f"http://[::1]:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
        f"http://0:{port}/",
        f"http://0.0.0.0:{port}/",
        f"http://2130706433:{port}/",
        f"http://0x7f.1:{port}/",
        f"HTTP://LOCALHOST.:{port}/",
        f"http://x.localhost:{port}/",
        f"http://app.example.test:{port}/",
        f" \x01http://127.1:{port}/ ",
    ]


@pytest.mark.parametrize(("browser", "via"), [("chromium", "local"), ("firefox", "local")])
async def test_every_spelling_of_a_refused_address_is_refused_on_every_way_to_navigate(
    served: tuple[Api, Recorder, int], sites: Sites, settings: Settings
) -> None:
    """Found attacking issue #24 afresh (lead 4): the URL check read URLs with Python's
    ``urlsplit``, not as a browser does — ``http://127.0.0.1:<port>\\@app.example.test/``
    (a browser: host 127.0.0.1, port <port>; urlsplit: host app.example.test, port 80),
    ``http:127.0.0.1:<port>/`` — and the live view's ``navigate`` compared the server's
    origins as written only, so any spelling and every driver's address went to the
    browser. Each is refused up front as ``own_address`` by the agents' navigate and
    the live socket alike, for the server and the browser's driver; nothing arrives."""
    from .test_type_secret_clipboard import LiveSocket

    api, recorder, port = served
    await api.open(key="k", url=sites.url("app.example.test"))
    driver = urlsplit((await api.browser("k")).ref.endpoint).port
    assert driver is not None
    urls = [*spellings(port), *spellings(driver)]
    async with LiveSocket(api, "k").open() as live:
        for url in urls:
            reply = await api.http.post("/v1/sessions/k/navigate", json={"url": url})
            assert reply.status_code == 403, (url, reply.text)
            assert reply.json()["error"]["type"] == "own_address", (url, reply.text)
            refused = await live.send({"type": "navigate", "url": url})
            assert refused == [("own_address", "url")], (url, refused)
    assert recorder.paths == []


def every_other_way(origin: str) -> str:
    """A page that sends a request to ``origin`` each way a page can besides its own
    navigation and frames: a WebSocket and an EventSource, a dedicated and a shared
    worker (fetch and WebSocket), a popup, ``<object>`` and ``<embed>`` (in Firefox: a
    frame of their own), a form posted into a frame, a beacon, a keep-alive fetch,
    prefetch and preload links, ``<a ping>``."""
    ws = "ws" + origin[4:]
    worker = f'fetch("{origin}/worker").catch(() => 0); new WebSocket("{ws}/worker-ws");'
    return f"""<object data="{origin}/object"></object><embed src="{origin}/embed">
<link rel="prefetch" href="{origin}/prefetch">
<link rel="preload" as="fetch" href="{origin}/preload">
<a id="ping" href="#pinged" ping="{origin}/ping">ping</a>
<form id="form" method="post" action="{origin}/form" target="sink"><input name="a" value="b"></form>
<iframe name="sink"></iframe>
<script>
const blob = (code) => URL.createObjectURL(new Blob([code], {{type: "text/javascript"}}));
const tries = [
  () => new WebSocket("{ws}/ws"),
  () => new EventSource("{origin}/events"),
  () => new Worker(blob({json.dumps(worker)})),
  () => new SharedWorker(blob({json.dumps(worker.replace("worker", "shared"))})),
  () => window.open("{origin}/popup"),
  () => navigator.sendBeacon("{origin}/beacon", "x"),
  () => fetch("{origin}/keepalive", {{method: "POST", keepalive: true, mode: "no-cors"}}),
  () => document.getElementById("form").submit(),
  () => document.getElementById("ping").click(),
];
for (const attempt of tries) {{ try {{ attempt(); }} catch (e) {{}} }}
</script>"""


@pytest.mark.parametrize(
    ("browser", "via"), [("chromium", "local"), ("firefox", "local"), ("firefox", "grid")]
)
async def test_no_request_reaches_a_refused_socket_any_way_a_page_sends_one(
    served: tuple[Api, Recorder, int], sites: Sites
) -> None:
    """Found attacking issue #24 afresh (lead 5, the guard's "grace"): the guard's BiDi
    intercept sees only what a browsing context fetches once the intercept holds there —
    in Chromium a WebSocket, a shared worker's fetch, a worker's WebSocket and (racing
    the new tab's intercept) a popup's first load reached sitekeep's port; in Firefox an
    ``<object>``, an ``<embed>`` (each a frame the holder of a handover reads, or a
    screenshot shows: the Grid's ``/status`` with every session) and a shared worker's
    fetch. Every browser now also refuses those ports at its network layer from its
    start; nothing of any of them arrives, at the server nor at a driver's port."""
    api, recorder, port = served
    driver = Recorder(recorder.app)  # stands for a driver's endpoint known before the browser
    driver_port = free_port()
    async with serving(driver, driver_port):
        await api.service.parts.browsers.own_address.add(f"http://127.0.0.1:{driver_port}")
        await api.open(key="k", url=sites.url("app.example.test"))
        for target in (port, driver_port):
            body = every_other_way(f"http://127.0.0.1:{target}")
            page = sites.url("app.example.test", "/__fixture/html?body=" + quote(body))
            assert (await api.go("k", page))["title"] == "Fixture HTML"
            wait = {"op": "wait_for", "selector": "#never", "timeout": 3}
            await api.call(
                "POST", "/v1/sessions/k/flows", {"steps": [wait], "on_error": "continue"}
            )
        # The page's own host, on another port, is still reached every way.
        assert (await api.go("k", sites.url("app.example.test")))["title"]
    assert (recorder.paths, driver.paths) == ([], [])
