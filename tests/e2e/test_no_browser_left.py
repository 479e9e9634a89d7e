"""A closed browser is gone, and so are the browsers of a driver that died (issue #24).

Each test runs sitekeep's own drivers in its own data dir (the embedded chromedriver, a
geckodriver per Firefox, the mapper engine's Node) and looks at real processes: every
driver leads a process group of its own, which holds its browsers, their helpers and
renderers, so what is left of a browser is what is left in its driver's group. Only
processes the test started are signalled.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic import SecretStr

from fixtures.sites import Sites
from processes import driver_pids, group
from sitekeep.config import Settings
from support import Api, ApiFactory

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SCRAPE = "scrape-dummy-0123456789abcdef"
"""The test's SITEKEEP_METRICS_TOKEN."""

ENGINES = pytest.mark.parametrize(
    ("browser", "via"), [("chromium", "local"), ("firefox", "local"), ("chromium", "mapper")]
)
"""sitekeep's own drivers: the embedded chromedriver, a geckodriver, the mapper engine."""


def own_drivers(settings: Settings) -> dict[str, Any]:
    """Overrides of ``settings`` for an app whose browsers run on drivers sitekeep starts
    in the test's data dir (not the run's shared chromedriver), its sessions kept in the
    data dir (a second app on it sees them), with a scrape token for ``/metrics``."""
    store = f"sqlite:///{settings.data_dir.parent / 'sessions.db'}"
    overrides: dict[str, Any] = {"metrics_token": SecretStr(SCRAPE), "session_store": store}
    if settings.webdriver_url:  # the run's chromedriver: the embedded one instead
        overrides |= {"webdriver_url": None, "chromium_bidi": "chromedriver"}
    return overrides


def the_driver(api: Api) -> int:
    """The pid (and process group) of the one driver of the test's browser kind the
    test's data dir runs (a Firefox's geckodriver: the embedded chromedriver starts before
    any browser, ``browser.banned``)."""
    settings = api.service.parts.settings
    data_dir = settings.data_dir
    pids = driver_pids(data_dir)
    if settings.browser == "firefox":
        pids = [p for p in pids if p not in driver_pids_of(data_dir / "chromedriver.json")]
    (pid,) = pids
    return pid


def driver_pids_of(state: Path) -> list[int]:
    """The pid a driver's state file names, if it exists."""
    return [json.loads(state.read_text(encoding="utf-8"))["pid"]] if state.exists() else []


def browser_processes(driver: int) -> set[int]:
    """What runs in the driver's group besides the driver: its browsers and their helpers."""
    return group(driver) - {driver}


async def counted(api: Api) -> tuple[list[object], float]:
    """The open runs of the run ledger (``GET /admin/runs``, an admin's) and the live
    browsers ``/metrics`` counts (``sitekeep_browsers``, every kind)."""
    admin = await api.service.catalogue.create_token("t1", "ops", "admin")
    async with httpx.AsyncClient(
        transport=api.http._transport, base_url="http://sitekeep.test"
    ) as client:
        runs = await client.get("/admin/runs", headers={"Authorization": f"Bearer {admin}"})
        metrics = await client.get("/metrics", headers={"Authorization": f"Bearer {SCRAPE}"})
    assert runs.status_code == 200 and metrics.status_code == 200, (runs.text, metrics.text)
    browsers = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.text.splitlines()
        if line.startswith("sitekeep_browsers{")
    )
    return runs.json()["runs"], browsers


@pytest.fixture
def killed() -> Iterator[list[int]]:
    """Drivers the test kills: whatever is left of their groups (processes the test
    started: the kernel reuses no group's id while it has members) is ended at teardown,
    so a failing test leaves nothing running."""
    drivers: list[int] = []
    yield drivers
    for driver in drivers:
        if group(driver):
            os.killpg(driver, signal.SIGKILL)


