"""Per-site sign-in checks and sign-in state over HTTP (SPEC §18; issue #26), through the
real app in-process, no browser: a profile's state judged from its imported site data,
its checks defined, refused when bad (400 naming the field, nothing changed), gated like
the profile, and gone with it."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from support import WHO, Api, ApiFactory

pytestmark = pytest.mark.anyio

SID = "dummy-check-sid-7d01"
STATE = {
    "cookies": [
        {
            "name": "sessionid",
            "value": SID,
            "domain": "app.example.test",
            "path": "/",
            "expires": -1,
            "httpOnly": True,
            "secure": False,
            "sameSite": "Lax",
        }
    ],
    "origins": [],
}
GOOD = {"url": "http://app.example.test/me", "signed_in": {"selector": "#avatar"}}


async def as_(api: Api, subject: str, role: str = "member", tenant: str = WHO.tenant) -> Any:
    token = await api.service.catalogue.create_token(tenant, subject, role)
    return {"Authorization": f"Bearer {token}"}


async def profile(api: Api, visibility: str = "workspace") -> str:
    made = await api.call("POST", "/v1/profiles", {"name": "p", "visibility": visibility})
    ident: str = made["id"]
    put = await api.http.put(
        f"/v1/profiles/{ident}/storage-state", content=json.dumps(STATE).encode()
    )
    assert put.status_code == 200, put.text
    return ident


async def test_a_profiles_sign_in_state_is_judged_from_its_data_and_shown_everywhere(
    make_api: ApiFactory,
) -> None:
    api: Api = await make_api()
    ident = await profile(api)
    one = await api.call("GET", f"/v1/profiles/{ident}")
    (listed,) = (await api.call("GET", "/v1/profiles"))["profiles"]
    for view in (one, listed):
        app = view["sign_in"]["app.example.test"]
        assert (app["state"], app["evidence"]["auth_cookies"]) == ("signed_in", ["sessionid"])
        assert SID not in json.dumps(view)
    await api.call("PUT", f"/v1/profiles/{ident}/checks/app.example.test", GOOD)
    await api.call("PUT", f"/v1/profiles/{ident}/checks/id.example.test", {
        "url": "http://id.example.test/", "signed_in": {"text": "known"}
    })  # fmt: skip
    shown = (await api.call("GET", f"/v1/profiles/{ident}"))["sign_in"]
    assert shown["app.example.test"]["state"] == "signed_in"  # judged, not rerun yet
    assert shown["id.example.test"]["state"] == "unknown"  # a check not run yet
    assert shown["id.example.test"]["at"] is None


async def test_a_profiles_checks_are_kept_read_replaced_and_removed(make_api: ApiFactory) -> None:
    api: Api = await make_api()
    ident = await profile(api)
    path = f"/v1/profiles/{ident}/checks"
    put = await api.call("PUT", f"{path}/App.Example.Test", GOOD)
    assert put == {"id": ident, "host": "app.example.test", "check": {**GOOD, "signed_out": None}}
    replaced = {**GOOD, "signed_out": {"text": "Sign in"}}
    await api.call("PUT", f"{path}/app.example.test", replaced)
    assert (await api.call("GET", path))["checks"] == {"app.example.test": replaced}
    assert (await api.call("GET", f"{path}/app.example.test"))["check"] == replaced
    gone = await api.call("DELETE", f"{path}/app.example.test")
    assert gone == {"id": ident, "host": "app.example.test", "deleted": True}
    missing = await api.call("GET", f"{path}/app.example.test", status=404)
    assert missing["error"]["field"] == "host"
    await api.call("DELETE", f"{path}/app.example.test", status=404)


@pytest.mark.parametrize(
    ("host", "body", "field"),
    [
        ("app.example.test", {**GOOD, "url": "http://evil.example.test/"}, "url"),
        ("app.example.test", {**GOOD, "url": "file:///etc/passwd"}, "url"),
        ("app.example.test", {**GOOD, "url": "about:blank"}, "url"),
        ("app.example.test", {"url": GOOD["url"]}, "signed_in"),
        ("app.example.test", {**GOOD, "signed_in": {"selector": "#a", "text": "b"}}, "signed_in"),
        ("app.example.test", {**GOOD, "signed_in": {}}, "signed_in"),
        ("app.example.test", {**GOOD, "signed_out": {"text": ""}}, "signed_out"),
        ("app.example.test", {**GOOD, "every": 60}, "every"),
        ("app.example.test", {**GOOD, "url": 7}, "url"),
        ("not a host", GOOD, "host"),
    ],
)
async def test_a_bad_check_is_400_naming_its_field_and_changes_nothing(
    make_api: ApiFactory, host: str, body: dict[str, Any], field: str
) -> None:
    api: Api = await make_api()
    ident = await profile(api)
    await api.call("PUT", f"/v1/profiles/{ident}/checks/id.example.test", {
        "url": "http://id.example.test/", "signed_in": {"text": "known"}
    })  # fmt: skip
    before = await api.call("GET", f"/v1/profiles/{ident}")
    checks = await api.call("GET", f"/v1/profiles/{ident}/checks")
    refused = await api.call("PUT", f"/v1/profiles/{ident}/checks/{host}", body, status=400)
    assert (refused["error"]["type"], refused["error"]["field"]) == ("invalid_input", field)
    assert await api.call("GET", f"/v1/profiles/{ident}/checks") == checks
    assert await api.call("GET", f"/v1/profiles/{ident}") == before


async def test_a_profile_holds_at_most_16_checks(make_api: ApiFactory) -> None:
    api: Api = await make_api()
    ident = await profile(api)
    for n in range(16):
        host = f"h{n}.example.test"
        await api.call(
            "PUT", f"/v1/profiles/{ident}/checks/{host}", {**GOOD, "url": f"http://{host}/"}
        )
    more = {**GOOD, "url": "http://h16.example.test/"}
    refused = await api.call(
        "PUT", f"/v1/profiles/{ident}/checks/h16.example.test", more, status=400
    )
    assert refused["error"]["field"] == "host"
    again = {**GOOD, "url": "http://h3.example.test/x"}  # replacing one is no 17th
    await api.call("PUT", f"/v1/profiles/{ident}/checks/h3.example.test", again)


async def test_a_profiles_checks_pass_its_gate_and_go_with_it(make_api: ApiFactory) -> None:
    api: Api = await make_api()
    ident = await profile(api, "workspace")
    path = f"/v1/profiles/{ident}/checks/app.example.test"
    member, other = await as_(api, "bob"), await as_(api, "eve", "admin", "t2")
    put = await api.http.put(path, json=GOOD, headers=member)
    assert put.status_code == 403  # reads and uses it, may not change it
    assert (await api.http.get(f"/v1/profiles/{ident}/checks", headers=member)).status_code == 200
    for method in ("GET", "PUT", "DELETE"):
        reply = await api.http.request(method, path, json=GOOD, headers=other)
        assert reply.status_code == 404, method  # another tenant's does not exist
    await api.call("PUT", path, GOOD)
    store = api.service.parts.stores.sessions
    assert await store.keys(f"profile-state/{WHO.tenant}/{ident}")
    await api.call("DELETE", f"/v1/profiles/{ident}")
    assert await store.keys(f"profile-state/{WHO.tenant}/{ident}") == []


async def test_an_unknown_session_has_no_checks(make_api: ApiFactory) -> None:
    api: Api = await make_api()
    for method, tail in (("GET", "/checks"), ("PUT", "/checks/app.example.test"),
                         ("DELETE", "/checks/app.example.test"), ("POST", "/check")):  # fmt: skip
        reply: httpx.Response = await api.http.request(
            method, f"/v1/sessions/nobody{tail}", json=GOOD if method == "PUT" else None
        )
        assert reply.status_code == 404, (method, tail)
        assert reply.json()["error"]["field"] == "key"
    assert await api.service.parts.seam.records.load(WHO.tenant, "nobody") is None
