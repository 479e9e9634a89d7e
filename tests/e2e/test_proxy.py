"""Browsers routed through a real authenticating proxy (proxy.py, basic auth, 127.0.0.1):
the W3C ``proxy`` capability says where, BiDi ``network.authRequired`` →
``network.continueWithAuth`` answers the credentials (SPEC §2, §14)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from fixtures.proxy import VIA, Echo, ProxyServer, start_echo, start_proxy
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.manager import BrowserManager
from sitekeep.browser.proxy import ProxySettings
from sitekeep.config import Settings
from sitekeep.errors import SitekeepError
from support import WHO, Api, ApiFactory

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

USER = "proxy-user"
PASSWORD = "dummy-proxy-pass-4b1e"
"""The proxy's password: it must appear in no log line, capability or URL."""
REFUSED = "ProxyAuthenticationFailed"
"""What proxy.py logs for each request it refuses for want of the right credentials."""


@pytest.fixture(scope="module")
def proxy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    with start_proxy(tmp_path_factory.mktemp("proxy"), USER, PASSWORD) as running:
        yield running


@pytest.fixture(scope="module")
def echo() -> Iterator[Echo]:
    with start_echo() as running:
        yield running


@pytest.fixture
async def manager(settings: Settings) -> AsyncIterator[BrowserManager]:
    browsers = BrowserManager(settings)
    yield browsers
    await browsers.close_all()
    await browsers.aclose()
    browsers.stop_local_drivers()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    """Every log line of the test, sitekeep and selenium (which logs capabilities) at
    DEBUG."""
    handler = _Lines()
    loggers = [logging.getLogger(n) for n in ("sitekeep", "selenium", "websockets")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.addHandler(handler)
    yield handler.lines
    for lg, level in zip(loggers, levels, strict=True):
        lg.removeHandler(handler)
        lg.setLevel(level)


async def _title(live: LiveBrowser, url: str) -> str:
    return (await live.navigate(url)).title


async def _title_or_error(live: LiveBrowser, url: str) -> str:
    """The page's title, or the error's type when a refused challenge failed the load."""
    try:
        return await _title(live, url)
    except SitekeepError as exc:
        return type(exc).__name__


async def _asked_twice(live: LiveBrowser, echo: Echo, host: str) -> list[str | None]:
    """A page asking for credentials (401) first thing in a fresh browser, then after a
    page that passed the proxy; neither gets any. Returns the ``Via`` of each request
    ``host`` received."""
    assert await _title_or_error(live, echo.url(host, "/ask-auth")) != "GOT CREDENTIALS"
    assert (await _title(live, echo.url(host, "/"))).startswith(f"VIA {VIA}")
    assert await _title_or_error(live, echo.url(host, "/ask-auth")) != "GOT CREDENTIALS"
    return [v for h, v in echo.seen if h == f"{host}:{echo.port}"]


@pytest.fixture
def challenger() -> Iterator[list[str]]:
    """A loopback "proxy" answering every request 407 (asking for credentials), and the
    request lines it received."""
    seen: list[str] = []
    server = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                with conn:
                    seen.append(conn.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace"))
                    conn.sendall(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                        b'Proxy-Authenticate: Basic realm="test"\r\n'
                        b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                    )

    threading.Thread(target=answer, daemon=True).start()
    seen.append(f"127.0.0.1:{server.getsockname()[1]}")
    yield seen
    server.close()


@pytest.mark.parametrize("browser", ["firefox"])  # Chromium's start probes the proxy on purpose
@pytest.mark.parametrize("refuse", [(), ("refused.example.test",)], ids=["manual", "pac"])
async def test_a_starting_browser_sends_nothing_through_an_authenticating_proxy(
    manager: BrowserManager, settings: Settings, challenger: list[str], refuse: tuple[str, ...]
) -> None:
    """A browser's own traffic while it starts (Firefox's Remote Settings sync) met the
    proxy's 407 before sitekeep could answer ``network.authRequired``: Firefox opened a
    prompt with no window to put it in, and New Session never returned (1 start in ~7)."""
    address = challenger.pop(0)
    proxy = ProxySettings(address, USER, PASSWORD, refuse=refuse)
    live = await manager.start(settings.browser, proxy=proxy)
    await asyncio.sleep(2.0)  # the startup sync went out within the first second
    assert await live.evaluate_json("() => JSON.stringify(1 + 1)") == 2
    assert challenger == []


@pytest.mark.parametrize("via", ["local", "grid"])
async def test_a_browser_reaches_a_site_through_an_authenticating_proxy(
    manager: BrowserManager,
    settings: Settings,
    proxy_server: ProxyServer,
    echo: Echo,
    log_lines: list[str],
) -> None:
    proxy = ProxySettings.from_url(proxy_server.url, username=USER, password=PASSWORD)
    assert PASSWORD not in repr(proxy) and PASSWORD not in str(proxy.capability())
    live = await manager.start(settings.browser, proxy=proxy)

    host = f"{settings.browser}-{len(echo.seen)}.example.test"
    assert (await _title(live, echo.url(host, "/first"))).startswith(f"VIA {VIA}")
    assert (await _title(live, echo.url(host, "/second"))).startswith(f"VIA {VIA}")
    vias = [v for h, v in echo.seen if h == f"{host}:{echo.port}"]
    assert len(vias) >= 2 and all(v and v.startswith(VIA) for v in vias)
    assert f"{host}:{echo.port}" in proxy_server.log_text()  # the proxy's own access log

    lines = "\n".join(log_lines)
    assert lines, "nothing was logged: the check below would prove nothing"
    assert PASSWORD[-6:] not in lines and PASSWORD[:10] not in lines  # not even a piece
    assert PASSWORD not in proxy_server.url


async def test_wrong_proxy_credentials_end_the_request_instead_of_looping(
    manager: BrowserManager, settings: Settings, proxy_server: ProxyServer, echo: Echo
) -> None:
    proxy = ProxySettings.from_url(proxy_server.url, username=USER, password="dummy-wrong")
    live = await manager.start(settings.browser, proxy=proxy)
    host = f"wrong-{settings.browser}.example.test"
    before, refused = len(echo.seen), proxy_server.log_text().count(REFUSED)
    assert not (await _title_or_error(live, echo.url(host, "/"))).startswith("VIA")
    # Measured: 2 refusals (asked without, then with the wrong credentials) on both
    # browsers; answering every challenge made 32 (Chromium gives up) and 431 (Firefox
    # loops until the navigation times out). A favicon request could add 2 more.
    assert proxy_server.log_text().count(REFUSED) - refused <= 4
    assert all(h != f"{host}:{echo.port}" for h, _ in echo.seen[before:])


async def test_a_site_asking_for_credentials_never_gets_the_proxys(
    manager: BrowserManager, settings: Settings, proxy_server: ProxyServer, echo: Echo
) -> None:
    """A 401 from a site is not the proxy's 407: it gets the browser's default, never the
    proxy password."""
    proxy = ProxySettings.from_url(proxy_server.url, username=USER, password=PASSWORD)
    live = await manager.start(settings.browser, proxy=proxy)
    asked = await _asked_twice(live, echo, f"phish-{settings.browser}.example.test")
    assert len(asked) >= 2, "the site was never reached: the test would prove nothing"
    assert echo.auth_seen == []


async def test_a_site_asking_through_a_proxy_that_never_asks_never_gets_its_credentials(
    manager: BrowserManager,
    settings: Settings,
    tmp_path: Path,
    echo: Echo,
) -> None:
    """H3: a pool proxy has credentials but never answers 407; the first page the agent
    opens answers 401 with ``WWW-Authenticate: Basic``. The site gets no ``Authorization``
    (the challenge is a site's, cancelled), though it was reached through the proxy."""
    with start_proxy(tmp_path, None, None) as open_proxy:
        proxy = ProxySettings.from_url(open_proxy.url, username=USER, password=PASSWORD)
        live = await manager.start(settings.browser, proxy=proxy)
        asked = await _asked_twice(live, echo, f"open-{settings.browser}.example.test")
    assert len(asked) >= 3 and all(v and v.startswith(VIA) for v in asked)
    assert echo.auth_seen == []


async def test_a_pac_script_refuses_a_host_and_routes_the_rest_through_the_proxy_with_auth(
    manager: BrowserManager, settings: Settings, proxy_server: ProxyServer, echo: Echo
) -> None:
    """The combination the own-address block needs: one ``pac`` capability keeps the
    browser off some hosts and sends the rest through the country proxy, whose
    credentials are still answered over BiDi."""
    refused = f"refused-{settings.browser}.example.test"
    proxy = ProxySettings.from_url(proxy_server.url, username=USER, password=PASSWORD)
    proxy = ProxySettings(proxy.server, USER, PASSWORD, refuse=(refused,))
    assert proxy.capability()["proxyType"] == "pac"
    live = await manager.start(settings.browser, proxy=proxy)
    host = f"pac-{settings.browser}.example.test"
    assert (await _title(live, echo.url(host, "/"))).startswith(f"VIA {VIA}")
    assert await _title_or_error(live, echo.url(refused, "/")) == "NavigationFailed"
    assert all(h != f"{refused}:{echo.port}" for h, _ in echo.seen)


async def test_a_session_opened_for_a_country_runs_through_that_countrys_proxy(
    make_api: ApiFactory, proxy_server: ProxyServer, echo: Echo, log_lines: list[str]
) -> None:
    """The pool (SPEC §14): ``open_session(country=…)`` picks the tenant's proxy of that
    country, its credentials from a secret, answered over BiDi; another country's proxy
    (a dead port) is never used, and the password is in no log line or result."""
    api: Api = await make_api()
    admin = await api.service.catalogue.create_token(WHO.tenant, "boss", "admin")
    await api.service.parts.vault.put(
        WHO.tenant, "proxy-login", "", ["127.0.0.1"], {"username": USER, "password": PASSWORD}
    )
    headers = {"Authorization": f"Bearer {admin}"}
    pool = {
        "berlin": {"country": "de", "url": proxy_server.url, "auth_secret": "proxy-login"},
        "paris": {"country": "fr", "url": "http://127.0.0.1:9", "auth_secret": "proxy-login"},
    }
    for name, body in pool.items():
        reply = await api.http.put(f"/v1/proxies/{name}", json=body, headers=headers)
        assert reply.status_code == 200, reply.text

    opened = await api.open(key="geo", country="DE")
    assert opened["proxy"] == {"name": "berlin", "country": "de"}
    browser = (await api.browser("geo")).ref.kind
    host = f"pool-{browser}.example.test"
    page = await api.go("geo", echo.url(host, "/"))
    assert page["title"].startswith(f"VIA {VIA}")
    assert f"{host}:{echo.port}" in proxy_server.log_text()
    record = await api.service.views.record(WHO, "geo")
    assert (record.country, record.proxy) == ("de", "berlin")

    lines = "\n".join(log_lines)
    assert lines, "nothing was logged: the check below would prove nothing"
    assert PASSWORD not in lines and PASSWORD[-6:] not in lines
    assert PASSWORD not in str(opened) and PASSWORD not in str(page)