async def until_gone(pid: int, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while pid in group(pid):
            await anyio.sleep(0.02)


@pytest.mark.parametrize("browser", ["chromium"])
async def test_a_browser_whose_driver_does_not_answer_is_ended_with_its_processes_on_close(
    make_api: ApiFactory, settings: Settings, sites: Sites
) -> None:
    """``DELETE …/browser`` once answered 200 while the Chromium kept running: Delete
    Session timed out on a driver that did not answer, and nothing else ended it. Now the
    browser is ended with its whole process tree; the ledger and the metric count none."""
    api: Api = await make_api(**own_drivers(settings))
    await api.open(key="k", url=sites.url("app.example.test"))
    driver = the_driver(api)
    assert browser_processes(driver), "no Chromium in the driver's group"
    os.kill(driver, signal.SIGSTOP)  # the driver answers nothing now
    try:
        began = time.monotonic()
        closed = await api.close("k")
        took = time.monotonic() - began
        assert closed["closed"] is True
        # It could not save first (SPEC §18), said so, and closed all the same.
        assert closed["autosave"]["error"]["type"] == "bidi_timeout"
        left = browser_processes(driver)
    finally:
        os.kill(driver, signal.SIGCONT)
    assert left == set(), f"{len(left)} processes of the closed browser still run"
    # A hang guard, not a speed test: Delete Session's timeout, the socket's close and the
    # automatic save's one BiDi command timeout (5 s, SPEC §18) before it gives up.
    assert took < 25.0, f"the close took {took:.1f} s"
    assert await counted(api) == ([], 0)


@ENGINES
@pytest.mark.parametrize("found_by", ["reaper", "start"])
async def test_the_browsers_of_a_killed_driver_are_found_and_ended(
    make_api: ApiFactory,
    settings: Settings,
    sites: Sites,
    killed: list[int],
    browser: str,
    found_by: str,
) -> None:
    """A driver killed with SIGKILL left its browser running, outside the ledger's count
    once the run was closed and outside every cap. The reaper's next pass, or the next
    start of sitekeep on the data dir, ends it; the ledger and the metric count none, and
    the session opens a new browser on its next call."""
    overrides = own_drivers(settings)
    api: Api = await make_api(**overrides)
    home = sites.url("app.example.test")
    await api.open(key="k", url=home)
    driver = the_driver(api)
    assert browser_processes(driver), f"no {browser} in the driver's group"
    killed.append(driver)
    os.kill(driver, signal.SIGKILL)
    await until_gone(driver)
    if found_by == "reaper":
        reaped = await api.service.reaper.reap()
    else:  # another server starting on the same data dir
        api = await make_api(**overrides)
    left = browser_processes(driver)
    assert left == set(), f"{len(left)} processes of the dead driver's browser still run"
    if found_by == "reaper":
        assert reaped == {"crashed": 1}
        assert await counted(api) == ([], 0)
    assert (await api.go("k", home))["title"]  # a new browser


@pytest.mark.parametrize("browser", ["chromium"])
async def test_a_new_chromedriver_never_leaves_the_dead_ones_browsers_running(
    make_api: ApiFactory, settings: Settings, sites: Sites, killed: list[int]
) -> None:
    """Issue #24: killing chromedriver 14 times left 17 Chromiums running — each new
    driver was started beside the dead one's browsers and forgot them. Killed three
    times here, each next open starts a new driver that first ends what the dead one
    left; the reaper then closes the runs of the lost browsers, and the ledger and the
    metric count the one browser that runs."""
    api: Api = await make_api(**own_drivers(settings))
    home = sites.url("app.example.test")
    for round_ in range(3):
        await api.open(key=f"k{round_}", url=home)
        killed.append(the_driver(api))
        os.kill(killed[-1], signal.SIGKILL)
        await until_gone(killed[-1])
    await api.open(key="last", url=home)
    left = {d: browser_processes(d) for d in killed if browser_processes(d)}
    assert left == {}, f"browsers of dead drivers still run: {left}"
    assert await api.service.reaper.reap() == {"crashed": 3}
    runs, browsers = await counted(api)
    assert [run["session"] for run in runs] == ["last"]  # type: ignore[index]
    assert browsers == 1
