"""The versions of saved site data over HTTP (issue #26), through the real app in-process,
no browser: sessions are arranged as the service writes them (memory session store), a
profile's site data through its storage-state import.

Every save keeps the snapshot it replaces; the routes list them newest first (never a
value), show one, show a host of one to who may see values, and restore one, journaled,
keeping the snapshot it replaces. Bad input names its field and changes nothing; Clear,
Forget and deleting the session forget the versions too.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from sitekeep.model import Cookie, OriginStorage, SessionRecord, SiteData
from sitekeep.service import Service
from support import WHO, Api, ApiFactory

pytestmark = pytest.mark.anyio

APP = "http://app.example.test"
IDP = "http://id.example.test"
MASKED = "dummy-masked-e5f1"
BASE = "/v1/sessions/s1/site-data/versions"


def saved(n: int, *, signed_in: bool = True) -> SiteData:
    cookies = [Cookie("idp", f"dummy-idp-{n}", "id.example.test")]
    if signed_in:
        cookies.append(Cookie("sid", f"dummy-sid-{n}", "app.example.test", http_only=True))
        cookies.append(Cookie("theme", f"x{MASKED}x", "app.example.test"))
    return SiteData(
        cookies=tuple(cookies),
        origins={APP: OriginStorage({"token": f"dummy-token-{n}"})},
        saved_at=1_000.0 + n,
    )


@dataclass
class Team:
    """One tenant: ``agent`` owns the sessions, ``bob`` is another member, ``boss`` an
    admin; ``intruder`` is an admin of another tenant."""

    http: httpx.AsyncClient
    service: Service
    headers: dict[str, dict[str, str]]

    async def call(
        self, method: str, path: str, *, who: str = "agent", status: int = 200, **kw: Any
    ) -> Any:
        reply = await self.http.request(method, path, headers=self.headers[who], **kw)
        assert reply.status_code == status, (method, path, who, reply.text)
        return reply.json()

    async def seed(self, key: str, *snapshots: SiteData) -> None:
        """A session of ``agent`` saved once per snapshot, as the service saves."""
        records = self.service.parts.seam.records
        now = time.time()
        record = records.with_mask(
            SessionRecord(WHO.tenant, key, "agent", "chromium", now, now), [MASKED]
        )

        async def body() -> dict[str, Any]:
            await records.load(WHO.tenant, key)
            await records.put(record)
            for snapshot in snapshots:
                await records.put_snapshot(WHO.tenant, key, snapshot)
            return {}

        await self.service.parts.seam.call(WHO, key, lambda _: body(), inspect=False)

    async def state(self, key: str = "s1") -> tuple[SiteData | None, list[tuple[str, SiteData]]]:
        records = self.service.parts.seam.records
        return (
            await records.load_snapshot(WHO.tenant, key),
            await records.versions.load_all(WHO.tenant, key),
        )


@pytest.fixture
async def team(make_api: ApiFactory) -> AsyncIterator[Team]:
    api: Api = await make_api()
    svc = api.service
    bearer = {
        "bob": await svc.catalogue.create_token(WHO.tenant, "bob", "member"),
        "boss": await svc.catalogue.create_token(WHO.tenant, "boss", "admin"),
        "intruder": await svc.catalogue.create_token("t2", "intruder", "admin"),
    }
    headers = {who: {"Authorization": f"Bearer {t}"} for who, t in bearer.items()}
    headers["agent"] = {}  # the client's own token: agent, a member of t1
    yield Team(api.http, svc, headers)


def sids(versions: list[dict[str, Any]]) -> list[float]:
    return [v["saved_at"] for v in versions]


async def test_versions_are_listed_newest_first_with_counts_and_sizes_never_a_value(
    team: Team,
) -> None:
    await team.seed("s1", saved(1), saved(2), saved(3))
    listed = await team.call("GET", BASE, who="bob")  # any member of the tenant
    assert listed["key"] == "s1" and sids(listed["versions"]) == [1_002.0, 1_001.0]
    newest = listed["versions"][0]
    assert newest["kept_at"] > 1_000_000_000 and newest["bytes"] > 100
    assert newest["sign_in"] == {}
    assert [h["site"] for h in newest["hosts"]] == ["app.example.test", "id.example.test"]
    app = newest["hosts"][0]
    assert (app["cookies"], app["local"], app["session"]) == (2, 1, 0)
    assert app["cookie_bytes"] == len("siddummy-sid-2") + len("theme") + len(MASKED) + 2
    assert "dummy" not in json.dumps(listed)
    one = await team.call("GET", f"{BASE}/{newest['id']}", who="bob")
    assert one == {"key": "s1", **newest}
    # A host that happens to be named "versions" never shadows the list, nor the reverse.
    assert (await team.call("GET", "/v1/sessions/s1/site-data"))["key"] == "s1"


async def test_one_host_of_a_version_in_full_only_for_its_owner_or_an_admin_masked(
    team: Team,
) -> None:
    await team.seed("s1", saved(1), saved(2))
    [version] = (await team.call("GET", BASE))["versions"]
    path = f"{BASE}/{version['id']}/hosts/app.example.test"
    for who in ("agent", "boss"):
        view = await team.call("GET", path, who=who)
        cookies = {c["name"]: c["value"] for c in view["cookies"]}
        assert cookies == {"sid": "•••", "theme": "x•••x"}  # httpOnly, and the session's mask
        assert view["local_storage"] == {APP: {"token": "dummy-token-1"}}
        assert view["version"] == version["id"] and view["saved_at"] == 1_001.0
    refused = await team.call("GET", path, who="bob", status=403)
    assert refused["error"]["type"] == "forbidden" and "dummy" not in json.dumps(refused)
    gone = await team.call("GET", f"{BASE}/{version['id']}/hosts/nowhere.test", status=404)
    assert gone["error"]["field"] == "site"


async def test_a_restore_makes_the_version_current_keeps_the_replaced_one_and_is_journaled(
    team: Team,
) -> None:
    await team.seed("s1", saved(1), saved(2, signed_in=False))
    [older] = (await team.call("GET", BASE))["versions"]
    done = await team.call("POST", f"{BASE}/{older['id']}/restore")
    assert done == {
        "key": "s1",
        "restored": {
            "id": older["id"],
            "saved_at": 1_001.0,
            "hosts": ["app.example.test", "id.example.test"],
        },
    }
    current, versions = await team.state()
    assert current == saved(1)
    assert [v.saved_at for _, v in versions] == [1_002.0, 1_001.0]  # the replaced one, kept
    undo = (await team.call("GET", BASE))["versions"][0]
    await team.call("POST", f"{BASE}/{undo['id']}/restore")  # a restore is undone alike
    assert (await team.state())[0] == saved(2, signed_in=False)
    rows = (await team.call("GET", "/admin/sessions/s1/journal", who="boss"))["rows"]
    ops = [r for r in rows if r.get("op") == "restore_site_data_version" and "outcome" in r]
    assert [r["args"] for r in ops] == [{"version": older["id"]}, {"version": undo["id"]}]
    assert all(r["outcome"] == "ok" for r in ops)


async def test_only_the_owner_or_an_admin_restores_and_nothing_changes_otherwise(
    team: Team,
) -> None:
    await team.seed("s1", saved(1), saved(2))
    before = await team.state()
    [version] = (await team.call("GET", BASE))["versions"]
    refused = await team.call("POST", f"{BASE}/{version['id']}/restore", who="bob", status=403)
    assert refused["error"]["type"] == "forbidden"
    assert await team.state() == before
    await team.call("POST", f"{BASE}/{version['id']}/restore", who="boss")
    assert (await team.state())[0] == saved(1)


@pytest.mark.parametrize(
    ("version", "status", "kind"),
    [("v0000000000001-0000", 404, "not_found"), ("nope", 400, "invalid_input")],
)
async def test_an_unknown_or_malformed_version_names_the_field_on_every_route_changing_nothing(
    team: Team, version: str, status: int, kind: str
) -> None:
    await team.seed("s1", saved(1), saved(2))
    before = await team.state()
    for method, tail in (
        ("GET", ""),
        ("GET", "/hosts/app.example.test"),
        ("POST", "/restore"),
    ):
        error = (await team.call(method, f"{BASE}/{version}{tail}", status=status))["error"]
        assert (error["type"], error["field"]) == (kind, "version"), (method, tail)
        assert version not in error["message"] or status == 404
    assert await team.state() == before
    for who, path in (("intruder", BASE), ("agent", "/v1/sessions/nope/site-data/versions")):
        error = (await team.call("GET", path, who=who, status=404))["error"]
        assert error == {"type": "not_found", "message": error["message"], "field": "key"}
    rows = (await team.call("GET", "/admin/sessions/s1/journal", who="boss"))["rows"]
    assert not [r for r in rows if r.get("op") == "restore_site_data_version"]


async def test_clear_and_deleting_the_session_forget_every_version(team: Team) -> None:
    await team.seed("s1", saved(1), saved(2), saved(3))
    await team.seed("s2", saved(1), saved(2))
    cleared = await team.call("DELETE", "/admin/sessions/s1/site-data", who="boss")
    assert cleared["versions"] == 2
    assert await team.state() == (None, [])
    assert (await team.call("GET", BASE))["versions"] == []
    await team.call("DELETE", "/v1/sessions/s2")
    keys = await team.service.parts.stores.sessions.keys("site-data-version/")
    assert keys == []


async def test_forget_removes_the_host_from_every_version_even_one_only_versions_hold(
    team: Team,
) -> None:
    only_idp = SiteData(cookies=(Cookie("idp", "dummy-idp-9", "id.example.test"),))
    await team.seed("s1", saved(1), saved(2), only_idp)
    gone = await team.call("DELETE", "/admin/sessions/s1/site-data/app.example.test", who="boss")
    assert gone["versions"] == 2 and gone["gone"] == {"cookies": 0, "local": 0, "session": 0}
    current, versions = await team.state()
    assert current == only_idp  # a Forget keeps no version
    for _, version in versions:
        assert {c.domain for c in version.cookies} == {"id.example.test"}
        assert version.origins == {}
    listed = (await team.call("GET", BASE))["versions"]
    assert [[h["site"] for h in v["hosts"]] for v in listed] == [["id.example.test"]] * 2
    await team.call(
        "DELETE", "/admin/sessions/s1/site-data/app.example.test", who="boss", status=404
    )


async def _import(team: Team, ident: str, value: str, who: str = "agent") -> None:
    state = {
        "cookies": [
            {
                "name": "sid",
                "value": value,
                "domain": "app.example.test",
                "path": "/",
                "expires": int(time.time()) + 86_400,
                "httpOnly": False,
                "secure": False,
                "sameSite": "Lax",
            }
        ],
        "origins": [],
    }
    path = f"/v1/profiles/{ident}/storage-state"
    await team.call("PUT", path, who=who, content=json.dumps(state).encode())


async def test_a_profile_keeps_versions_that_its_managers_restore_and_members_only_list(
    team: Team,
) -> None:
    body = {"name": "staging", "visibility": "workspace"}
    ident = (await team.call("POST", "/v1/profiles", json=body))["id"]
    for value in ("dummy-p1", "dummy-p2", "dummy-p3"):
        await _import(team, ident, value)
    base = f"/v1/profiles/{ident}/versions"
    listed = await team.call("GET", base, who="bob")  # a member may read a shared one
    assert listed["profile"] == ident and len(listed["versions"]) == 2
    assert "dummy" not in json.dumps(listed)
    older = listed["versions"][-1]
    one = await team.call("GET", f"{base}/{older['id']}", who="bob")
    assert one == {"profile": ident, **older}
    for method, tail in (("GET", "/hosts/app.example.test"), ("POST", "/restore")):
        await team.call(method, f"{base}/{older['id']}{tail}", who="bob", status=403)
    view = await team.call("GET", f"{base}/{older['id']}/hosts/app.example.test")
    assert [c["value"] for c in view["cookies"]] == ["dummy-p1"]
    done = await team.call("POST", f"{base}/{older['id']}/restore")
    assert done["restored"]["id"] == older["id"] and done["profile"]["id"] == ident
    loaded = await team.service.parts.profiles.load(WHO, ident, "use")
    assert [c.value for c in loaded.site_data.cookies] == ["dummy-p1"]
    assert len((await team.call("GET", base))["versions"]) == 3  # the replaced one, kept
    error = (await team.call("POST", f"{base}/nope/restore", status=400))["error"]
    assert error["field"] == "version"
    await team.call("GET", base, who="intruder", status=404)
    await team.call("DELETE", f"/v1/profiles/{ident}")
    assert await team.service.parts.stores.profiles.every_version() == []


async def test_the_openapi_document_says_who_may_restore_and_that_no_browser_starts(
    team: Team,
) -> None:
    doc = (await team.http.get("/openapi.json")).json()["paths"]
    restore = doc["/v1/sessions/{key}/site-data/versions/{version}/restore"]["post"]
    assert {"400", "403", "404"} <= set(restore["responses"])
    assert not {"429", "502"} & set(restore["responses"])
    host = doc["/v1/profiles/{ident}/versions/{version}/hosts/{site}"]["get"]
    assert "403" in host["responses"]
