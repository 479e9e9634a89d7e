"""The HTTP facade: auth, error shapes, validation, tenant isolation, OpenAPI (SPEC §5)."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from fixtures.sites import Sites
from sitekeep.model import Role
from sitekeep.stores.base import Run
from support import Api, ApiFactory

pytestmark = pytest.mark.anyio


async def test_healthz_answers_without_a_token(api: Api) -> None:
    reply = await httpx.AsyncClient(transport=api.http._transport, base_url="http://x").get(
        "/healthz"
    )
    assert reply.status_code == 200 and reply.json()["ok"] is True


async def test_openapi_lists_the_session_routes(api: Api) -> None:
    paths = (await api.call("GET", "/openapi.json"))["paths"]
    for path in (
        "/v1/sessions",
        "/v1/sessions/{key}",
        "/v1/sessions/{key}/navigate",
        "/v1/sessions/{key}/save-site-data",
        "/v1/sessions/{key}/browser",
        "/v1/sessions/{key}/site-data",
        "/v1/sessions/{key}/site-data/{site}",
    ):
        assert path in paths


@pytest.mark.parametrize("header", [None, "Bearer sk_not-a-token", "Basic abc"])
async def test_calls_without_a_known_bearer_token_are_401(api: Api, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    client = httpx.AsyncClient(transport=api.http._transport, base_url="http://x")
    reply = await client.get("/v1/sessions/k", headers=headers)
    assert reply.status_code == 401
    assert reply.json()["error"]["type"] == "unauthorized"
    assert reply.headers["www-authenticate"] == "Bearer"


async def test_an_unknown_session_is_404(api: Api) -> None:
    for method, path in (
        ("GET", "/v1/sessions/nope"),
        ("POST", "/v1/sessions/nope/navigate"),
        ("POST", "/v1/sessions/nope/save-site-data"),
        ("DELETE", "/v1/sessions/nope/browser"),
        ("DELETE", "/v1/sessions/nope"),
        ("GET", "/v1/sessions/nope/site-data"),
    ):
        body = {"url": "http://app.example.test/"} if path.endswith("navigate") else None
        reply = await api.http.request(method, path, json=body)
        assert reply.status_code == 404, (method, path)
        assert reply.json()["error"] == {
            "type": "not_found",
            "message": "no session named 'nope'",
            "field": "key",
        }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "file:///etc/passwd"}, "url"),
        ({"url": "chrome://settings"}, "url"),
        ({"url": "about:config"}, "url"),
        ({"url": "javascript:alert(1)"}, "url"),
        ({"key": "../etc"}, "key"),
        ({"browser": "netscape"}, "browser"),
        ({"country": "Germany"}, "country"),
        ({"profile": 5}, "profile"),
        ({"fresh": "very"}, "fresh"),
        ({"unknown_option": True}, "unknown_option"),
    ],
)
async def test_bad_open_input_is_400_naming_the_field(
    api: Api, body: dict[str, object], field: str
) -> None:
    reply = await api.http.post("/v1/sessions", json=body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_input" and error["field"] == field
    assert "message" in error


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8700/admin", "http://127.1:8700/", "http://[::ffff:127.0.0.1]:8700/"]
)
async def test_the_servers_own_address_is_403_naming_the_url(api: Api, url: str) -> None:
    for path in ("/v1/sessions", "/v1/sessions/k/navigate"):
        reply = await api.http.post(path, json={"url": url})
        assert reply.status_code == 403, reply.text
        assert reply.json()["error"]["type"] == "own_address"
        assert reply.json()["error"]["field"] == "url"


async def test_navigate_without_a_url_is_400(api: Api) -> None:
    reply = await api.http.post("/v1/sessions/k/navigate", json={})
    assert reply.status_code == 400 and reply.json()["error"]["field"] == "url"


@pytest.mark.e2e
async def test_one_tenant_never_sees_another_tenants_session(api: Api, sites: Sites) -> None:
    await api.open(key="shared-name", url=sites.url("app.example.test"))
    other = await api.service.catalogue.create_token("t2", "intruder", "admin")
    headers = {"Authorization": f"Bearer {other}"}
    for method, path in (
        ("GET", "/v1/sessions/shared-name"),
        ("POST", "/v1/sessions/shared-name/save-site-data"),
        ("GET", "/v1/sessions/shared-name/site-data"),
        ("DELETE", "/v1/sessions/shared-name/browser"),
        ("DELETE", "/v1/sessions/shared-name"),
    ):
        reply = await api.http.request(method, path, headers=headers)
        assert reply.status_code == 404, (method, path)
    mine = await api.call("GET", "/v1/sessions/shared-name")
    assert mine["browser"]["live"] is True
    # The same key in t2 is t2's own session, with its own browser.
    theirs = await api.http.post("/v1/sessions", json={"key": "shared-name"}, headers=headers)
    assert theirs.status_code == 200 and theirs.json()["url"] != mine["url"]


@pytest.mark.parametrize("role", ["member", "admin"])
@pytest.mark.parametrize("path", ["/v1/sessions", "/v1/live-sessions"])
async def test_a_full_service_tells_a_tenant_only_that_it_is_full(
    make_api: ApiFactory, role: Role, path: str
) -> None:
    """The global cap is the operator's: a tenant — its admins too — learns that no
    browser can start now, never the cap nor that other tenants hold the browsers."""
    api: Api = await make_api(max_sessions=2, max_sessions_per_tenant=5)
    for number in (1, 2):  # every slot held by another tenant's browsers
        held = Run(f"held-{number}", "t2", f"busy-{number}", "chromium", time.time(), "elsewhere")
        assert (
            await api.service.parts.stores.runs.reserve(held, per_tenant=None, total=None) is None
        )
    token = await api.service.catalogue.create_token("t1", "someone", role)
    reply = await api.http.post(
        path, json={"key": "mine"}, headers={"Authorization": f"Bearer {token}"}
    )
    assert reply.status_code == 429, reply.text
    error = reply.json()["error"]
    assert (error["type"], error["scope"]) == ("capacity_exceeded", "global")
    assert "cap" not in error, error
    assert not re.search(r"\d", error["message"]) and "tenant" not in error["message"]
    assert "SITEKEEP_" not in error["message"], "an operator's setting, not a tenant's"
