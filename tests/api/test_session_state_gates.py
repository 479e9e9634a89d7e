"""Who may take a session's values out, and that no typed secret value goes with them
(attacker review M2, M3, M4), through the real app in-process, no browser.

M2: only the session's owner or a tenant admin may export its storage state, replace it,
capture or save it into a profile, or take over its browser; another member gets 403 and
nothing changes. M4: a session opened from a profile holds that profile's sign-ins, so its
values go out only to one who may manage that profile. M3: a secret value typed in the
session that a page copied into a cookie or storage is ``•••`` in the storage-state export
and in the admin's per-host view (which the admin UI's host pane shows).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from fixtures.sites import TYPED_SECRET
from sitekeep.args import SecretBody
from sitekeep.model import Cookie, OriginStorage, SessionRecord, SiteData
from sitekeep.service import Service
from support import WHO, Api, ApiFactory

pytestmark = pytest.mark.anyio

SID = "dummy-gate-sid-7d21"
STATE: dict[str, Any] = {
    "cookies": [
        {
            "name": "sessionid",
            "value": SID,
            "domain": "app.example.test",
            "path": "/",
            "expires": int(time.time()) + 86_400,
            "httpOnly": True,
            "secure": False,
            "sameSite": "Lax",
        }
    ],
    "origins": [],
}


@dataclass
class Team:
    """One tenant: ``ada`` owns the sessions, ``bob`` is another member, ``boss`` an admin."""

    http: httpx.AsyncClient
    service: Service
    headers: dict[str, dict[str, str]]
    tokens: dict[str, str]

    async def call(
        self, who: str, method: str, path: str, body: Any = None, content: bytes | None = None
    ) -> httpx.Response:
        kw: dict[str, Any] = {"content": content} if content is not None else {"json": body}
        return await self.http.request(method, path, headers=self.headers[who], **kw)

    async def seed(self, key: str, owner: str, site_data: SiteData, **fields: Any) -> None:
        """A session of tenant t1 as the service writes one, with a saved snapshot."""
        now = time.time()
        record = replace(SessionRecord(WHO.tenant, key, owner, "chromium", now, now), **fields)
        svc = self.service

        async def body() -> dict[str, Any]:
            await svc.parts.seam.records.load(WHO.tenant, key)
            await svc.parts.seam.records.put(record)
            await svc.parts.seam.records.put_snapshot(WHO.tenant, key, site_data)
            return {}

        await svc.parts.seam.call(WHO, key, lambda _: body(), inspect=False)

    async def profile(self, who: str, visibility: str) -> str:
        created = await self.call(
            who, "POST", "/v1/profiles", {"name": "p", "visibility": visibility}
        )
        assert created.status_code == 200, created.text
        return str(created.json()["id"])


@pytest.fixture
async def team(make_api: ApiFactory) -> AsyncIterator[Team]:
    api: Api = await make_api()
    svc = api.service
    tokens = {
        "ada": await svc.catalogue.create_token(WHO.tenant, "ada", "member"),
        "bob": await svc.catalogue.create_token(WHO.tenant, "bob", "member"),
        "boss": await svc.catalogue.create_token(WHO.tenant, "boss", "admin"),
    }
    headers = {w: {"Authorization": f"Bearer {t}"} for w, t in tokens.items()}
    yield Team(api.http, svc, headers, tokens)


SAVED = SiteData(cookies=(Cookie("sessionid", SID, "app.example.test", http_only=True),))


async def test_another_member_may_not_take_or_replace_a_sessions_values(team: Team) -> None:
    await team.seed("s1", "ada", SAVED)
    mine = await team.profile("bob", "private")
    before = await team.service.parts.seam.records.load_snapshot(WHO.tenant, "s1")
    refused = [
        await team.call("bob", "GET", "/v1/sessions/s1/storage-state"),
        await team.call("bob", "GET", "/v1/sessions/s1/storage-state?format=cookies-txt"),
        await team.call(
            "bob", "PUT", "/v1/sessions/s1/storage-state", content=json.dumps(STATE).encode()
        ),
        await team.call("bob", "POST", f"/v1/profiles/{mine}/capture", {"session": "s1"}),
        await team.call("bob", "POST", "/v1/sessions/s1/save-site-data", {"profile": mine}),
        await team.call("bob", "GET", "/v1/sessions/s1/webdriver"),
        await team.call("bob", "GET", "/v1/sessions/s1/site-data/app.example.test"),
    ]
    for reply in refused:
        assert reply.status_code == 403, (reply.request.url, reply.text)
        assert reply.json()["error"]["type"] == "forbidden"
        assert SID not in reply.text
    assert await team.service.parts.seam.records.load_snapshot(WHO.tenant, "s1") == before
    loaded = await team.service.parts.profiles.load(replace(WHO, subject="bob"), mine, "capture")
    assert not loaded.site_data.cookies
    # The owner and an admin may.
    for who in ("ada", "boss"):
        out = await team.call(who, "GET", "/v1/sessions/s1/storage-state")
        assert out.status_code == 200, out.text
        assert out.json()["cookies"][0]["value"] == SID


async def test_a_session_opened_from_a_profile_gives_its_values_only_to_who_may_manage_it(
    team: Team,
) -> None:
    shared = await team.profile("ada", "workspace")  # bob may use it, not manage it
    await team.seed("s2", "bob", SAVED, profile=shared)
    mine = await team.profile("bob", "private")
    for reply in (
        await team.call("bob", "GET", "/v1/sessions/s2/storage-state"),
        await team.call("bob", "POST", f"/v1/profiles/{mine}/capture", {"session": "s2"}),
        await team.call("bob", "GET", "/v1/sessions/s2/webdriver"),
        await team.call("bob", "GET", "/v1/sessions/s2/site-data/app.example.test"),
    ):
        assert reply.status_code == 403, (reply.request.url, reply.text)
        assert SID not in reply.text
    # bob may still replace his own session's state (no value goes out).
    put = await team.call(
        "bob", "PUT", "/v1/sessions/s2/storage-state", content=json.dumps(STATE).encode()
    )
    assert put.status_code == 200, put.text
    # An admin manages a workspace profile: the export is theirs.
    out = await team.call("boss", "GET", "/v1/sessions/s2/storage-state")
    assert out.status_code == 200 and out.json()["cookies"][0]["value"] == SID


async def test_a_typed_secret_value_copied_into_storage_is_masked_in_every_view(
    team: Team,
) -> None:
    await team.service.catalogue.put_secret(
        replace(WHO, subject="boss", role="admin"),
        "login",
        SecretBody(hosts=["app.example.test"], values={"password": TYPED_SECRET}),
    )
    copied = SiteData(
        cookies=(Cookie("remember", f"u:{TYPED_SECRET}", "app.example.test"),),
        origins={"http://app.example.test:8001": OriginStorage({"pw": TYPED_SECRET})},
    )
    await team.seed("s3", "ada", copied, typed_secrets=(("login", "password"),))
    views = [
        await team.call("ada", "GET", "/v1/sessions/s3/storage-state"),
        await team.call("ada", "GET", "/v1/sessions/s3/storage-state?format=cookies-txt"),
        await team.call("boss", "GET", "/admin/sessions/s3/site-data/app.example.test"),
        await team.call("ada", "GET", "/v1/sessions/s3/site-data/app.example.test"),
    ]
    for reply in views:
        assert reply.status_code == 200, (reply.request.url, reply.text)
        assert TYPED_SECRET not in reply.text and "•••" in reply.text, reply.request.url
    # The admin UI's host pane, signed in as a person would be.
    transport = team.http._transport  # type: ignore[attr-defined]
    async with httpx.AsyncClient(transport=transport, base_url="http://sitekeep.test") as ui:
        signed = await ui.post("/admin/sign-in", data={"token": team.tokens["boss"]})
        assert signed.status_code == 303, signed.text
        pane = await ui.get("/admin/ui/sessions/s3/panes/site-data/app.example.test")
        assert pane.status_code == 200 and "remember" in pane.text
        assert TYPED_SECRET not in pane.text and "•••" in pane.text
    exported = views[0].json()
    assert exported["cookies"][0]["value"] == "u:•••"
    assert exported["origins"][0]["localStorage"] == [{"name": "pw", "value": "•••"}]
