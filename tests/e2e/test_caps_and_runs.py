"""Caps, the run ledger and the reaper (SPEC §13; issue #10 items 4 and 5), with real
browsers through the real app and service.

Caps count live browsers over every replica (the ledger, ``tests/contracts`` proves the
counting under races); a refused open starts no browser. The reaper ends browsers idle past
``browser_idle`` and those of expired sessions or of calls that died, whichever replica
opened them; the browser goes before the ledger row, and a failing ledger never blocks a close.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner, Result

from fixtures.sites import Sites
from sitekeep.args import OpenBody
from sitekeep.browser.webdriver import delete_session
from sitekeep.cli import app
from sitekeep.config import Settings
from sitekeep.journal import JournalKey
from sitekeep.model import Principal
from sitekeep.service import Service
from support import WHO, Api, ApiFactory, gone

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.parametrize("browser", ["chromium"]),  # browser-agnostic bookkeeping
]


def chromium_children() -> int:
    """How many Chromium main processes run now (a refused open must add none)."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if Path(argv[0].decode(errors="replace")).name == "chromium" and not any(
            a.startswith(b"--type=") for a in argv
        ):
            count += 1
    return count


async def as_other(api: Api, tenant: str, role: str = "member") -> httpx.AsyncClient:
    token = await api.service.catalogue.create_token(tenant, "someone", role)  # type: ignore[arg-type]
    return httpx.AsyncClient(
        transport=api.http._transport,
        base_url="http://sitekeep.test",
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )


async def test_caps_refuse_new_browsers_with_429_before_any_starts(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(max_sessions_per_tenant=2, max_sessions=3)
    home = sites.url("app.example.test")
    await api.open(key="s1", url=home)
    await api.open(key="s2", url=home)
    before = chromium_children()
    refused = await api.http.post("/v1/sessions", json={"key": "s3", "url": home})
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["type"], error["scope"], error["cap"]) == ("capacity_exceeded", "tenant", 2)
    assert chromium_children() == before
    missing = await api.http.get("/v1/sessions/s3")
    assert missing.status_code == 404  # nothing half-made

    # Re-opening one's own session never trips the cap: kept, or replaced by a fresh one.
    assert (await api.open(key="s1"))["key"] == "s1"
    assert (await api.open(key="s2", fresh=True, url=home))["title"] == "App — signed out"

    other = await as_other(api, "t2")
    async with other:
        assert (await other.post("/v1/sessions", json={"key": "x1"})).status_code == 200
        three = chromium_children()
        full = await other.post("/v1/sessions", json={"key": "x2"})
        assert full.status_code == 429 and full.json()["error"]["scope"] == "global"
        assert chromium_children() == three
        await api.close("s2")
        assert (await other.post("/v1/sessions", json={"key": "x2"})).status_code == 200


