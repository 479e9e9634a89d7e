"""The MCP facade through the SDK's in-memory client, on real Chromium and the fixture
sites (SPEC §5): tool list and annotations, the agent's sign-in story, screenshots as
image content, errors as error results naming the field, resources as JSON."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ImageContent, TextContent

from fixtures.serve import free_port
from fixtures.sites import FORM_PASSWORD, FORM_USER, REC_HOST, TYPED_SECRET, Sites
from sitekeep.config import Settings
from sitekeep.errors import NotFound
from sitekeep.limits import MAX_NAME, MAX_URL
from sitekeep.mcp import build_server
from sitekeep.model import Cookie, Principal, SessionRecord, SiteData
from sitekeep.service import Service
from support import WHO, call_tool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PAGE_TOOLS = {
    "navigate",
    "back",
    "forward",
    "snapshot",
    "click",
    "type",
    "type_secret",
    "press",
    "select",
    "read",
    "screenshot",
}


@pytest.fixture
async def service(settings: Settings) -> AsyncIterator[Service]:
    opened = Service.from_settings(settings)
    yield opened
    await opened.parts.browsers.close_all()
    await opened.aclose()


@pytest.fixture
async def client(service: Service) -> AsyncIterator[Client]:
    async with Client(build_server(lambda: service, lambda _ctx: WHO)) as connected:
        yield connected


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """A tool's result; it must not be an error, and its text must carry the same JSON."""
    return await call_tool(client, tool, structured=True, **args)


def error_of(result: CallToolResult) -> dict[str, Any]:
    """The ``{type, message, field?}`` of an error result."""
    assert result.is_error
    text = result.content[0]
    assert isinstance(text, TextContent)
    body: dict[str, Any] = json.loads(text.text[text.text.index("{") :])
    return dict(body["error"])


def ref_of(snapshot: dict[str, Any], role: str, name: str) -> str:
    for element in snapshot["elements"]:
        if element["role"] == role and element["name"] == name:
            return str(element["ref"])
    raise AssertionError(f"no {role} named {name!r} in {snapshot['elements']}")


async def test_the_tools_reach_the_service_through_the_servers_lifespan(service: Service) -> None:
    asked: list[Service] = []

    def service_of() -> Service:
        asked.append(service)
        return service

    server = build_server(service_of, lambda _ctx: WHO)
    assert asked == []  # built before the service is needed: the HTTP app's case
    async with Client(server) as connected:
        for _ in range(3):
            assert (await call(connected, "list_profiles"))["profiles"] == []
    assert asked == [service]  # once, as the server started


