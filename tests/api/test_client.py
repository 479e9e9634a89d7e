"""The Python client (issue #14 item 2): ``sitekeep.Client`` against a live ``sitekeep
serve``, ``sitekeep.AsyncClient`` against the real app in process; errors come back as
the server's own exception classes."""

from __future__ import annotations

import httpx
import pytest

import sitekeep
from conftest import on_mapper
from fixtures.serve import free_port
from fixtures.sites import Sites
from sitekeep import AsyncClient, Client
from sitekeep.errors import Forbidden, InvalidInput, NoHistoryEntry, NotFound, Unreachable
from sitekeep.model import SiteData
from support import WHO, Api

from .conftest import Served

SIGNED_IN = "App — signed in as alice"


def test_the_client_signs_in_saves_and_comes_back_signed_in(served: Served, sites: Sites) -> None:
    with Client(served.url, served.token) as client:
        demo = client.session("client-demo")
        assert demo.open(url=sites.url("app.example.test", "/login"))["title"] == SIGNED_IN
        saved = demo.save_site_data()
        assert saved["url"] == sites.url("app.example.test", "/")
        assert "app.example.test" in {row["site"] for row in demo.site_data()["hosts"]}
        demo.close_browser()
        again = demo.open()
        assert again["title"] == SIGNED_IN and again["site_data"]["restored"]
        snapshot = demo.snapshot()
        assert any(item.get("name") == SIGNED_IN for item in snapshot["elements"])
        assert SIGNED_IN in demo.read()["text"]
        listed = {row["key"]: row for row in client.sessions()["sessions"]}
        assert listed["client-demo"]["browser"] == {"kind": "chromium", "live": True}
        demo.delete()
        assert "client-demo" not in {row["key"] for row in client.sessions()["sessions"]}


def test_client_errors_are_the_servers_exception_classes(served: Served) -> None:
    with Client(served.url, served.token) as client:
        with pytest.raises(NotFound) as missing:
            client.session("no-such-session").current()
        assert missing.value.message == "no session named 'no-such-session'"
        assert missing.value.field == "key"
        with pytest.raises(InvalidInput) as bad:
            client.session("x").open(url="file:///etc/passwd")
        assert bad.value.field == "url"


def test_a_server_that_does_not_answer_is_unreachable() -> None:
    with (
        Client(f"http://127.0.0.1:{free_port()}", "sk_x", timeout=5) as client,
        pytest.raises(Unreachable),
    ):
        client.sessions()


@pytest.mark.anyio
async def test_the_async_client_mirrors_the_sync_one(api: Api, sites: Sites) -> None:
    token = api.http.headers["authorization"].removeprefix("Bearer ")
    transport = api.http._transport
    async with AsyncClient("http://sitekeep.test", token, transport=transport) as client:
        fresh = client.session()
        opened = await fresh.open(url=sites.url("app.example.test", "/login"))
        assert fresh.key == opened["key"] and opened["title"] == SIGNED_IN
        with pytest.raises(NoHistoryEntry):
            await fresh.forward()
        assert (await fresh.navigate(sites.url("id.example.test", "/")))["title"] == "IdP — known"
        assert (await fresh.back())["title"] == SIGNED_IN
        listed = await client.sessions()
        assert [row["key"] for row in listed["sessions"]] == [fresh.key]
        assert (await client.info())["version"] == sitekeep.__version__


@pytest.mark.anyio
@pytest.mark.skipif(
    on_mapper(),
    reason="drives the browser through WebDriver classic, which the mapper engine does not "
    "serve (its refusal: test_mapper_engine.py "
    "test_the_mapper_port_is_refused_and_hands_out_no_webdriver)",
)
async def test_webdriver_hands_the_browser_to_its_owner_only(api: Api, sites: Sites) -> None:
    token = api.http.headers["authorization"].removeprefix("Bearer ")
    other = await api.service.catalogue.create_token("t1", "someone-else", "member")
    transport = api.http._transport
    async with (
        AsyncClient("http://sitekeep.test", token, transport=transport) as owner,
        AsyncClient("http://sitekeep.test", other, transport=transport) as stranger,
    ):
        mine = owner.session("wd")
        await mine.open(url=sites.url("app.example.test", "/"))
        where = await mine.webdriver()
        record = await api.service.views.record(WHO, "wd")
        assert record.browser is not None
        # Endpoints of sitekeep's own (SPEC §21), never the driver's address or session id.
        assert where["session_id"] != record.browser.session_id
        assert where["webdriver_url"].startswith("http://sitekeep.test/v1/webdriver/wd_")
        assert where["bidi_url"].startswith("ws://sitekeep.test/v1/webdriver/wd_")
        assert record.browser.endpoint not in str(where)
        classic = f"{where['webdriver_url']}/session/{where['session_id']}/title"
        async with httpx.AsyncClient(transport=transport) as http:  # W3C WebDriver Get Title
            assert (await http.get(classic)).json()["value"] == "App — signed out"
        with pytest.raises(Forbidden):
            await stranger.session("wd").webdriver()
        await mine.close_browser()
        with pytest.raises(sitekeep.errors.Conflict):
            await mine.webdriver()


def test_the_client_lists_shows_and_restores_a_sessions_versions(served: Served) -> None:
    with Client(served.url, served.token) as client:
        mine = client.session("client-versions")
        mine.open()
        first = mine.save_site_data()
        mine.save_site_data()
        [version] = mine.versions()["versions"]
        assert mine.version(version["id"]) == {"key": "client-versions", **version}
        restored = mine.restore_version(version["id"])
        assert restored["restored"]["id"] == version["id"] and "hint" in restored
        assert len(mine.versions()["versions"]) == 2
        with pytest.raises(InvalidInput) as bad:
            mine.restore_version("v1-nope")
        assert bad.value.field == "version"
        assert first["saved"]["cookies"] == 0
        mine.delete()


@pytest.mark.anyio
async def test_the_async_client_reaches_a_profiles_versions(api: Api) -> None:
    token = api.http.headers["authorization"].removeprefix("Bearer ")
    transport = api.http._transport
    profiles = api.service.parts.profiles
    row = await profiles.create(WHO, "staging")
    for n in (1, 2):
        await profiles.write(WHO, row.id, SiteData(saved_at=float(n)))
    async with AsyncClient("http://sitekeep.test", token, transport=transport) as client:
        handle = client.profile(row.id)
        [version] = (await handle.versions())["versions"]
        assert version["saved_at"] == 1.0
        assert await handle.version(version["id"]) == {"profile": row.id, **version}
        done = await handle.restore_version(version["id"])
        assert done["restored"]["saved_at"] == 1.0
        with pytest.raises(NotFound) as missing:
            await handle.version("v0000000000001-0000")
        assert missing.value.field == "version"
