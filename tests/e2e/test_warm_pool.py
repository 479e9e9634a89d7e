"""The warm pool on both browsers (SPEC §13; issue #10 item 6): sized per kind, a pooled
browser is proven empty before it is handed out, and one that is not is ended, never reused.
(Moved here from test_restore_rules.py, which holds restore's rules.)"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio
import pytest

from fixtures.sites import Sites
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.webdriver import SessionSpec, create_session, session_alive
from sitekeep.config import Settings
from support import Api, ApiFactory, gone

from .conftest import FIREFOX_PREFS

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def warm(make_api: ApiFactory, browser: str) -> Api:
    api: Api = await make_api(warm_browsers={browser: 1})
    await api.service.parts.browsers.pool_ready()
    assert api.service.parts.browsers.warm == 1
    return api


def pooled(api: Api, browser: str) -> LiveBrowser:
    [live] = api.service.parts.browsers._warm[browser]  # type: ignore[index]
    return live


async def test_an_open_takes_a_warm_browser_of_its_kind_and_the_pool_refills(
    make_api: ApiFactory, sites: Sites, browser: str
) -> None:
    api = await warm(make_api, browser)
    waiting = pooled(api, browser).ref.session_id
    opened = await api.open(key="p", url=sites.url("app.example.test"))
    assert opened["title"] == "App — signed out"
    assert (await api.browser("p")).ref.session_id == waiting
    await api.service.parts.browsers.pool_ready()
    assert pooled(api, browser).ref.session_id != waiting


async def _visit(live: LiveBrowser, sites: Sites) -> None:
    await live.navigate(sites.url("app.example.test", "/__fixture/ls?pool=dirty"))
    await live.navigate("about:blank")  # back on a blank page: only the past betrays it


async def _cookie(live: LiveBrowser, sites: Sites) -> None:
    cookie = {"name": "pool", "value": {"type": "string", "value": "dirty"}}
    await live.conn.send("storage.setCookie", {"cookie": {**cookie, "domain": "app.example.test"}})


async def _tab(live: LiveBrowser, sites: Sites) -> None:
    await live.conn.send("browsingContext.create", {"type": "tab"})


async def _user_context(live: LiveBrowser, sites: Sites) -> None:
    await live.conn.send("browser.createUserContext", {})


DIRT: dict[str, Callable[[LiveBrowser, Sites], Awaitable[None]]] = {
    "visited": _visit,
    "cookie": _cookie,
    "tab": _tab,
    "user-context": _user_context,
}


async def test_a_pooled_browser_that_is_not_empty_is_ended_never_handed_out(
    make_api: ApiFactory, sites: Sites, browser: str
) -> None:
    api = await warm(make_api, browser)
    for dirt, make_dirty in DIRT.items():  # every kind of dirt, one refilled pool each
        await api.service.parts.browsers.pool_ready()
        dirty = pooled(api, browser)
        await make_dirty(dirty, sites)
        opened = await api.open(key=dirt, url=sites.url("app.example.test"))
        assert opened["title"] == "App — signed out", dirt
        live = await api.browser(dirt)
        assert live.ref.session_id != dirty.ref.session_id, dirt
        assert await gone(dirty.ref), dirt
        cookies = (await live.conn.send("storage.getCookies", {}))["cookies"]
        assert not [c for c in cookies if c["name"] == "pool"], dirt


@pytest.mark.parametrize("browser", ["chromium"])
async def test_pools_are_sized_per_browser_kind(make_api: ApiFactory, sites: Sites) -> None:
    api: Api = await make_api(  # its own drivers: a chromedriver does not run Firefox
        warm_browsers={"chromium": 1, "firefox": 1},
        webdriver_url=None,
        firefox_prefs=FIREFOX_PREFS,
    )
    browsers = api.service.parts.browsers
    await browsers.pool_ready()
    assert browsers.warm == 2
    firefox = pooled(api, "firefox").ref.session_id
    opened = await api.open(key="f", browser="firefox", url=sites.url("app.example.test"))
    assert opened["title"] == "App — signed out"
    assert (await api.browser("f")).ref.session_id == firefox
    assert pooled(api, "chromium").ref.kind == "chromium"


@pytest.mark.parametrize("browser", ["chromium"])
async def test_warm_browsers_a_dead_process_left_behind_are_ended(
    make_api: ApiFactory, settings: Settings, driver_url: str
) -> None:
    spec = SessionSpec("chromium", settings.chromium, ())
    orphan = await anyio.to_thread.run_sync(create_session, driver_url, spec)
    leftovers = settings.data_dir / "warm"
    leftovers.mkdir(parents=True, exist_ok=True)
    dead_pid = 2**22 + 1  # above pid_max's default: no such process
    (leftovers / f"{dead_pid}.json").write_text(
        json.dumps([[orphan.endpoint, orphan.session_id]]), encoding="utf-8"
    )
    assert await session_alive(orphan.endpoint, orphan.session_id)
    await make_api()  # its lifespan warms up, ending what the dead process left
    assert not await session_alive(orphan.endpoint, orphan.session_id)
    assert not (leftovers / f"{dead_pid}.json").exists()
