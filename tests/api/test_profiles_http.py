"""Profiles over HTTP (SPEC §9, §15) through the real app in-process, no browser.

The gates matrix: creator / member / admin / another tenant × private / workspace × every
operation (list, read, use, update, capture, import, export, delete). Each cell is checked
by what the gate decides, told apart from what follows the gate: a *use* the gate lets
through stops next at its bad ``url`` (400), a *capture* at its missing session (404 "no
session"). A refused call changes nothing, and no value reaches anyone who may not manage.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from sitekeep.model import SessionRecord
from sitekeep.service import Service
from support import WHO, Api, ApiFactory

pytestmark = pytest.mark.anyio

SID = "dummy-profile-sid-51e2"
TOKEN = "dummy-profile-token-0c7a"
FAR = int(time.time()) + 30 * 86_400  # within the 400 days a browser keeps a cookie
STATE: dict[str, Any] = {
    "cookies": [
        {
            "name": "sessionid",
            "value": SID,
            "domain": "app.example.test",
            "path": "/",
            "expires": FAR,
            "httpOnly": True,
            "secure": False,
            "sameSite": "Lax",
        },
        {
            "name": "_ga",
            "value": "dummy-ga",
            "domain": ".example.test",
            "path": "/",
            "expires": -1,
            "httpOnly": False,
            "secure": False,
            "sameSite": "Lax",
        },
    ],
    "origins": [
        {
            "origin": "http://app.example.test:8001",
            "localStorage": [{"name": "token", "value": TOKEN}],
        }
    ],
}

ACTORS = ("creator", "member", "admin", "other")
VISIBILITIES = ("private", "workspace")
OPS = ("list", "read", "use", "update", "capture", "import", "export", "delete")
MANAGE = {"update", "capture", "import", "export", "delete"}


def expected(actor: str, visibility: str, op: str) -> int:
    """The gate's answer (SPEC §9): 200 allowed, 404 not visible, 403 visible only."""
    if actor == "creator":
        return 200
    if actor == "other" or visibility == "private":
        return 404
    if actor == "admin":
        return 200
    return 403 if op in MANAGE else 200


@dataclass
class Clients:
    http: httpx.AsyncClient
    service: Service
    headers: dict[str, dict[str, str]]
    seen: dict[str, list[str]]

    async def call(
        self, actor: str, method: str, path: str, body: Any = None, content: bytes | None = None
    ) -> httpx.Response:
        kw: dict[str, Any] = {"content": content} if content is not None else {"json": body}
        reply = await self.http.request(method, path, headers=self.headers[actor], **kw)
        self.seen.setdefault(actor, []).append(reply.text)
        return reply

    async def make(self, visibility: str) -> str:
        created = await self.call(
            "creator", "POST", "/v1/profiles", {"name": "staging", "visibility": visibility}
        )
        assert created.status_code == 200, created.text
        ident: str = created.json()["id"]
        put = await self.call(
            "creator",
            "PUT",
            f"/v1/profiles/{ident}/storage-state",
            content=json.dumps(STATE).encode(),
        )
        assert put.status_code == 200, put.text
        return ident


@pytest.fixture
async def clients(make_api: ApiFactory) -> AsyncIterator[Clients]:
    api: Api = await make_api()
    svc = api.service
    bearer = {
        "creator": await svc.catalogue.create_token(WHO.tenant, "ada", "member"),
        "member": await svc.catalogue.create_token(WHO.tenant, "bob", "member"),
        "admin": await svc.catalogue.create_token(WHO.tenant, "boss", "admin"),
        "other": await svc.catalogue.create_token("t2", "eve", "admin"),
    }
    headers = {who: {"Authorization": f"Bearer {t}"} for who, t in bearer.items()}
    yield Clients(api.http, svc, headers, {})


