"""Proxy settings, the W3C ``proxy`` capability, PAC scripts and the challenge rules of
``ProxyAuth`` (fed BiDi events as Chromium and Firefox send them; SPEC §14)."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest

from sitekeep.browser.proxy import (
    PROBE_URL,
    ProxyAuth,
    ProxySettings,
    pac_capability,
    pac_script,
)
from sitekeep.browser.webdriver import SessionSpec, _chromium_options, _firefox_options
from sitekeep.errors import InvalidInput

PASSWORD = "dummy-proxy-pass"
SETTINGS = ProxySettings("proxy.example.test:3128", "user", PASSWORD)


def test_a_proxy_url_gives_host_and_port_and_the_capability_holds_no_credentials() -> None:
    proxy = ProxySettings.from_url(
        "http://proxy.example.test:3128", username="user", password=PASSWORD
    )
    assert proxy.server == "proxy.example.test:3128"
    assert proxy.capability() == {
        "proxyType": "manual",
        "httpProxy": "proxy.example.test:3128",
        "sslProxy": "proxy.example.test:3128",
    }
    assert PASSWORD not in str(proxy.capability()) and "user" not in str(proxy.capability())
    assert ProxySettings.from_url("http://[::1]:8080").server == "[::1]:8080"
    assert ProxySettings("h:1", bypass=("a.test",)).capability()["noProxy"] == ["a.test"]


@pytest.mark.parametrize(
    "url",
    [
        "http://user:dummy-pass@proxy.example.test:3128",
        "http://user@proxy.example.test:3128",
        "socks5://proxy.example.test:1080",
        "http://proxy.example.test",
        "http://proxy.example.test:99999",
        "http://proxy.example.test:3128/path",
        "proxy.example.test:3128",
    ],
)
def test_a_bad_proxy_url_is_refused_without_repeating_it(url: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        ProxySettings.from_url(url, field_name="proxies[0].url")
    assert caught.value.field == "proxies[0].url"
    assert "dummy-pass" not in caught.value.message and url not in caught.value.message


def test_the_password_is_not_in_the_repr() -> None:
    assert PASSWORD not in repr(SETTINGS)


@pytest.mark.parametrize("build", [_chromium_options, _firefox_options])
def test_the_session_capabilities_carry_the_proxy_capability(build: Any) -> None:
    spec = SessionSpec("chromium", None, proxy=SETTINGS.capability())
    caps = build(spec).to_capabilities()
    assert caps["proxy"]["httpProxy"] == "proxy.example.test:3128"
    assert PASSWORD not in str(caps)


def test_a_pac_script_refuses_the_listed_hosts_and_routes_the_rest() -> None:
    script = pac_script(SETTINGS, ["SiteKeep.example.test", "[::1]", "127.0.0.1"])
    assert '["127.0.0.1", "::1", "sitekeep.example.test"]' in script
    assert "return 'PROXY 127.0.0.1:9';" in script
    assert 'return "PROXY proxy.example.test:3128";' in script
    assert 'return "DIRECT";' in pac_script(None, ["a.test"])
    assert PASSWORD not in script
    capability = pac_capability(script)
    assert capability["proxyType"] == "pac"
    prefix = "data:application/x-ns-proxy-autoconfig;base64,"
    assert capability["proxyAutoconfigUrl"].startswith(prefix)
    assert base64.b64decode(capability["proxyAutoconfigUrl"][len(prefix) :]).decode() == script


# -- challenges ----------------------------------------------------------------------------


def challenge(request: str, url: str, status: int) -> dict[str, Any]:
    """network.authRequired as the browsers send it: Firefox with the 407/401 response,
    Chromium with status -1 for both."""
    return {
        "isBlocked": True,
        "request": {"request": request, "url": url},
        "response": {"status": status, "url": url},
    }


def action(auth: ProxyAuth, params: dict[str, Any]) -> str:
    return str(auth._decide(params)["action"])


def test_firefox_a_407_gets_the_credentials_once_and_a_401_never() -> None:
    auth = ProxyAuth(SETTINGS)
    answer = auth._decide(challenge("1", "http://a.example.test/", 407))
    assert answer == {
        "action": "provideCredentials",
        "credentials": {"type": "password", "username": "user", "password": PASSWORD},
    }
    assert action(auth, challenge("1", "http://a.example.test/", 407)) == "cancel"  # refused
    assert action(auth, challenge("2", "http://a.example.test/", 401)) == "cancel"
    assert auth.answered == 1


class FakeConn:
    """The BiDi boundary: records what ProxyAuth sends."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def send(self, method: str, params: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.sent.append((method, params))
        return {}

    async def unsubscribe(self, subscription: str) -> None:
        self.sent.append(("session.unsubscribe", {"subscriptions": [subscription]}))


def test_chromium_only_the_probes_challenge_gets_the_credentials() -> None:
    """Chromium reports status -1 for a proxy's 407 and a site's 401 alike: only the
    challenge on the probe (a host no site can answer) is the proxy's (H3)."""
    auth = ProxyAuth(SETTINGS)
    assert action(auth, challenge("1", "http://a.example.test/ask-auth", -1)) == "cancel"
    assert action(auth, challenge("2", PROBE_URL, -1)) == "provideCredentials"
    assert action(auth, challenge("2", PROBE_URL, -1)) == "cancel"  # refused: no loop
    assert action(auth, challenge("3", "http://evil.example.test/", -1)) == "cancel"
    assert action(auth, challenge("4", "http://a.example.test/", 407)) == "provideCredentials"
    assert action(auth, {**challenge("5", "http://a.example.test/", 0), "response": {}}) == (
        "cancel"
    )
    assert auth.answered == 2


@pytest.mark.anyio
async def test_an_answer_goes_out_as_continue_with_auth_for_its_request() -> None:
    auth = ProxyAuth(SETTINGS)
    conn = FakeConn()
    auth._conn = conn  # type: ignore[assignment]
    auth._on_auth_required(challenge("req-7", "http://a.example.test/", 407))
    auth._on_auth_required(
        {**challenge("req-8", "http://a.example.test/", 407), "isBlocked": False}
    )
    await anyio.wait_all_tasks_blocked()
    assert conn.sent == [
        (
            "network.continueWithAuth",
            {
                "request": "req-7",
                "action": "provideCredentials",
                "credentials": {"type": "password", "username": "user", "password": PASSWORD},
            },
        )
    ]


@pytest.mark.parametrize(
    "url",
    ["http://localhost:8000/", "http://x.localhost/", "http://127.0.0.1:9/", "http://[::1]/",
     "http://direct.example.test/"],
)  # fmt: skip
def test_a_challenge_from_a_host_that_bypasses_the_proxy_never_gets_its_credentials(
    url: str,
) -> None:
    auth = ProxyAuth(
        ProxySettings("p.example.test:1", "user", PASSWORD, bypass=("direct.example.test",))
    )
    assert action(auth, challenge("1", url, -1)) == "cancel"
    assert action(auth, challenge("2", url, 407)) == "cancel"


def test_proxy_auth_needs_credentials() -> None:
    with pytest.raises(ValueError):
        ProxyAuth(ProxySettings("p.example.test:1"))
