"""The secrets catalogue over HTTP: ``/v1/secrets`` (SPEC §7), through the real app in-process.

``make_api`` gives the real ``create_app`` with its lifespan run and a *member* token of
tenant ``t1``; admin and other-tenant tokens are made here. Values are write-only: no
response text, success or error, may ever hold one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.routing import NoMatchFound

from sitekeep.config import Settings
from sitekeep.vault import Vault
from support import WHO, Api, ApiFactory

pytestmark = pytest.mark.anyio

USER = "dummy-user-c01d"
PASS = "dummy-pass-7f3a"
PASTED = "dummy pass+8e4b!"
BODY = {
    "description": "staging admin",
    "hosts": ["app.example.test", "*.example.test"],
    "values": {"username": USER, "password": PASS},
}


def _serves_secrets(app: FastAPI) -> bool:
    # By route name: an included router is not flattened into ``app.routes``.
    try:
        app.url_path_for("put_secret", name="x")
    except NoMatchFound:
        return False
    return True


@dataclass
class Secrets:
    """Clients of one app: ``member`` and ``admin`` of tenant t1, ``intruder`` (admin of t2).

    Every response text is kept in ``seen`` so a test can check no value ever went out.
    """

    member: httpx.AsyncClient
    admin: dict[str, str]
    intruder: dict[str, str]
    seen: list[str] = field(default_factory=list)

    async def call(
        self, method: str, path: str, body: Any = None, *, as_: str = "member"
    ) -> httpx.Response:
        headers = {"member": {}, "admin": self.admin, "intruder": self.intruder}[as_]
        reply = await self.member.request(method, path, json=body, headers=headers)
        self.seen.append(reply.text)
        return reply


@pytest.fixture
async def secrets(make_api: ApiFactory, settings: Settings) -> AsyncIterator[Secrets]:
    api: Api = await make_api()
    admin = await api.service.catalogue.create_token(WHO.tenant, "boss", "admin")
    intruder = await api.service.catalogue.create_token("t2", "intruder", "admin")
    yield Secrets(
        api.http,
        admin={"Authorization": f"Bearer {admin}"},
        intruder={"Authorization": f"Bearer {intruder}"},
    )


def assert_no_value(texts: list[str]) -> None:
    for text in texts:
        assert PASS not in text and USER not in text and PASTED not in text, text


async def test_the_real_app_serves_the_secrets_catalogue(api: Api) -> None:
    app: FastAPI = api.http._transport.app  # type: ignore[attr-defined]
    assert isinstance(api.service.parts.vault, Vault)
    assert _serves_secrets(app)


async def test_an_admin_puts_a_secret_and_the_answer_holds_no_value(secrets: Secrets) -> None:
    reply = await secrets.call("PUT", "/v1/secrets/staging", BODY, as_="admin")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert set(body) == {"name", "description", "hosts", "keys", "updated_at"}
    assert body["name"] == "staging" and body["description"] == "staging admin"
    assert body["hosts"] == ["app.example.test", "*.example.test"]
    assert body["keys"] == ["username", "password"]
    assert isinstance(body["updated_at"], float)
    assert_no_value(secrets.seen)


async def test_a_member_may_read_but_not_write(secrets: Secrets) -> None:
    refused = await secrets.call("PUT", "/v1/secrets/staging", BODY)
    assert refused.status_code == 403 and refused.json()["error"]["type"] == "forbidden"
    # Refused before the body is read: a member learns nothing from a bad body either.
    refused = await secrets.call("PUT", "/v1/secrets/staging", {"hosts": "x"})
    assert refused.status_code == 403
    assert (await secrets.call("GET", "/v1/secrets")).json() == {"secrets": []}

    await secrets.call("PUT", "/v1/secrets/staging", BODY, as_="admin")
    listed = await secrets.call("GET", "/v1/secrets")
    assert listed.status_code == 200
    [only] = listed.json()["secrets"]
    assert only["name"] == "staging" and only["keys"] == ["username", "password"]
    one = await secrets.call("GET", "/v1/secrets/staging")
    assert one.status_code == 200 and one.json() == only

    refused = await secrets.call("DELETE", "/v1/secrets/staging")
    assert refused.status_code == 403
    assert (await secrets.call("GET", "/v1/secrets/staging")).status_code == 200
    assert_no_value(secrets.seen)


async def test_the_list_is_sorted_by_name(secrets: Secrets) -> None:
    for name in ("zeta", "alpha", "mid"):
        await secrets.call("PUT", f"/v1/secrets/{name}", BODY, as_="admin")
    listed = (await secrets.call("GET", "/v1/secrets")).json()["secrets"]
    assert [s["name"] for s in listed] == ["alpha", "mid", "zeta"]
    assert_no_value(secrets.seen)


async def test_an_admin_deletes_a_secret_and_it_is_gone(secrets: Secrets) -> None:
    await secrets.call("PUT", "/v1/secrets/staging", BODY, as_="admin")
    reply = await secrets.call("DELETE", "/v1/secrets/staging", as_="admin")
    assert reply.status_code == 200 and reply.json() == {"name": "staging", "deleted": True}
    assert (await secrets.call("GET", "/v1/secrets/staging")).status_code == 404
    assert (await secrets.call("GET", "/v1/secrets")).json() == {"secrets": []}


async def test_an_unknown_secret_is_404(secrets: Secrets) -> None:
    for method, who in (("GET", "member"), ("DELETE", "admin")):
        reply = await secrets.call(method, "/v1/secrets/nope", as_=who)
        assert reply.status_code == 404, method
        assert reply.json()["error"] == {
            "type": "not_found",
            "message": "no secret named 'nope'",
            "field": "name",
        }


@pytest.mark.parametrize(
    ("name", "change", "field"),
    [
        ("staging", {"hosts": ["app.example.test", "https://app.example.test"]}, "hosts[1]"),
        ("staging", {"hosts": ["*.test"]}, "hosts[0]"),
        ("staging", {"hosts": []}, "hosts"),
        ("staging", {"hosts": None}, "hosts"),
        ("staging", {"values": None}, "values"),
        ("staging", {"values": {"password": ""}}, "values.password"),
        ("staging", {"values": {"password": 1234}}, "values.password"),
        # A value pasted where a key goes (not a key name) is not echoed, whatever the
        # value beside it.
        ("staging", {"values": {PASTED: 1234}}, "values"),
        ("staging", {"values": {PASTED: None}}, "values"),
        ("staging", {"values": {PASTED: PASS}}, "values"),
        ("staging", {"values": {"password": PASS * 1000}}, "values.password"),
        ("staging", {"description": "d" * 501}, "description"),
        ("staging", {"value": PASS}, "value"),
        ("bad%20name", {}, "name"),
        ("-leading-dash", {}, "name"),
    ],
)
async def test_bad_input_is_400_naming_the_field_and_changes_nothing(
    secrets: Secrets, name: str, change: dict[str, Any], field: str
) -> None:
    await secrets.call("PUT", "/v1/secrets/staging", BODY, as_="admin")
    before = (await secrets.call("GET", "/v1/secrets")).json()
    body = {k: v for k, v in {**BODY, **change}.items() if v is not None}
    reply = await secrets.call("PUT", f"/v1/secrets/{name}", body, as_="admin")
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_input" and error["field"] == field
    assert (await secrets.call("GET", "/v1/secrets")).json() == before
    assert_no_value(secrets.seen)


async def test_another_tenant_never_sees_the_secret(secrets: Secrets) -> None:
    await secrets.call("PUT", "/v1/secrets/staging", BODY, as_="admin")
    assert (await secrets.call("GET", "/v1/secrets", as_="intruder")).json() == {"secrets": []}
    for method in ("GET", "DELETE"):
        reply = await secrets.call(method, "/v1/secrets/staging", as_="intruder")
        assert reply.status_code == 404, method
    # The same name in t2 is t2's own secret; t1's stays as it was.
    mine = {**BODY, "hosts": ["t2.example.test"]}
    assert (await secrets.call("PUT", "/v1/secrets/staging", mine, as_="intruder")).is_success
    ours = (await secrets.call("GET", "/v1/secrets/staging")).json()
    assert ours["hosts"] == ["app.example.test", "*.example.test"]
    assert_no_value(secrets.seen)


async def test_calls_without_a_known_token_are_401(secrets: Secrets) -> None:
    anonymous = {"Authorization": "Bearer sk_not-a-token"}
    for method, path in (
        ("GET", "/v1/secrets"),
        ("GET", "/v1/secrets/staging"),
        ("PUT", "/v1/secrets/staging"),
        ("DELETE", "/v1/secrets/staging"),
    ):
        reply = await secrets.member.request(method, path, json=BODY, headers=anonymous)
        assert reply.status_code == 401, (method, path)
        assert reply.json()["error"]["type"] == "unauthorized"


async def test_openapi_lists_the_secrets_routes(secrets: Secrets) -> None:
    paths = (await secrets.call("GET", "/openapi.json")).json()["paths"]
    assert set(paths["/v1/secrets/{name}"]) == {"put", "get", "delete"}
    assert set(paths["/v1/secrets"]) == {"get"}
