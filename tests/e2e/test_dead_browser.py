"""A dead browser is noticed at once (issue #8 item 9): its browser killed while a call
waits on it, the call answers 503 ``browser_unavailable`` within a second or two — not
after the navigation timeout — and the next call opens a new browser.

The browser is killed (SIGKILL, as the OOM killer would) while a navigation waits on a
page the fixture server holds for a minute; the kill happens once the server has the
request, so the call is in flight in the browser for sure.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import anyio
import httpx
import pytest

from fixtures.grid import Grid
from fixtures.sites import Sites
from processes import browser_pids, local_chromium, main_browsers
from support import Api, ApiFactory

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

ANSWER_WITHIN = 3.0
"""Seconds from the kill to the answer: a bound far under the navigation timeout (60 s
here), with room for a loaded machine."""


async def until(condition: object, what: str, timeout: float = 30.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():  # type: ignore[operator]
            await anyio.sleep(0.02)


SLOW = "/__fixture/slow"


async def kill_while_waiting(
    api: Api, sites: Sites, method: str, path: str, body: dict[str, str], pid: Callable[[], int]
) -> float:
    """Make the call, kill the browser (``pid()``) once the fixture server holds the
    call's slow request, and return how long after the kill the 503 came."""
    sites.reset_hits()
    reply: list[httpx.Response] = []
    killed_at: list[float] = []

    async def make_call() -> None:
        reply.append(await api.http.request(method, path, json=body))

    async with anyio.create_task_group() as calls:
        calls.start_soon(make_call)
        await until(lambda: ("app.example.test", SLOW) in sites.hits(), "the slow request")
        os.kill(pid(), signal.SIGKILL)
        killed_at.append(time.monotonic())
    took = time.monotonic() - killed_at[0]
    assert reply[0].status_code == 503, reply[0].text
    assert reply[0].json()["error"]["type"] == "browser_unavailable"
    return took


def the_browser(api: Api, endpoint: str, before: set[int]) -> int:
    """The main process of the browser the server at ``endpoint`` started, of those not in
    ``before``: a chromedriver's, a geckodriver's or a mapper engine's Node process's."""
    if api.service.parts.settings.browser == "firefox":
        driver = "geckodriver"
    else:
        driver = "node" if api.service.parts.browsers.uses_mapper else "chromedriver"
    (pid,) = browser_pids(endpoint, driver) - before
    return pid


def only(pids: set[int]) -> int:
    (pid,) = pids
    return pid


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
async def test_killing_the_browser_mid_navigation_answers_503_at_once_then_reopens(
    make_api: ApiFactory, sites: Sites, browser: str
) -> None:
    api: Api = await make_api(navigation_timeout=60.0)
    chromedriver = api.service.parts.settings.webdriver_url
    before = browser_pids(chromedriver) if chromedriver else set()
    await api.open(key="k", url=sites.url("app.example.test"))
    endpoint = (await api.browser("k")).ref.endpoint
    pid = the_browser(api, endpoint, before)
    slow = {"url": sites.url("app.example.test", f"{SLOW}?ms=60000")}
    took = await kill_while_waiting(
        api, sites, "POST", "/v1/sessions/k/navigate", slow, lambda: pid
    )
    assert took < ANSWER_WITHIN, f"answered {took:.1f} s after the kill"
    # The next call opens a new browser and lands where the session was.
    landed = await api.go("k", sites.url("app.example.test"))
    assert landed["title"]
    reopened = (await api.browser("k")).ref.endpoint
    assert the_browser(api, reopened, before | {pid}) != pid


@pytest.mark.parametrize("browser", ["chromium"])
async def test_killing_the_browser_mid_restore_answers_503_at_once(
    make_api: ApiFactory, sites: Sites
) -> None:
    """The restore of a saved session lands on a page the server holds; the browser is
    killed while it waits there: 503 at once, and no browser is left behind."""
    api: Api = await make_api(navigation_timeout=60.0)
    settings = api.service.parts.settings
    before = local_chromium(settings)
    await api.open(key="k", url=sites.url("app.example.test", "/__fixture/ls?token=t1"))
    await api.go("k", sites.url("shop.example.test", "/__fixture/ls?cart=c1"))
    await api.save("k")
    await api.close("k")
    slow = {"key": "k", "url": sites.url("app.example.test", f"{SLOW}?ms=60000")}
    took = await kill_while_waiting(
        api, sites, "POST", "/v1/sessions", slow, lambda: only(local_chromium(settings) - before)
    )
    assert took < ANSWER_WITHIN, f"answered {took:.1f} s after the kill"
    assert not api.service.parts.browsers._live
    assert await api.service.parts.stores.runs.open_runs() == []


@pytest.mark.parametrize("browser", ["chromium"])
@pytest.mark.parametrize("via", ["grid"])
async def test_a_browser_killed_behind_a_grid_is_noticed_at_once(
    make_api: ApiFactory, sites: Sites, grid: Grid
) -> None:
    """A Grid relays BiDi and keeps its relay open after the browser is gone: the
    watchdog's question to the Grid ("invalid session id") fails the call at once."""
    api: Api = await make_api(navigation_timeout=60.0)
    before = main_browsers(grid.processes())
    await api.open(key="k", url=sites.url("app.example.test"))
    (pid,) = main_browsers(grid.processes()) - before
    slow = {"url": sites.url("app.example.test", f"{SLOW}?ms=60000")}
    took = await kill_while_waiting(
        api, sites, "POST", "/v1/sessions/k/navigate", slow, lambda: pid
    )
    assert took < ANSWER_WITHIN, f"answered {took:.1f} s after the kill"