async def attempt(c: Clients, actor: str, op: str, ident: str) -> int:
    """Run ``op`` on profile ``ident`` as ``actor``; the gate's verdict as a status."""
    path = f"/v1/profiles/{ident}"
    if op == "list":
        listed = await c.call(actor, "GET", "/v1/profiles")
        assert listed.status_code == 200
        return 200 if ident in [p["id"] for p in listed.json()["profiles"]] else 404
    if op == "use":
        reply = await c.call(actor, "POST", "/v1/sessions", {"profile": ident, "url": "file:///x"})
        if reply.status_code == 400:  # past the gate, stopped at the URL
            assert reply.json()["error"]["field"] == "url"
            return 200
        return reply.status_code
    if op == "capture":
        reply = await c.call(actor, "POST", f"{path}/capture", {"session": "absent"})
        if reply.status_code == 404 and "no session" in reply.json()["error"]["message"]:
            return 200
        return reply.status_code
    requests: dict[str, tuple[str, str, Any, bytes | None]] = {
        "read": ("GET", path, None, None),
        "update": ("PATCH", path, {"name": "staging"}, None),
        "import": ("PUT", f"{path}/storage-state", None, json.dumps(STATE).encode()),
        "export": ("GET", f"{path}/storage-state", None, None),
        "delete": ("DELETE", path, None, None),
    }
    method, url, body, content = requests[op]
    return (await c.call(actor, method, url, body, content)).status_code


@pytest.mark.parametrize("visibility", VISIBILITIES)
@pytest.mark.parametrize("actor", ACTORS)
async def test_the_gate_decides_every_operation_and_a_refusal_changes_nothing(
    clients: Clients, actor: str, visibility: str
) -> None:
    ident = await clients.make(visibility)
    before = await clients.service.parts.profiles._store.get(WHO.tenant, ident)
    for op in OPS:
        got = await attempt(clients, actor, op, ident)
        assert got == expected(actor, visibility, op), (actor, visibility, op)
        if got != 200 and op != "list":
            body = json.loads(clients.seen[actor][-1])["error"]
            assert body["type"] == {404: "not_found", 403: "forbidden"}[got]
            if got == 404:  # no existence leak: the same answer as a profile never made
                assert body["message"] == f"no profile named {ident!r}"
                assert body["field"] == ("profile" if op == "use" else "id")
    after = await clients.service.parts.profiles._store.get(WHO.tenant, ident)
    if expected(actor, visibility, "delete") == 200:
        assert after is None
    else:
        assert after == before
    if expected(actor, visibility, "export") != 200:
        for text in clients.seen[actor]:
            assert SID not in text and TOKEN not in text, (actor, visibility, text)


async def test_a_profile_is_created_private_listed_with_its_freshness_and_shared_by_patch(
    clients: Clients,
) -> None:
    created = (await clients.call("creator", "POST", "/v1/profiles", {"name": " Staging "})).json()
    assert created["visibility"] == "private" and created["name"] == "Staging"
    assert created["status"] == "empty" and created["created_by"] == "ada"
    assert created["cookie_domains"] == [] and created["can_manage"] is True
    ident = created["id"]
    put = await clients.call(
        "creator", "PUT", f"/v1/profiles/{ident}/storage-state", content=json.dumps(STATE).encode()
    )
    shown = put.json()["profile"]
    assert shown["cookie_domains"] == ["app.example.test", "example.test"]
    assert shown["expires_at"] == FAR and shown["status"] == "fresh"
    one = (await clients.call("creator", "GET", f"/v1/profiles/{ident}")).json()
    app = {"site": "app.example.test", "cookies": 1, "local": 1, "session": 0}
    assert {**app, "cookie_names": ["sessionid"]} in one["sites"]
    patched = await clients.call(
        "creator", "PATCH", f"/v1/profiles/{ident}", {"visibility": "workspace", "country": "DE"}
    )
    assert patched.json()["visibility"] == "workspace" and patched.json()["country"] == "de"
    listed = (await clients.call("member", "GET", "/v1/profiles")).json()
    assert [(p["id"], p["can_manage"]) for p in listed["profiles"]] == [(ident, False)]
    assert isinstance(listed["now"], float)
    soon = {**STATE, "cookies": [{**STATE["cookies"][0], "expires": time.time() + 3.5 * 86_400}]}
    put = await clients.call(
        "creator", "PUT", f"/v1/profiles/{ident}/storage-state", content=json.dumps(soon).encode()
    )
    assert put.json()["profile"]["status"] == "expires_soon"
    assert put.json()["profile"]["expires_in_days"] == 3
    assert put.json()["profile"]["cookie_domains"] == ["app.example.test"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 129}, "name"),
        ({"name": "a\nb"}, "name"),
        ({"name": "ok", "visibility": "public"}, "visibility"),
        ({"name": "ok", "country": "Germany"}, "country"),
    ],
)
async def test_bad_profile_input_is_400_naming_the_field_and_stores_nothing(
    clients: Clients, body: dict[str, Any], field: str
) -> None:
    reply = await clients.call("creator", "POST", "/v1/profiles", body)
    assert reply.status_code == 400 and reply.json()["error"]["field"] == field
    assert (await clients.call("creator", "GET", "/v1/profiles")).json()["profiles"] == []


