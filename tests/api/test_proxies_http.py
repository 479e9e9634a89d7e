"""The proxy pool over HTTP (SPEC §14) through the real app in-process, no browser:
admins manage it, members read it, credentials live in a secret, and an unknown country
is a 400 naming the known ones before any browser starts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from sitekeep.service import Service
from support import WHO, Api, ApiFactory

pytestmark = pytest.mark.anyio

PASSWORD = "dummy-proxy-pass-77c1"
DE = {"country": "DE", "url": "http://127.0.0.1:3128", "auth_secret": "proxy-login"}


@dataclass
class Clients:
    http: httpx.AsyncClient
    service: Service
    headers: dict[str, dict[str, str]]

    async def call(
        self, method: str, path: str, body: Any = None, *, as_: str = "admin", status: int = 200
    ) -> Any:
        reply = await self.http.request(method, path, json=body, headers=self.headers[as_])
        assert reply.status_code == status, (method, path, as_, reply.text)
        assert PASSWORD not in reply.text
        return reply.json()


@pytest.fixture
async def clients(make_api: ApiFactory) -> AsyncIterator[Clients]:
    api: Api = await make_api()
    svc = api.service
    bearer = {
        "admin": await svc.catalogue.create_token(WHO.tenant, "boss", "admin"),
        "member": await svc.catalogue.create_token(WHO.tenant, "bob", "member"),
        "other": await svc.catalogue.create_token("t2", "eve", "admin"),
    }
    await svc.parts.vault.put(
        WHO.tenant, "proxy-login", "", ["127.0.0.1"], {"username": "u", "password": PASSWORD}
    )
    yield Clients(
        api.http, svc, {who: {"Authorization": f"Bearer {t}"} for who, t in bearer.items()}
    )


async def test_admins_manage_the_pool_members_read_it_other_tenants_never_see_it(
    clients: Clients,
) -> None:
    await clients.call("PUT", "/v1/proxies/berlin", DE, as_="member", status=403)
    made = await clients.call("PUT", "/v1/proxies/berlin", DE)
    assert made["country"] == "de" and made["auth_secret"] == "proxy-login"
    listed = await clients.call("GET", "/v1/proxies", as_="member")
    assert [p["name"] for p in listed["proxies"]] == ["berlin"] and listed["countries"] == ["de"]
    assert (await clients.call("GET", "/v1/proxies", as_="other"))["proxies"] == []
    await clients.call("GET", "/v1/proxies/berlin", as_="other", status=404)
    await clients.call("DELETE", "/v1/proxies/berlin", as_="member", status=403)
    await clients.call("DELETE", "/v1/proxies/berlin")
    await clients.call("GET", "/v1/proxies/berlin", status=404)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"url": f"http://u:{PASSWORD}@127.0.0.1:3128"}, "url"),
        ({"url": "socks5://127.0.0.1:1080"}, "url"),
        ({"country": "Deutschland"}, "country"),
        ({"auth_secret": "no-such-secret"}, "auth_secret"),
    ],
)
async def test_a_bad_proxy_is_400_naming_the_field_and_stores_nothing(
    clients: Clients, change: dict[str, str], field: str
) -> None:
    reply = await clients.call("PUT", "/v1/proxies/berlin", {**DE, **change}, status=400)
    assert reply["error"]["field"] == field
    assert (await clients.call("GET", "/v1/proxies"))["proxies"] == []


async def test_an_unknown_country_is_400_naming_the_known_ones_before_any_browser(
    clients: Clients,
) -> None:
    await clients.call("PUT", "/v1/proxies/berlin", DE)
    await clients.call("PUT", "/v1/proxies/paris", {**DE, "country": "fr"})
    reply = await clients.call(
        "POST", "/v1/sessions", {"key": "geo", "country": "jp"}, as_="member", status=400
    )
    assert reply["error"]["field"] == "country"
    assert "de, fr" in reply["error"]["message"]
    empty = await clients.call(
        "POST", "/v1/sessions", {"key": "geo", "country": "jp"}, as_="other", status=400
    )
    assert "none" in empty["error"]["message"] and "de" not in empty["error"]["message"]
    assert await clients.service.parts.stores.runs.open_runs() == []


async def test_a_proxy_may_use_only_a_secret_allowed_on_its_host(clients: Clients) -> None:
    """A secret's ``hosts`` bind a proxy too (M1): an admin pointing a proxy at a server of
    their own with a secret meant for another host gets a 400 naming ``auth_secret``, and
    nothing is stored; a secret whose hosts change later is not revealed (403)."""
    svc = clients.service
    await svc.parts.vault.put(
        WHO.tenant, "login", "", ["app.example.test"], {"username": "u", "password": PASSWORD}
    )
    mine = {**DE, "url": "http://127.0.0.1:4321", "auth_secret": "login"}
    reply = await clients.call("PUT", "/v1/proxies/px", mine, status=400)
    assert reply["error"]["field"] == "auth_secret"
    assert "app.example.test" not in reply["error"]["message"]  # no secret's rules shown
    assert (await clients.call("GET", "/v1/proxies"))["proxies"] == []

    # allowed when put, then the secret's hosts change: the credentials stay sealed
    await clients.call("PUT", "/v1/proxies/berlin", DE)
    await svc.parts.vault.put(
        WHO.tenant, "proxy-login", "", ["app.example.test"], {"username": "u", "password": PASSWORD}
    )
    refused = await clients.call(
        "POST", "/v1/sessions", {"key": "geo", "country": "de"}, as_="member", status=403
    )
    assert refused["error"]["type"] == "secret_not_allowed"
    assert refused["error"]["secret"] == "proxy-login"
    assert await svc.parts.stores.runs.open_runs() == []
