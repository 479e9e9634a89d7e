"""The admin API of SPEC §11 through the real app in-process: every route × admin, member,
other tenant and no token; Forget and the two Clears each leaving the other pane alone.

Sessions are arranged in the real (memory) session store through the service's own
writes — no browser here; ``tests/e2e/test_admin_sessions.py`` makes them with a real one.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from sitekeep.model import (
    Cookie,
    HistoryEntry,
    OriginStorage,
    Principal,
    SessionRecord,
    SessionStorage,
    SiteData,
)
from sitekeep.service import Service
from support import WHO, Api, ApiFactory

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0
APP = "http://app.example.test:8001"
APP_2 = "http://app.example.test:8002"
IDP = "http://id.example.test:8001"
HISTORY = (
    HistoryEntry(APP, f"{APP}/inbox?page=2", NOW - 60),
    HistoryEntry(IDP, f"{IDP}/authorize", NOW - 120),
    HistoryEntry(APP_2, f"{APP_2}/", NOW - 180),
)
SNAPSHOT = SiteData(
    cookies=(
        Cookie("app_session", "dummy-app-session", "app.example.test", http_only=True),
        Cookie("theme", "dummy-theme", "app.example.test"),
        Cookie("pref", "dummy-pref", ".example.test"),
        Cookie("idp_session", "dummy-idp-session", "id.example.test", http_only=True),
        Cookie("ad", "dummy-ad", "ads.cdn.test"),
    ),
    origins={APP: OriginStorage({"token": "dummy-token"}), IDP: OriginStorage({"k": "dummy-k"})},
    session=SessionStorage(APP, {"cart": "dummy-cart"}),
    saved_at=NOW - 30,
)
VALUES = ("dummy-app-session", "dummy-theme", "dummy-pref", "dummy-token", "dummy-cart")

ROUTES = [
    ("GET", "/admin/sessions"),
    ("GET", "/admin/sessions/s1/history"),
    ("DELETE", "/admin/sessions/s1/history"),
    ("GET", "/admin/sessions/s1/site-data"),
    ("DELETE", "/admin/sessions/s1/site-data"),
    ("GET", "/admin/sessions/s1/site-data/app.example.test"),
    ("DELETE", "/admin/sessions/s1/site-data/app.example.test"),
    ("GET", "/admin/sessions/s1/journal"),
]


@dataclass
class Admin:
    """Clients of one app: ``admin``, ``member`` (tenant t1) and ``intruder`` (admin of t2)."""

    http: httpx.AsyncClient
    service: Service
    headers: dict[str, dict[str, str]]

    async def call(
        self, method: str, path: str, *, as_: str = "admin", status: int = 200, **kw: Any
    ) -> Any:
        reply = await self.http.request(method, path, headers=self.headers[as_], **kw)
        assert reply.status_code == status, (method, path, as_, reply.text)
        return reply.json()

    async def state(self, key: str = "s1") -> tuple[SessionRecord | None, SiteData | None]:
        svc = self.service
        return await svc.parts.seam.records.load(
            WHO.tenant, key
        ), await svc.parts.seam.records.load_snapshot(WHO.tenant, key)


async def seed(
    service: Service, key: str, history: Any, snapshot: SiteData | None, used: float = NOW - 60
) -> None:
    """A session of tenant t1 as the service itself writes one."""
    record = SessionRecord(
        tenant=WHO.tenant,
        key=key,
        owner="agent",
        kind="chromium",
        created_at=NOW - 600,
        last_used_at=used,
        history=tuple(history),
    )

    async def body() -> dict[str, Any]:
        await service.parts.seam.records.load(WHO.tenant, key)  # the revision a write goes over
        await service.parts.seam.records.put(record)
        if snapshot is not None:
            await service.parts.seam.records.put_snapshot(WHO.tenant, key, snapshot)
        return {}

    await service.parts.seam.call(WHO, key, lambda _: body(), inspect=False)


@pytest.fixture
async def admin(make_api: ApiFactory) -> AsyncIterator[Admin]:
    api: Api = await make_api()
    bearer = {
        "admin": await api.service.catalogue.create_token(WHO.tenant, "boss", "admin"),
        "member": await api.service.catalogue.create_token(WHO.tenant, "agent", "member"),
        "intruder": await api.service.catalogue.create_token("t2", "intruder", "admin"),
    }
    headers = {who: {"Authorization": f"Bearer {t}"} for who, t in bearer.items()}
    headers["nobody"] = {"Authorization": "Bearer sk_unknown"}
    await seed(api.service, "s1", HISTORY, SNAPSHOT)
    await api.service.parts.vault.put(
        WHO.tenant, "app-login", "staging", ["app.example.test"], {"password": "dummy-pw"}
    )
    yield Admin(api.http, api.service, headers)


async def test_a_member_gets_403_on_every_route_and_nothing_changes(admin: Admin) -> None:
    before = await admin.state()
    for method, path in ROUTES:
        body = await admin.call(method, path, as_="member", status=403)
        assert body["error"]["type"] == "forbidden" and "admin token" in body["error"]["message"]
        # Refused before anything is read: a body that is not even JSON changes nothing.
        await admin.call(method, path, as_="member", status=403, content=b"{not json")
        # And a member learns nothing of which sessions exist.
        await admin.call(method, path.replace("/s1/", "/nope/"), as_="member", status=403)
    assert await admin.state() == before


async def test_no_known_token_gets_401_on_every_route(admin: Admin) -> None:
    for method, path in ROUTES:
        await admin.call(method, path, as_="nobody", status=401)
        bare = httpx.AsyncClient(transport=admin.http._transport, base_url="http://x")
        assert (await bare.request(method, path)).status_code == 401, (method, path)


async def test_another_tenants_session_is_404_on_every_route_and_nothing_changes(
    admin: Admin,
) -> None:
    before = await admin.state()
    for method, path in ROUTES[1:]:
        body = await admin.call(method, path, as_="intruder", status=404)
        assert body["error"] == {
            "type": "not_found",
            "message": "no session named 's1'",
            "field": "key",
        }
    assert await admin.call("GET", "/admin/sessions", as_="intruder") == {"sessions": []}
    assert await admin.state() == before


async def test_an_admin_is_answered_on_every_route_without_a_value_but_in_the_host_view(
    admin: Admin,
) -> None:
    for method, path in ROUTES:
        await seed(admin.service, "s1", HISTORY, SNAPSHOT)
        reply = await admin.http.request(method, path, headers=admin.headers["admin"])
        assert reply.status_code == 200, (method, path, reply.text)
        shown = [v for v in (*VALUES, "dummy-pw") if v in reply.text]
        per_host_view = method == "GET" and path.endswith("/app.example.test")
        assert shown == (
            ["dummy-theme", "dummy-pref", "dummy-token", "dummy-cart"] if per_host_view else []
        ), path


async def test_the_sessions_rows_carry_counts_and_both_revisions(admin: Admin) -> None:
    await seed(admin.service, "s0", (), None, used=NOW - 3600)
    await seed(admin.service, "s2", (), None, used=NOW)
    rows = (await admin.call("GET", "/admin/sessions"))["sessions"]
    assert [r["key"] for r in rows] == ["s2", "s1", "s0"]  # most recently used first
    assert rows[0]["history_rev"] == [] and rows[0]["site_data_rev"] == [None, []]
    s1 = rows[1]
    assert s1["history_count"] == 2  # hosts: the second port of app is no row of its own
    assert s1["history_rev"] == [[e.origin, e.url] for e in HISTORY]
    assert s1["site_data_count"] == 3
    assert s1["site_data_rev"] == [
        NOW - 30,
        ["ads.cdn.test", "app.example.test", "id.example.test"],
    ]
    assert s1["url"] == f"{APP}/inbox?page=2" and s1["owner"] == "agent"


async def test_history_joins_secrets_and_snapshot_counts_by_host(admin: Admin) -> None:
    body = await admin.call("GET", "/admin/sessions/s1/history")
    app, idp = body["rows"]
    assert app["host"] == "app.example.test" and app["origins"] == [APP, APP_2]
    assert app["secrets"] == [{"name": "app-login", "description": "staging", "keys": ["password"]}]
    assert app["site_data"] == {"cookies": 3, "shared_cookies": 1, "local": 1, "session": 1}
    assert idp["secrets"] == []
    assert body["clears"] == [IDP, APP_2] and body["stays"] == APP


async def test_clear_history_keeps_the_top_entry_and_leaves_site_data_alone(admin: Admin) -> None:
    site_rev = (await admin.call("GET", "/admin/sessions/s1/site-data"))["site_data_rev"]
    answer = await admin.call("DELETE", "/admin/sessions/s1/history")
    assert answer == {"key": "s1", "gone": [IDP, APP_2], "kept": [APP]}
    record, snapshot = await admin.state()
    assert record is not None and record.history == HISTORY[:1]
    assert snapshot == SNAPSHOT
    assert (await admin.call("GET", "/admin/sessions/s1/site-data"))["site_data_rev"] == site_rev
    again = await admin.call("DELETE", "/admin/sessions/s1/history")
    assert again == {"key": "s1", "gone": [], "kept": [APP]}


async def test_forget_drops_a_hosts_storage_and_own_cookies_and_nothing_else(admin: Admin) -> None:
    answer = await admin.call("DELETE", "/admin/sessions/s1/site-data/APP.example.test")
    assert answer == {
        "key": "s1",
        "site": "app.example.test",
        "gone": {"cookies": 2, "local": 1, "session": 1},
        "hosts": ["id.example.test", "ads.cdn.test"],
        "versions": 0,
    }
    record, snapshot = await admin.state()
    assert record is not None and record.history == HISTORY  # never the history
    assert snapshot is not None and snapshot.saved_at == SNAPSHOT.saved_at  # not a save
    assert {c.name for c in snapshot.cookies} == {"pref", "idp_session", "ad"}
    assert set(snapshot.origins) == {IDP} and snapshot.session is None
    await admin.call("GET", "/admin/sessions/s1/site-data/app.example.test", status=404)
    await admin.call("DELETE", "/admin/sessions/s1/site-data/app.example.test", status=404)
    await admin.call("DELETE", "/admin/sessions/s1/site-data/nowhere.test", status=404)


async def test_clear_site_data_deletes_the_snapshot_and_leaves_the_history(admin: Admin) -> None:
    history = await admin.call("GET", "/admin/sessions/s1/history")
    answer = await admin.call("DELETE", "/admin/sessions/s1/site-data")
    assert answer == {
        "key": "s1",
        "gone": ["app.example.test", "id.example.test", "ads.cdn.test"],
        "versions": 0,
    }
    record, snapshot = await admin.state()
    assert snapshot is None and record is not None and record.history == HISTORY
    empty = await admin.call("GET", "/admin/sessions/s1/site-data")
    assert empty == {"key": "s1", "saved_at": None, "hosts": [], "site_data_rev": [None, []]}
    after = await admin.call("GET", "/admin/sessions/s1/history")
    assert after["history_rev"] == history["history_rev"]
    assert all(r["site_data"] is None for r in after["rows"])  # the pills follow the snapshot


async def test_the_per_host_view_masks_httponly_values_and_marks_shared_cookies(
    admin: Admin,
) -> None:
    view = await admin.call("GET", "/admin/sessions/s1/site-data/app.example.test")
    cookies = {c["name"]: c for c in view["cookies"]}
    assert cookies["app_session"]["value"] == "•••"
    assert cookies["theme"]["value"] == "dummy-theme" and not cookies["theme"]["shared"]
    assert cookies["pref"]["shared"] is True
    assert view["local_storage"] == {APP: {"token": "dummy-token"}}
    assert view["session_storage"] == {APP: {"cart": "dummy-cart"}}


async def test_admin_routes_are_in_the_openapi_document(admin: Admin) -> None:
    paths = (await admin.call("GET", "/openapi.json"))["paths"]
    assert set(paths["/admin/sessions/{key}/site-data/{site}"]) == {"get", "delete"}
    assert set(paths["/admin/sessions/{key}/history"]) == {"get", "delete"}


async def test_the_gate_is_the_services_own(admin: Admin) -> None:
    member = Principal(WHO.tenant, "agent", "member")
    with pytest.raises(Exception) as raised:
        await admin.service.admin.clear_site_data(member, "s1")
    assert type(raised.value).__name__ == "Forbidden"
    assert (await admin.state())[1] == SNAPSHOT


# -- tokens -------------------------------------------------------------------------------


async def test_tokens_list_by_id_never_the_token_and_a_revoke_ends_it(admin: Admin) -> None:
    listed = (await admin.call("GET", "/admin/tokens"))["tokens"]
    bearer = admin.headers["member"]["Authorization"].removeprefix("Bearer ")
    member_id = hashlib.sha256(bearer.encode()).hexdigest()[:16]
    by_id = {t["id"]: t for t in listed}
    assert {(t["subject"], t["role"]) for t in listed} == {("boss", "admin"), ("agent", "member")}
    assert all(t["tenant"] == WHO.tenant for t in listed)
    assert by_id[member_id]["subject"] == "agent" and set(by_id[member_id]) == {
        "id",
        "tenant",
        "subject",
        "role",
        "created_at",
    }
    everything = str(listed)
    for token in (h["Authorization"].removeprefix("Bearer ") for h in admin.headers.values()):
        assert (
            token not in everything and hashlib.sha256(token.encode()).hexdigest() not in everything
        )
    await admin.call("GET", "/v1/sessions/s1", as_="member", status=200)

    revoked = await admin.call("DELETE", f"/admin/tokens/{member_id}")
    assert revoked["revoked"]["id"] == member_id
    await admin.call("GET", "/v1/sessions/s1", as_="member", status=401)
    await admin.call("DELETE", f"/admin/tokens/{member_id}", status=404)
    left = {t["id"] for t in (await admin.call("GET", "/admin/tokens"))["tokens"]}
    assert left == set(by_id) - {member_id}


async def test_tokens_are_the_tenants_own_and_admins_only(admin: Admin) -> None:
    boss = admin.headers["admin"]["Authorization"].removeprefix("Bearer ")
    boss_id = hashlib.sha256(boss.encode()).hexdigest()[:16]
    listed = (await admin.call("GET", "/admin/tokens", as_="intruder"))["tokens"]
    assert [t["subject"] for t in listed] == ["intruder"]
    await admin.call("DELETE", f"/admin/tokens/{boss_id}", as_="intruder", status=404)
    await admin.call("GET", "/admin/tokens", as_="member", status=403)
    await admin.call("DELETE", f"/admin/tokens/{boss_id}", as_="member", status=403)
    bad = await admin.call("DELETE", "/admin/tokens/NOT-AN-ID", status=400)
    assert bad["error"]["field"] == "id"
    await admin.call("GET", "/admin/tokens", status=200)  # nothing of it changed
