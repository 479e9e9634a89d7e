"""Secrets typed into real pages (SPEC §7): the agent signs in without seeing a password,
a host not allowed gets nothing, and a URL holding the value is withheld everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.sites import FORM_PASSWORD, FORM_USER, Sites
from sitekeep.masking import MASK
from support import WHO, Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def store_login(api: Api, hosts: list[str]) -> None:
    await api.service.parts.vault.put(
        WHO.tenant,
        "form-login",
        "carol's account on the form app",
        hosts,
        {"username": FORM_USER, "password": FORM_PASSWORD},
    )


async def test_the_agent_signs_in_with_a_secret_and_comes_back_signed_in(
    api: Api, sites: Sites
) -> None:
    await store_login(api, ["*.example.test"])
    await api.open(key="a", url=sites.url("form.example.test", "/login"))
    snap = await api.call("POST", "/v1/sessions/a/snapshot")
    refs = {e["name"]: e["ref"] for e in snap["elements"]}
    for field, name in (("username", "Username"), ("password", "Password")):
        typed = await api.call(
            "POST",
            "/v1/sessions/a/type-secret",
            {"ref": refs[name], "secret": "form-login", "field": field},
        )
        assert typed["typed"] == {"secret": "form-login", "field": field}
    landed = await api.call("POST", "/v1/sessions/a/click", {"ref": refs["Sign in"]})
    # The username was typed from the secret too: its value is masked in every result.
    assert landed["title"] == f"Form — welcome {MASK}"
    await api.save("a")
    await api.close("a")
    await api.open(key="a", url=sites.url("form.example.test", "/"))
    text = await api.call("POST", "/v1/sessions/a/read", {})
    assert f"signed in as {MASK}" in text["text"] and FORM_USER not in text["text"]
    # The stores hold only ciphertext of the secret, and nothing of it elsewhere.
    stored = b"".join(
        value
        for value, *_ in api.service.parts.stores.sessions._data.values()  # type: ignore[attr-defined]
    )
    database = Path(api.service.parts.settings.database.removeprefix("sqlite:///"))
    files = b"".join(p.read_bytes() for p in database.parent.glob(database.name + "*"))
    assert FORM_PASSWORD.encode() not in stored + files


async def test_a_host_not_allowed_gets_nothing_typed(api: Api, sites: Sites) -> None:
    await store_login(api, ["app.other.test"])
    await api.open(key="n", url=sites.url("form.example.test", "/login"))
    reply = await api.http.post(
        "/v1/sessions/n/type-secret",
        json={"selector": "#pass", "secret": "form-login", "field": "password"},
    )
    assert reply.status_code == 403, reply.text
    error = reply.json()["error"]
    assert error["type"] == "secret_not_allowed" and error["host"] == "form.example.test"
    snap = await api.call("POST", "/v1/sessions/n/snapshot")
    assert next(e for e in snap["elements"] if e["name"] == "Password")["value"] == ""


async def test_a_get_form_url_holding_the_password_is_withheld_and_not_recorded(
    api: Api, sites: Sites
) -> None:
    await store_login(api, ["form.example.test"])
    await api.open(key="g", url=sites.url("form.example.test", "/login-get"))
    for field, selector in (("username", "#user"), ("password", "#pass")):
        await api.call(
            "POST",
            "/v1/sessions/g/type-secret",
            {"selector": selector, "secret": "form-login", "field": field},
        )
    landed = await api.call("POST", "/v1/sessions/g/click", {"selector": "button"})
    assert landed["url_withheld"] is True and "url" not in landed
    assert landed["title"] == f"Form — welcome {MASK}"
    current = await api.call("GET", "/v1/sessions/g")
    assert current["url_withheld"] is True and "url" not in current
    record = await api.service.views.record(WHO, "g")
    assert all("/session" not in e.url for e in record.history)
    flow = await api.call(
        "POST",
        "/v1/sessions/g/flows",
        {"steps": [{"op": "read"}, {"op": "navigate", "url": sites.url("form.example.test")}]},
    )
    assert flow["steps"][0]["url_withheld"] is True
    assert flow["url"] == sites.url("form.example.test", "/")
    assert flow["title"] == f"Form — signed in as {MASK} (plan free)"


async def test_an_unknown_secret_or_field_is_named_without_a_value(api: Api, sites: Sites) -> None:
    await store_login(api, ["*.example.test"])
    await api.open(key="u", url=sites.url("form.example.test", "/login"))
    missing = await api.http.post(
        "/v1/sessions/u/type-secret", json={"selector": "#pass", "secret": "nope", "field": "x"}
    )
    assert missing.status_code == 404
    assert missing.json()["error"] == {
        "type": "not_found",
        "message": "no secret named 'nope'",
        "field": "secret",
    }
    wrong = await api.http.post(
        "/v1/sessions/u/type-secret",
        json={"selector": "#pass", "secret": "form-login", "field": "pin"},
    )
    assert wrong.status_code == 400 and wrong.json()["error"]["field"] == "field"
    assert "username" in wrong.json()["error"]["message"]


@pytest.mark.parametrize("browser", ["chromium"])
async def test_a_secret_typed_with_submit_signs_in_and_only_its_value_is_masked(
    api: Api, sites: Sites
) -> None:
    await store_login(api, ["form.example.test"])
    await api.open(key="s", url=sites.url("form.example.test", "/login"))
    await api.call("POST", "/v1/sessions/s/type", {"selector": "#user", "text": FORM_USER})
    landed = await api.call(
        "POST",
        "/v1/sessions/s/type-secret",
        {"selector": "#pass", "secret": "form-login", "field": "password", "submit": True},
    )
    # The username was typed as plain text: only the password is a typed secret value.
    assert landed["title"] == f"Form — welcome {FORM_USER}"
