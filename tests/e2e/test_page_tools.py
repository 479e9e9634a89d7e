"""Page tools over HTTP on real Chromium: snapshot refs, click, type, press, select, read,
screenshot, and what a stale ref says (SPEC §5)."""

from __future__ import annotations

import base64

import pytest

from fixtures.serve import free_port
from fixtures.sites import FORM_PASSWORD, FORM_USER, Sites
from support import Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: ``on_the_form`` lives across tests


@pytest.fixture(scope="module")
async def on_the_form(module_api: Api, sites: Sites) -> Api:
    """Session ``b`` on the form's sign-in page, one per browser kind for the module: the
    bad-input tests each prove they changed nothing, so they can share it."""
    await module_api.open(key="b", url=sites.url("form.example.test", "/login"))
    return module_api


def ref_of(snapshot: dict[str, object], role: str, name: str) -> str:
    for element in snapshot["elements"]:  # type: ignore[attr-defined]
        if element["role"] == role and element["name"] == name:
            return str(element["ref"])
    raise AssertionError(f"no {role} named {name!r} in {snapshot['elements']}")


async def test_sign_in_through_a_form_with_snapshot_refs(api: Api, sites: Sites) -> None:
    await api.open(key="p", url=sites.url("form.example.test", "/login"))
    snap = await api.call("POST", "/v1/sessions/p/snapshot")
    assert snap["snapshot"] == "s1" and snap["title"] == "Form — sign in"
    roles = {(e["role"], e["name"]) for e in snap["elements"]}
    assert {("textbox", "Username"), ("textbox", "Password"), ("button", "Sign in")} <= roles
    assert ("heading", "Form — sign in") in roles

    user = ref_of(snap, "textbox", "Username")
    typed = await api.call("POST", "/v1/sessions/p/type", {"ref": user, "text": FORM_USER})
    assert typed["title"] == "Form — sign in"
    await api.call("POST", "/v1/sessions/p/type", {"selector": "#pass", "text": FORM_PASSWORD})
    chosen = await api.call(
        "POST",
        "/v1/sessions/p/select",
        {"ref": ref_of(snap, "combobox", "Plan"), "value": "Pro plan"},
    )
    assert chosen["selected"] == ["Pro plan"]
    again = await api.call("POST", "/v1/sessions/p/snapshot")
    assert next(e for e in again["elements"] if e["name"] == "Password")["value"] == "•••"
    landed = await api.call(
        "POST", "/v1/sessions/p/click", {"ref": ref_of(again, "button", "Sign in")}
    )
    assert landed["title"] == f"Form — welcome {FORM_USER}"
    assert landed["url"] == sites.url("form.example.test", "/session")

    home = await api.go("p", sites.url("form.example.test", "/"))
    assert home["title"] == f"Form — signed in as {FORM_USER} (plan pro)"
    text = await api.call("POST", "/v1/sessions/p/read", {})
    assert f"signed in as {FORM_USER}" in text["text"] and text["truncated"] is False


async def test_a_ref_from_before_a_navigation_is_stale(api: Api, sites: Sites) -> None:
    await api.open(key="s", url=sites.url("form.example.test", "/login"))
    snap = await api.call("POST", "/v1/sessions/s/snapshot")
    await api.go("s", sites.url("form.example.test", "/"))
    reply = await api.http.post(
        "/v1/sessions/s/click", json={"ref": ref_of(snap, "button", "Sign in")}
    )
    assert reply.status_code == 409
    error = reply.json()["error"]
    assert error["type"] == "stale_ref" and "snapshot again" in error["message"]
    reply = await api.http.post("/v1/sessions/s/click", json={"ref": "e999"})
    assert reply.json()["error"]["type"] == "stale_ref"


async def test_press_read_truncation_and_screenshot(api: Api, sites: Sites) -> None:
    await api.open(key="k", url=sites.url("form.example.test", "/login-slow"))
    await api.call("POST", "/v1/sessions/k/type", {"selector": "#user", "text": FORM_USER})
    await api.call("POST", "/v1/sessions/k/type", {"selector": "#pass", "text": FORM_PASSWORD})
    landed = await api.call("POST", "/v1/sessions/k/press", {"keys": "Enter"})
    assert landed["title"] == f"Form — welcome {FORM_USER}"  # it waited for the slow page
    short = await api.call("POST", "/v1/sessions/k/read", {"max_chars": 5})
    assert short["truncated"] is True and short["length"] > 5
    assert short["text"].startswith(short["text"][:5]) and "truncated" in short["text"]
    shot = await api.call("POST", "/v1/sessions/k/screenshot")
    assert base64.b64decode(shot["data"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert shot["url"] == sites.url("form.example.test", "/session?slow=1")


@pytest.mark.parametrize(
    ("op", "body", "field"),
    [
        ("click", {}, None),
        ("click", {"ref": "e1", "selector": "#x"}, None),
        ("click", {"ref": "one"}, "ref"),
        ("type", {"selector": "#user"}, "text"),
        ("press", {"keys": "Hyper+Q"}, "keys"),
        ("read", {"max_chars": 0}, "max_chars"),
        ("click", {"selector": "##"}, "selector"),
    ],
)
async def test_bad_page_tool_input_is_400_and_changes_nothing(
    on_the_form: Api, op: str, body: dict[str, object], field: str | None
) -> None:
    api = on_the_form
    reply = await api.http.post(f"/v1/sessions/b/{op}", json=body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_input"
    assert error.get("field") == field
    assert (await api.call("GET", "/v1/sessions/b"))["title"] == "Form — sign in"


@pytest.mark.parametrize(
    ("op", "body"),
    [("click", {}), ("type", {"text": "x"}), ("select", {"value": "Pro plan"}), ("read", {})],
)
async def test_an_unknown_selector_is_404_naming_the_selector_and_changes_nothing(
    on_the_form: Api, op: str, body: dict[str, object]
) -> None:
    api = on_the_form
    reply = await api.http.post(f"/v1/sessions/b/{op}", json={"selector": "#nowhere", **body})
    assert reply.status_code == 404, reply.text
    assert reply.json()["error"] == {
        "type": "not_found",
        "message": "no element matches the selector '#nowhere'",
        "field": "selector",
    }
    assert (await api.call("GET", "/v1/sessions/b"))["title"] == "Form — sign in"


async def test_an_unreachable_url_is_502_naming_the_url_on_navigate_open_and_in_a_flow(
    api: Api, sites: Sites
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/"  # nothing listens: connection refused

    def refused(error: dict[str, object]) -> None:
        assert error["type"] == "navigation_failed" and error["field"] == "url", error
        assert "CONNECTION_REFUSED" in str(error["reason"])

    await api.open(key="n", url=sites.url("form.example.test", "/login"))
    reply = await api.http.post("/v1/sessions/n/navigate", json={"url": nowhere})
    assert reply.status_code == 502, reply.text
    refused(reply.json()["error"])
    opened = await api.http.post("/v1/sessions", json={"key": "n2", "url": nowhere})
    assert opened.status_code == 502, opened.text
    refused(opened.json()["error"])
    flow = await api.call(
        "POST", "/v1/sessions/n/flows", {"steps": [{"op": "navigate", "url": nowhere}]}
    )
    refused(flow["steps"][0]["error"])
