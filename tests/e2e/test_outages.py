"""Redis or PostgreSQL stopped → 503 with nothing half-written; started again → calls work
without restarting sitekeep (SPEC §17; issue #10 item 7).

The servers stopped here are this test's own (:class:`PrivateRedis`, :class:`PrivatePostgres`
on free loopback ports): never the shared ones other runs use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fixtures.databases import PrivatePostgres, PrivateRedis
from fixtures.sites import Sites
from support import Api, ApiFactory

from .test_caps_and_runs import as_other, chromium_children

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.parametrize("browser", ["chromium"]),  # store faults, not browser ones
]

SECRET = {"hosts": ["app.example.test"], "values": {"password": "dummy-outage-pass"}}


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[tuple[PrivateRedis, PrivatePostgres]]:
    redis, postgres = PrivateRedis(tmp_path / "redis"), PrivatePostgres()
    redis.start()
    try:
        postgres.init()
        postgres.start()
        yield redis, postgres
    finally:
        redis.stop()
        postgres.remove()


async def test_redis_stopped_is_503_nothing_half_written_and_it_recovers(
    make_api: ApiFactory, sites: Sites, servers: tuple[PrivateRedis, PrivatePostgres]
) -> None:
    redis, postgres = servers
    api: Api = await make_api(session_store=redis.url, database_url=postgres.url)
    await api.open(key="k", url=sites.url("app.example.test", "/login"))
    await api.save("k")
    saved = await api.snapshot("k")
    browsers = chromium_children()

    redis.stop()
    for method, path, body in (
        ("GET", "/v1/sessions/k", None),
        ("POST", "/v1/sessions/k/navigate", {"url": sites.url("tabs.example.test")}),
        ("POST", "/v1/sessions/k/save-site-data", None),
        ("POST", "/v1/sessions", {"key": "new", "url": sites.url("app.example.test")}),
        ("DELETE", "/v1/sessions/k", None),
    ):
        reply = await api.http.request(method, path, json=body)
        assert reply.status_code == 503, (path, reply.text)
        assert reply.json()["error"]["type"] == "store_unavailable"
    assert chromium_children() == browsers  # the refused open started none

    redis.start()  # the same sitekeep, not restarted
    assert await api.snapshot("k") == saved  # whole, untouched
    assert (await api.http.get("/v1/sessions/new")).status_code == 404
    page = await api.go("k", sites.url("app.example.test"))
    assert page["title"] == "App — signed in as alice"
    assert (await api.save("k"))["saved"]["cookies"] >= 1


async def test_postgresql_stopped_is_503_nothing_half_written_and_it_recovers(
    make_api: ApiFactory, sites: Sites, servers: tuple[PrivateRedis, PrivatePostgres]
) -> None:
    redis, postgres = servers
    api: Api = await make_api(session_store=redis.url, database_url=postgres.url)
    await api.open(key="k", url=sites.url("app.example.test"))
    admin = await as_other(api, "t1", "admin")
    async with admin:
        assert (await admin.put("/v1/secrets/login", json=SECRET)).status_code == 200
        browsers = chromium_children()

        postgres.stop()
        opened = await api.http.post("/v1/sessions", json={"key": "new"})
        assert opened.status_code == 503, opened.text  # the ledger could not reserve a run
        assert chromium_children() == browsers
        changed = await admin.put("/v1/secrets/login", json={**SECRET, "hosts": ["x.example.test"]})
        assert changed.status_code == 503
        assert changed.json()["error"]["type"] == "store_unavailable"
        # What needs only Redis (and a token already checked) still works.
        assert (await api.call("GET", "/v1/sessions/k"))["browser"]["live"] is True

        postgres.start()  # the same sitekeep, not restarted
        assert (await api.http.get("/v1/sessions/new")).status_code == 404  # nothing half-made
        assert (await api.open(key="new", url=sites.url("app.example.test")))["key"] == "new"
        [secret] = (await admin.get("/v1/secrets")).json()["secrets"]
        assert secret["hosts"] == ["app.example.test"]  # the refused change left it whole
        assert (await admin.put("/v1/secrets/login", json=SECRET)).status_code == 200
        runs = (await admin.get("/admin/runs")).json()["runs"]
        assert sorted(r["session"] for r in runs) == ["k", "new"]