async def test_admin_runs_lists_the_tenants_live_browsers_to_admins_only(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api()
    opened = await api.open(key="r1", url=sites.url("app.example.test"))
    live = await api.browser("r1")
    member = await api.http.get("/admin/runs")
    assert member.status_code == 403 and member.json()["error"]["type"] == "forbidden"
    bad_member = await api.http.get("/admin/runs?limit=0")
    assert bad_member.status_code == 403  # refused before its query is read
    admin, intruder = await as_other(api, "t1", "admin"), await as_other(api, "t2", "admin")
    async with admin, intruder:
        listed = await admin.get("/admin/runs")
        [run] = listed.json()["runs"]
        assert (run["tenant"], run["session"], run["browser"]) == ("t1", opened["key"], "chromium")
        # No driver address nor driver session id reaches a client, an admin neither: the
        # driver serves every tenant's browsers (SPEC §21). The operator's CLI shows them.
        for raw in (live.ref.session_id, urlsplit(live.ref.endpoint).netloc):
            assert raw not in listed.text
        [mine] = await api.service.admin.runs(None, addresses=True)
        assert mine["where"] == {"endpoint": live.ref.endpoint, "session_id": live.ref.session_id}
        assert run["closed_at"] is None and run["replica"]
        assert (await intruder.get("/admin/runs")).json()["runs"] == []
        await api.close("r1")
        assert (await admin.get("/admin/runs")).json()["runs"] == []
        [closed] = (await admin.get("/admin/runs?open=false")).json()["runs"]
        assert closed["closed_reason"] == "closed" and closed["closed_at"] >= run["opened_at"]
        bad = await admin.get("/admin/runs?limit=5000")
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "limit"


class Replicas:
    """Services on one data dir (its SQLite stores) and one clock: replicas, as the reaper
    sees them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings.model_copy(update={"session_store": None, "browser_idle": 60.0})
        self.now = time.time()
        self.opened: list[Service] = []

    def clock(self) -> float:
        return self.now

    def make(self) -> Service:
        service = Service.from_settings(self.settings, clock=self.clock)
        self.opened.append(service)
        return service


@pytest.fixture
async def replicas(settings: Settings) -> AsyncIterator[Replicas]:
    made = Replicas(settings)
    yield made
    for service in made.opened:
        await service.parts.browsers.close_all()
        await service.aclose()


async def test_the_reaper_ends_idle_browsers_another_replica_opened(
    replicas: Replicas, sites: Sites
) -> None:
    a, b = replicas.make(), replicas.make()
    who = Principal("t1", "agent")
    await a.sessions.open(who, OpenBody(key="idle", url=sites.url("tabs.example.test", "/add")))
    await a.sessions.open(who, OpenBody(key="busy", url=sites.url("tabs.example.test")))
    ref = (await a.views.record(who, "idle")).browser
    assert ref is not None
    assert await b.reaper.reap() == {}  # nothing idle yet
    replicas.now += 61
    async with b.parts.seam.records.held("t1", "busy"):  # a call of another replica is using it
        assert await b.reaper.reap() == {"reaped": 1}
    assert await gone(ref)
    assert (await a.views.record(who, "idle")).browser is None
    runs = await a.admin.runs(None, open_only=False)
    assert {(r["session"], r["closed_reason"]) for r in runs} == {
        ("idle", "reaped"),
        ("busy", None),
    }
    # The next call reopens it silently in a new browser.
    again = await a.sessions.navigate(who, "idle", sites.url("tabs.example.test"))
    assert again["title"].startswith("Tabs")
    reopened = (await a.views.record(who, "idle")).browser
    assert reopened is not None and reopened.session_id != ref.session_id


async def test_the_reaper_ends_expired_sessions_and_browsers_no_session_owns(
    replicas: Replicas, sites: Sites
) -> None:
    a, b = replicas.make(), replicas.make()
    who = Principal("t1", "agent")
    await a.sessions.open(who, OpenBody(key="old", url=sites.url("app.example.test")))
    old = (await a.views.record(who, "old")).browser
    record = await a.views.record(who, "old")
    async with a.parts.seam.records.held(
        "t1", "gone"
    ):  # a session deleted meanwhile had this browser
        orphan, _, _ = await a.parts.seam.browsers.new_browser(
            replace(record, key="gone", browser=None), land=None, restore_data=False
        )
    assert await a.parts.journal.backend.head(JournalKey("t1", "old")) is not None
    replicas.now += a.parts.settings.session_ttl + 1
    assert await b.reaper.reap() == {"expired": 2}
    assert await a.parts.journal.backend.head(JournalKey("t1", "old")) is None  # gone with it
    assert old is not None
    for ref in (old, orphan.ref):
        assert await gone(ref)


async def test_a_browser_no_session_owns_is_reaped_and_a_crash_is_recorded(
    replicas: Replicas, sites: Sites
) -> None:
    a = replicas.make()
    who = Principal("t1", "agent")
    await a.sessions.open(who, OpenBody(key="k", url=sites.url("app.example.test")))
    first = (await a.views.record(who, "k")).browser
    assert first is not None
    await delete_session(first.endpoint, first.session_id)  # the browser died under us
    deadline = time.monotonic() + 30
    while await a.views.live_browser(who, "k") is not None:  # until its socket is seen closed
        assert time.monotonic() < deadline, "the dead browser still looks alive"
        await anyio.sleep(0.05)
    await a.sessions.navigate(
        who, "k", sites.url("app.example.test", "/login")
    )  # reopened silently
    record = await a.views.record(who, "k")
    async with a.parts.seam.records.held("t1", "k"):  # an open that died after starting its browser
        stray, _, _ = await a.parts.seam.browsers.new_browser(record, land=None, restore_data=False)
    assert await a.reaper.reap() == {"reaped": 1}
    assert await gone(stray.ref)
    reasons = sorted(
        r["closed_reason"] or "open" for r in await a.admin.runs(None, open_only=False)
    )
    assert reasons == ["crashed", "open", "reaped"]


async def test_a_failing_ledger_never_blocks_a_close(replicas: Replicas, sites: Sites) -> None:
    a = replicas.make()
    who = Principal("t1", "agent")
    await a.sessions.open(who, OpenBody(key="k", url=sites.url("app.example.test")))
    ref = (await a.views.record(who, "k")).browser
    assert ref is not None
    with a.parts.stores.database.engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE runs RENAME TO runs_gone"))  # the ledger breaks
    try:
        closed = await a.sessions.close(who, "k")  # it saved by itself first (SPEC §18)
        assert (closed["key"], closed["closed"], closed["autosave"]["reason"]) == (
            "k",
            True,
            "close",
        )
        assert await gone(ref)
    finally:
        with a.parts.stores.database.engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE runs_gone RENAME TO runs"))


async def cli(*args: str) -> Result:
    """The CLI, in a thread of its own (it runs its own event loop)."""
    return await anyio.to_thread.run_sync(lambda: CliRunner().invoke(app, list(args)))


async def test_sitekeep_runs_lists_every_tenant_and_reaps_on_request(
    make_api: ApiFactory, sites: Sites, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    api: Api = await make_api(session_store=None)  # the data dir's stores, as the CLI's
    await api.open(key="cli", url=sites.url("app.example.test"))
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(settings.data_dir))
    if settings.webdriver_url:
        monkeypatch.setenv("SITEKEEP_WEBDRIVER_URL", settings.webdriver_url)
    else:  # the mapper engine: the CLI's manager must own its browsers to end them
        monkeypatch.setenv("SITEKEEP_CHROMIUM_BIDI", settings.chromium_bidi)
    listed = await cli("runs", "--reap")
    assert listed.exit_code == 0, listed.output
    assert "reaper: nothing" in listed.output
    assert "cli" in listed.output and WHO.tenant in listed.output
    monkeypatch.setenv("SITEKEEP_BROWSER_IDLE", "0.000001")
    reaped = await cli("runs", "--reap", "--all")
    assert reaped.exit_code == 0, reaped.output
    assert "reaper: 1 reaped" in reaped.output
    assert (await api.call("GET", "/v1/sessions/cli"))["browser"]["live"] is False
