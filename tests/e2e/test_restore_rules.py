"""SPEC §3 restore rules on real Chromium: forget, fresh, insecure, silent reopen, expiry."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from fixtures.sites import Sites
from sitekeep.args import OpenBody, SaveBody
from sitekeep.browser.webdriver import delete_session
from sitekeep.config import Settings
from sitekeep.model import Principal
from sitekeep.service import Service
from sitekeep.service.sessions import INSECURE_HINT
from support import WHO, Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def signed_in_and_saved(api: Api, sites: Sites, key: str) -> None:
    await api.open(key=key)
    await api.go(key, sites.url("app.example.test", "/login"))
    await api.go(key, sites.url("token.example.test", "/login"))
    await api.go(key, sites.url("token.example.test"))  # a last page that changes nothing
    await api.save(key)


async def test_restore_false_forgets_the_snapshot_but_keeps_the_history(
    api: Api, sites: Sites
) -> None:
    await signed_in_and_saved(api, sites, "f")
    await api.close("f")
    opened = await api.open(key="f", restore_site_data=False)
    assert opened["site_data"] == {"forgotten": 3}  # app, id and token hosts
    assert opened["title"] == "Token — signed out"  # back on the last page, signed out
    record = await api.service.views.record(WHO, "f")
    assert [e.origin.split("//")[1].split(":")[0] for e in record.history] == [
        "token.example.test",
        "app.example.test",
    ]
    assert (await api.call("GET", "/v1/sessions/f/site-data"))["hosts"] == []
    await api.close("f")
    again = await api.open(key="f")
    assert "site_data" not in again
    assert (await api.go("f", sites.url("app.example.test")))["title"] == "App — signed out"


async def test_fresh_opens_a_new_browser_that_still_gets_the_snapshot(
    api: Api, sites: Sites
) -> None:
    await signed_in_and_saved(api, sites, "n")
    before = (await api.browser("n")).ref.generation
    opened = await api.open(key="n", fresh=True, url=sites.url("app.example.test"))
    assert (await api.browser("n")).ref.generation != before
    assert opened["title"] == "App — signed in as alice"
    assert "app.example.test" in opened["site_data"]["restored"]


async def test_insecure_restores_nothing_and_deletes_nothing(api: Api, sites: Sites) -> None:
    await signed_in_and_saved(api, sites, "i")
    await api.close("i")
    opened = await api.open(key="i", insecure=True, url=sites.url("app.example.test"))
    assert opened["hint"] == INSECURE_HINT
    assert "site_data" not in opened
    assert opened["title"] == "App — signed out"
    again = await api.open(key="i", url=sites.url("app.example.test"))  # a secure browser
    assert again["title"] == "App — signed in as alice"
    assert "app.example.test" in again["site_data"]["restored"]


async def test_restore_false_with_insecure_still_deletes(api: Api, sites: Sites) -> None:
    await signed_in_and_saved(api, sites, "x")
    opened = await api.open(key="x", insecure=True, restore_site_data=False)
    assert opened["site_data"] == {"forgotten": 3}
    assert (await api.call("GET", "/v1/sessions/x/site-data"))["hosts"] == []


async def test_silent_reopen_after_the_browser_died_reports_once(api: Api, sites: Sites) -> None:
    await signed_in_and_saved(api, sites, "r")
    await api.go("r", sites.url("tabs.example.test"))
    live = await api.browser("r")
    ref = live.ref
    await delete_session(ref.endpoint, ref.session_id)  # reaped behind sitekeep's back
    deadline = time.monotonic() + 10
    while not live.conn.closed:  # the next call comes after the death is known
        assert time.monotonic() < deadline
        await anyio.sleep(0.01)

    page = await api.go("r", sites.url("app.example.test"))
    assert page["title"] == "App — signed in as alice"
    assert "app.example.test" in page["site_data"]["restored"]
    assert page["site_data"]["uri"] == "sitekeep://sessions/r/site-data"
    assert (await api.browser("r")).ref.generation != ref.generation
    later = await api.go("r", sites.url("token.example.test"))
    assert later["title"] == "Token — signed in as bob"
    assert "site_data" not in later


async def test_an_open_on_a_live_browser_keeps_it(api: Api, sites: Sites) -> None:
    await api.open(key="l")
    await api.go("l", sites.url("tabs.example.test", "/add"))
    generation = (await api.browser("l")).ref.generation
    again = await api.open(key="l", url=sites.url("tabs.example.test"))
    assert again["title"] == "Tabs — cart 1"  # same tab, its sessionStorage is still there
    assert (await api.browser("l")).ref.generation == generation
    assert "site_data" not in again


async def test_expired_cookies_are_not_restored(
    settings: Settings, sites: Sites, tmp_path: Path
) -> None:
    now = [time.time()]
    service = Service.from_settings(settings, clock=lambda: now[0])
    who = Principal("t1", "agent")
    try:
        await service.sessions.open(who, OpenBody(key="e"))
        soon = sites.url("app.example.test", "/__fixture/cookie?name=short&value=dummy&attrs=")
        await service.sessions.navigate(who, "e", soon + "Path=/;%20Max-Age=600")
        await service.sessions.navigate(who, "e", sites.url("app.example.test", "/login"))
        await service.sessions.save_site_data(who, "e", SaveBody())
        await service.sessions.close(who, "e")
        now[0] += 3600  # an hour later the 10-minute cookie is stale; the session one is not
        opened = await service.sessions.open(
            who, OpenBody(key="e", url=sites.url("app.example.test"))
        )
        assert opened["title"] == "App — signed in as alice"
        live = await service.views.live_browser(who, "e")
        assert live is not None
        names = {c["name"] for c in (await live.conn.send("storage.getCookies", {}))["cookies"]}
        assert "app_session" in names and "short" not in names
    finally:
        await service.parts.browsers.close_all()
        await service.aclose()