async def test_tools_are_listed_with_honest_annotations(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == PAGE_TOOLS | {
        "open_session",
        "save_site_data",
        "close_session",
        "run_flow",
        "list_profiles",
        "list_site_data_versions",
        "restore_site_data_version",
    }
    hints = {name: tool.annotations for name, tool in tools.items()}
    for name in ("snapshot", "read", "screenshot"):
        assert hints[name] is not None and hints[name].read_only_hint is True, name
    save = hints["save_site_data"]
    assert save is not None
    assert (save.read_only_hint, save.destructive_hint, save.idempotent_hint) == (
        False,
        False,
        True,
    )
    close = hints["close_session"]
    assert close is not None and (close.destructive_hint, close.idempotent_hint) == (False, True)
    opening = hints["open_session"]
    assert opening is not None and opening.destructive_hint is True
    for name in ("navigate", "back", "forward", "click", "type", "press", "select"):
        hint = hints[name]
        assert hint is not None and hint.read_only_hint is False and hint.open_world_hint, name
    for name, tool in tools.items():
        if name != "list_profiles":  # about the workspace, not a session
            assert "key" in tool.input_schema["properties"], name
    listing = hints["list_profiles"]
    assert listing is not None and listing.read_only_hint is True
    versions = hints["list_site_data_versions"]
    assert versions is not None and versions.read_only_hint is True
    restore = hints["restore_site_data_version"]
    assert restore is not None and (restore.read_only_hint, restore.destructive_hint) == (
        False,
        False,
    )
    for name in ("profile", "country"):
        assert name in tools["open_session"].input_schema["properties"], name
    assert "profile" in tools["save_site_data"].input_schema["properties"]
    assert "right after signing in" in (tools["save_site_data"].description or "")
    assert "stale" in (tools["snapshot"].description or "")
    assert "without you ever seeing" in (tools["type_secret"].description or "")
    assert "delete" in (tools["open_session"].description or "")


async def test_an_agent_signs_in_saves_closes_and_comes_back_signed_in(
    client: Client, service: Service, sites: Sites
) -> None:
    await service.parts.vault.put(
        WHO.tenant,
        "form-login",
        "carol's account on the form app",
        ["form.example.test"],
        {"password": FORM_PASSWORD},
    )
    opened = await call(client, "open_session")
    assert opened["key"] == "default"  # no key: the connection's session
    page = await call(client, "navigate", url=sites.url("form.example.test", "/login"))
    assert page["title"] == "Form — sign in"
    snap = await call(client, "snapshot")
    await call(client, "type", ref=ref_of(snap, "textbox", "Username"), text=FORM_USER)
    typed = await call(
        client, "type_secret", selector="#pass", secret="form-login", field="password"
    )
    assert typed["typed"] == {"secret": "form-login", "field": "password"}
    assert FORM_PASSWORD not in json.dumps(typed)
    landed = await call(client, "click", ref=ref_of(snap, "button", "Sign in"))
    assert landed["title"] == f"Form — welcome {FORM_USER}"

    saved = await call(client, "save_site_data")
    assert (
        saved["saved"]["cookies"] == 2 and saved["uri"] == "sitekeep://sessions/default/site-data"
    )
    closed = await call(client, "close_session")  # it saves by itself first (SPEC §18)
    assert (closed["key"], closed["closed"]) == ("default", True)
    assert closed["autosave"]["guarded"] == [] and closed["autosave"]["saved"]["cookies"] == 2

    back = await call(client, "open_session", url=sites.url("form.example.test", "/"))
    assert back["title"].startswith(f"Form — signed in as {FORM_USER}")
    text = await call(client, "read")
    assert f"signed in as {FORM_USER}" in text["text"]


async def test_screenshot_is_png_image_content_with_url_and_title(
    client: Client, sites: Sites
) -> None:
    url = sites.url("form.example.test", "/login")
    await call(client, "open_session", key="shot", url=url)
    result = await client.call_tool("screenshot", {"key": "shot"})
    assert not result.is_error
    image, text = result.content
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG\r\n\x1a\n")
    assert isinstance(text, TextContent)
    assert json.loads(text.text) == {"url": url, "title": "Form — sign in"}


async def test_errors_come_back_as_error_results_naming_the_field(
    client: Client, sites: Sites
) -> None:
    await call(client, "open_session", key="e", url=sites.url("form.example.test", "/login"))
    refused = await client.call_tool("navigate", {"key": "e", "url": "file:///etc/passwd"})
    error = error_of(refused)
    assert error["type"] == "invalid_input" and error["field"] == "url"

    stale = error_of(await client.call_tool("click", {"key": "e", "ref": "e999"}))
    assert stale["type"] == "stale_ref" and "snapshot again" in stale["message"]
    assert stale["field"] == "ref" and stale["ref"] == "e999"
    missing = error_of(await client.call_tool("back", {"key": "nobody"}))
    assert missing["type"] == "not_found" and missing["field"] == "key"
    unknown = error_of(await client.call_tool("click", {"key": "e", "selector": "#nowhere"}))
    assert unknown == {
        "type": "not_found",
        "message": "no element matches the selector '#nowhere'",
        "field": "selector",
    }
    secret = {"key": "e", "selector": "#pass", "secret": "nope", "field": "password"}
    no_secret = error_of(await client.call_tool("type_secret", secret))
    assert no_secret["type"] == "not_found" and no_secret["field"] == "secret"
    nowhere = f"http://127.0.0.1:{free_port()}/"  # nothing listens: connection refused
    failed = error_of(await client.call_tool("navigate", {"key": "e", "url": nowhere}))
    assert failed["type"] == "navigation_failed" and failed["field"] == "url"
    assert "CONNECTION_REFUSED" in failed["reason"]
    flow = error_of(await client.call_tool("run_flow", {"key": "e", "steps": [{"op": "navigate"}]}))
    assert flow["field"] == "steps[0].url"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"text": {"password": FORM_PASSWORD}, "selector": "#p"}, "text"),
        ({"text": FORM_PASSWORD, "selector": "#p", "submit": FORM_PASSWORD}, "submit"),
        ({"selector": "#p"}, "text"),
    ],
    ids=["text-not-a-string", "submit-not-a-bool", "text-missing"],
)
async def test_arguments_of_the_wrong_shape_are_invalid_input_never_echoed(
    client: Client, args: dict[str, Any], field: str
) -> None:
    # The SDK's own message holds pydantic's input_value; the HTTP facade never echoes
    # input either (api.errors). Refused before any session or browser is touched.
    refused = await client.call_tool("type", {"key": "nobody", **args})
    error = error_of(refused)
    assert error["type"] == "invalid_input" and error["field"] == field, error
    assert FORM_PASSWORD not in str(refused.content)