async def test_expired_cookies_are_never_kept_and_the_export_round_trips(
    clients: Clients,
) -> None:
    ident = await clients.make("private")
    state = {
        **STATE,
        "cookies": [
            *STATE["cookies"],
            {**STATE["cookies"][0], "name": "old", "expires": 1_000_000_000},
        ],
    }
    put = await clients.call(
        "creator", "PUT", f"/v1/profiles/{ident}/storage-state", content=json.dumps(state).encode()
    )
    assert put.status_code == 200
    exported = (await clients.call("creator", "GET", f"/v1/profiles/{ident}/storage-state")).json()
    assert sorted(c["name"] for c in exported["cookies"]) == ["_ga", "sessionid"]
    assert exported["origins"][0]["localStorage"] == [{"name": "token", "value": TOKEN}]
    txt = await clients.call(
        "creator", "GET", f"/v1/profiles/{ident}/storage-state?format=cookies-txt"
    )
    assert txt.headers["content-type"].startswith("text/plain") and SID in txt.text


async def test_a_broken_import_is_400_and_keeps_the_profile_as_it_was(clients: Clients) -> None:
    ident = await clients.make("private")
    before = await clients.service.parts.profiles._store.get(WHO.tenant, ident)
    for content, field in ((b"{not json", None), (b"\xff\xfe", "body")):
        reply = await clients.call(
            "creator", "PUT", f"/v1/profiles/{ident}/storage-state", content=content
        )
        assert reply.status_code == 400, reply.text
        if field:
            assert reply.json()["error"]["field"] == field
    bad_format = await clients.call(
        "creator", "GET", f"/v1/profiles/{ident}/storage-state?format=har"
    )
    assert bad_format.status_code == 400 and bad_format.json()["error"]["field"] == "format"
    assert await clients.service.parts.profiles._store.get(WHO.tenant, ident) == before


async def seed_session(service: Service, key: str) -> None:
    """An empty session of tenant t1, as the service itself writes one."""
    now = time.time()
    record = SessionRecord(WHO.tenant, key, "ada", "chromium", now, now)

    async def body() -> dict[str, Any]:
        await service.parts.seam.records.load(WHO.tenant, key)
        await service.parts.seam.records.put(record)
        return {}

    await service.parts.seam.call(WHO, key, lambda _: body(), inspect=False)


async def test_a_sessions_storage_state_goes_in_and_out_and_its_preview_shows_no_value(
    clients: Clients,
) -> None:
    await seed_session(clients.service, "s1")
    put = await clients.call(
        "creator", "PUT", "/v1/sessions/s1/storage-state", content=json.dumps(STATE).encode()
    )
    assert put.status_code == 200, put.text
    assert put.json()["report"]["carried"]["cookies"] == 2
    out = (await clients.call("creator", "GET", "/v1/sessions/s1/storage-state")).json()
    assert {c["name"]: c["value"] for c in out["cookies"]}["sessionid"] == SID
    assert out["origins"][0]["localStorage"] == [{"name": "token", "value": TOKEN}]

    preview = await clients.call("creator", "GET", "/v1/sessions/s1/state-preview")
    assert SID not in preview.text and TOKEN not in preview.text
    body = preview.json()
    assert body["source"] == "snapshot" and body["now"] > 0
    rows = {(d["domain"], c["name"]): c["selected"] for d in body["domains"] for c in d["cookies"]}
    assert rows == {("app.example.test", "sessionid"): True, ("example.test", "_ga"): False}

    other = await clients.call("other", "GET", "/v1/sessions/s1/state-preview")
    assert other.status_code == 404
    broken = await clients.call(
        "creator", "PUT", "/v1/sessions/s1/storage-state", content=b'{"cookies": 3}'
    )
    assert broken.status_code == 400 and broken.json()["error"]["field"]
    assert (await clients.service.parts.seam.records.load_snapshot(WHO.tenant, "s1")) is not None