async def test_resources_read_back_json_with_http_only_values_hidden(
    client: Client, sites: Sites
) -> None:
    await call(client, "open_session", key="r", url=sites.url("form.example.test", "/login"))
    await call(client, "type", key="r", selector="#user", text=FORM_USER)
    await call(client, "type", key="r", selector="#pass", text=FORM_PASSWORD, submit=True)
    await call(client, "save_site_data", key="r")

    async def resource(uri: str) -> dict[str, Any]:
        contents = (await client.read_resource(uri)).contents
        assert contents[0].mime_type == "application/json"
        body: dict[str, Any] = json.loads(getattr(contents[0], "text"))  # noqa: B009
        return body

    current = await resource("sitekeep://sessions/r/current")
    assert current["title"] == f"Form — welcome {FORM_USER}"
    assert current["browser"] == {"kind": "chromium", "live": True}
    by_host = await resource("sitekeep://sessions/r/site-data")
    hosts = {row["site"]: row for row in by_host["hosts"]}
    assert hosts["form.example.test"]["cookies"] == 2
    full = await resource(hosts["form.example.test"]["uri"])
    cookies = {c["name"]: c["value"] for c in full["cookies"]}
    assert cookies == {"form_session": "•••", "form_plan": "free"}

    signed = await resource("sitekeep://sessions/r/sign-in")  # SPEC §18
    assert signed["autosave"] is True
    form = signed["sign_in"]["form.example.test"]
    assert (form["state"], form["evidence"]["auth_cookies"]) == ("signed_in", ["form_session"])

    with pytest.raises(MCPError, match="not_found"):
        await client.read_resource("sitekeep://sessions/nobody/current")

    listed = {r.uri: r for r in (await client.list_resources()).resources}
    assert set(listed) == {
        "sitekeep://sessions/r/current",
        "sitekeep://sessions/r/sign-in",
        "sitekeep://sessions/r/site-data",
        hosts["form.example.test"]["uri"],
    }
    assert all(r.mime_type == "application/json" for r in listed.values())


async def test_profiles_through_mcp_are_gated_and_an_unknown_country_names_the_field(
    client: Client, service: Service
) -> None:
    mine = await service.parts.profiles.create(WHO, "mine")
    theirs = await service.parts.profiles.create(Principal(WHO.tenant, "someone-else"), "theirs")
    listed = await call(client, "list_profiles")
    assert [p["id"] for p in listed["profiles"]] == [mine.id]
    assert "sealed" not in json.dumps(listed)
    hidden = await client.call_tool("open_session", {"key": "p", "profile": theirs.id})
    assert error_of(hidden) == {
        "type": "not_found",
        "message": f"no profile named {theirs.id!r}",
        "field": "profile",
    }
    far = await client.call_tool("open_session", {"key": "p", "country": "jp"})
    assert error_of(far)["field"] == "country"
    hidden_save = await client.call_tool("save_site_data", {"key": "p", "profile": theirs.id})
    assert error_of(hidden_save)["message"] == f"no profile named {theirs.id!r}"
    assert error_of(hidden_save)["field"] == "profile"
    assert await service.parts.stores.runs.open_runs() == []


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("save_site_data", {"profile": "p" * (MAX_NAME + 1)}, "profile"),
        ("open_session", {"profile": "p" * (MAX_NAME + 1)}, "profile"),
        ("open_session", {"country": "c" * (MAX_NAME + 1)}, "country"),
        ("open_session", {"url": "http://app.example.test/" + "u" * MAX_URL}, "url"),
        ("navigate", {"url": "http://app.example.test/" + "u" * MAX_URL}, "url"),
    ],
    ids=["save-profile", "open-profile", "open-country", "open-url", "navigate-url"],
)
async def test_arguments_past_the_http_bounds_are_invalid_input_naming_the_field(
    client: Client, service: Service, tool: str, args: dict[str, Any], field: str
) -> None:
    """MCP takes what HTTP takes, bounded alike (``sitekeep.limits``): past a bound the
    call is refused naming the field, before any session or browser is touched."""
    error = error_of(await client.call_tool(tool, {"key": "bounded", **args}))
    assert error["type"] == "invalid_input" and error["field"] == field, error
    with pytest.raises(NotFound):
        await service.views.record(WHO, "bounded")


async def test_after_a_secret_is_typed_mcp_refuses_clipboard_input_naming_the_field(
    client: Client, service: Service, sites: Sites
) -> None:
    await service.parts.vault.put(WHO.tenant, "clip", "", [REC_HOST], {"short": TYPED_SECRET})
    await call(client, "open_session", key="clip", url=sites.url(REC_HOST, "/"))
    await call(client, "type_secret", key="clip", selector="#rec", secret="clip", field="short")
    for tool, args, field in (
        ("press", {"keys": "Shift+\ue05c"}, "keys"),  # Shift+Insert of the number pad
        ("type", {"selector": "#rec", "text": "\ue009v"}, "text"),  # Control, then v
    ):
        refused = error_of(await client.call_tool(tool, {"key": "clip", **args}))
        assert (refused["type"], refused["field"]) == ("clipboard_not_allowed", field), tool
    assert (await call(client, "press", key="clip", keys="Control+A"))["title"] == "Recorder"


async def test_an_agent_lists_and_restores_versions_and_a_bad_id_names_the_field(
    client: Client, service: Service
) -> None:
    """Issue #26: every save keeps the one it replaced; the agent undoes one."""
    records = service.parts.seam.records
    now = time.time()
    snapshots = [
        SiteData(cookies=(Cookie("sid", f"dummy-mcp-{n}", "app.example.test"),), saved_at=n)
        for n in (1.0, 2.0)
    ]

    async def body() -> dict[str, Any]:
        await records.load(WHO.tenant, "v")
        await records.put(SessionRecord(WHO.tenant, "v", WHO.subject, "chromium", now, now))
        for snapshot in snapshots:
            await records.put_snapshot(WHO.tenant, "v", snapshot)
        return {}

    await service.parts.seam.call(WHO, "v", lambda _: body(), inspect=False)
    listed = await call(client, "list_site_data_versions", key="v")
    [version] = listed["versions"]
    assert version["saved_at"] == 1.0 and "dummy" not in json.dumps(listed)
    done = await call(client, "restore_site_data_version", key="v", version=version["id"])
    assert done["restored"] == {"id": version["id"], "saved_at": 1.0, "hosts": ["app.example.test"]}
    assert await records.load_snapshot(WHO.tenant, "v") == snapshots[0]
    for bad, kind in (("nope", "invalid_input"), ("v0000000000001-0000", "not_found")):
        refused = await client.call_tool("restore_site_data_version", {"key": "v", "version": bad})
        assert (error_of(refused)["type"], error_of(refused)["field"]) == (kind, "version")
    assert await records.load_snapshot(WHO.tenant, "v") == snapshots[0]
