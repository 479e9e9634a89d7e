"""sitekeep stop ends every session's browser cleanly, then the embedded drivers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from conftest import on_mapper
from fixtures.sites import Sites
from processes import driver_pids, group
from sitekeep.browser.webdriver import session_alive
from sitekeep.errors import BrowserUnavailable
from support import WHO, Api, ApiFactory

from .conftest import FIREFOX_PREFS

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SITEKEEP = str(Path(sys.executable).parent / "sitekeep")


def chromium_state(data_dir: Path) -> dict[str, str]:
    """The state of the data dir's Chromium engine: its chromedriver's, or on the mapper
    engine the one browser's Node process's (which names the profile it was given)."""
    mapper = sorted((data_dir / "mapper").glob("*.json"))
    state = mapper[0] if mapper else data_dir / "chromedriver.json"
    found: dict[str, str] = json.loads(state.read_text(encoding="utf-8"))
    return found


def driver_tmps(data_dir: Path) -> list[Path]:
    """The private temporary folders the data dir's drivers were given (their TMPDIR,
    where chromedriver and geckodriver make each browser's profile), from their state."""
    states = [
        json.loads(s.read_text(encoding="utf-8")) for s in (data_dir / "geckodriver").glob("*.json")
    ]
    return [Path(state["tmp"]) for state in (chromium_state(data_dir), *states)]


async def open_one_of_each(make_api: ApiFactory, sites: Sites, store: str, **more: str) -> Api:
    """An app on its own drivers with a Chromium session ``c`` and a Firefox one ``f``,
    its server gone (``aclose``) and its browsers left running."""
    api: Api = await make_api(
        webdriver_url=None, session_store=store, firefox_prefs=FIREFOX_PREFS, **more
    )
    await api.open(key="c", url=sites.url("app.example.test"))
    await api.open(key="f", browser="firefox", url=sites.url("app.example.test"))
    await api.service.parts.browsers.aclose()  # the server goes; its browsers stay
    return api


def sitekeep_stop(api: Api, store: str) -> subprocess.CompletedProcess[str]:
    """``sitekeep stop`` on the app's data dir, as an operator runs it."""
    settings = api.service.parts.settings
    env = {**os.environ, "SITEKEEP_DATA_DIR": str(settings.data_dir)}
    env["SITEKEEP_CACHE_DIR"] = str(settings.cache_dir)
    env["SITEKEEP_SESSION_STORE"] = store
    env.pop("SITEKEEP_WEBDRIVER_URL", None)
    result = subprocess.run(
        [SITEKEEP, "stop"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize("browser", ["chromium"])  # the test opens one of each itself
async def test_stop_ends_each_browser_and_leaves_no_profile_behind(
    make_api: ApiFactory, sites: Sites, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    api = await open_one_of_each(make_api, sites, store)
    refs = [(await api.browser(k)).ref for k in ("c", "f")]

    settings = api.service.parts.settings
    tmps = driver_tmps(settings.data_dir)
    assert len(tmps) == 2, tmps  # the chromedriver's and the Firefox's geckodriver's
    given = chromium_state(settings.data_dir).get("profile")  # the mapper's own profile
    chromium_profiles = (
        [Path(given)] if given else list(tmps[0].glob("org.chromium.Chromium.scoped_dir.*"))
    )
    assert [p for p in chromium_profiles if (p / "Default").is_dir()], "no Chromium profile"
    result = sitekeep_stop(api, store)
    assert "ended 2 session browser(s)" in result.stdout
    for ref in refs:  # each driver is gone with its sessions
        with pytest.raises(BrowserUnavailable):
            await session_alive(ref.endpoint, ref.session_id)
    assert [tmp for tmp in tmps if tmp.exists()] == [], "a browser profile was left behind"
    assert not [p for p in chromium_profiles if p.exists()], "a Chromium profile was left behind"
    assert not list((settings.data_dir / "geckodriver").glob("*.profile")), "a profile copy stayed"
    assert (await api.service.views.record(WHO, "c")).browser is None


@pytest.mark.parametrize("browser", ["chromium"])
@pytest.mark.skipif(
    on_mapper(),
    reason="chromedriver's own profiles in its TMPDIR; the mapper engine keeps each "
    "browser's profile in its state and removes it with the browser (test_mapper_attacks.py)",
)
async def test_closing_a_browser_removes_profiles_chromedriver_left_and_keeps_live_ones(
    make_api: ApiFactory, sites: Sites
) -> None:
    """chromedriver sometimes fails to remove a profile when its session ends: the next
    close sweeps its TMPDIR of profiles no browser runs in (a lock naming a dead pid, or
    none and older than a start takes), and leaves every live browser's profile alone."""
    api: Api = await make_api(webdriver_url=None)
    await api.open(key="a", url=sites.url("app.example.test"))
    await api.open(key="b", url=sites.url("app.example.test"))
    tmp = driver_tmps(api.service.parts.settings.data_dir)[0]
    made = sorted(tmp.glob("org.chromium.Chromium.scoped_dir.*"))
    live = [p for p in made if (p / "Default").is_dir()]  # and each one's extensions dir
    assert len(live) == 2 and all((p / "SingletonLock").is_symlink() for p in live), made
    past = time.time() - 3600
    for profile in live:  # running long: only its lock keeps it
        os.utime(profile, (past, past))
    left = []
    for name, lock in (("dead", "example-host-999999999"), ("unlocked", None)):
        profile = tmp / f"org.chromium.Chromium.scoped_dir.{name}"
        (profile / "Default").mkdir(parents=True)
        (profile / "Default" / "Cookies").write_bytes(b"dummy")
        if lock is not None:
            (profile / "SingletonLock").symlink_to(lock)
        os.utime(profile, (past, past))
        left.append(profile)
    starting = tmp / "org.chromium.Chromium.scoped_dir.starting"  # no lock yet, new
    starting.mkdir()

    await api.close("a")
    assert not any(p.exists() for p in left), "a left profile stayed"
    assert starting.is_dir(), "a starting browser's profile was removed"
    deadline = time.monotonic() + 10  # chromedriver removes a's after Delete Session answers
    while len(kept := [p for p in live if p.exists()]) > 1 and time.monotonic() < deadline:
        await anyio.sleep(0.1)
    assert len(kept) == 1 and (kept[0] / "Default").is_dir()  # b's, in use
    result = await api.go("b", sites.url("app.example.test", "/login"))
    assert result["url"].startswith(sites.url("app.example.test"))  # b still answers


@pytest.mark.parametrize("browser", ["chromium"])  # the test opens one of each itself
async def test_stop_ends_the_browsers_of_drivers_that_were_killed(
    make_api: ApiFactory, sites: Sites, tmp_path: Path
) -> None:
    """Issue #24: killing chromedriver 14 times left 17 Chromiums running after
    ``sitekeep stop`` — a dead driver's browsers run on in its process group, and stop
    only signalled drivers that still ran. Each driver here is killed with SIGKILL;
    stop ends what they left and no process of their groups remains."""
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    api = await open_one_of_each(make_api, sites, store, chromium_bidi="chromedriver")
    drivers = driver_pids(api.service.parts.settings.data_dir)
    assert len(drivers) == 2 and all(group(d) - {d} for d in drivers), drivers
    try:
        for driver in drivers:
            os.kill(driver, signal.SIGKILL)
        result = sitekeep_stop(api, store)
        left = {d: group(d) for d in drivers if group(d)}
    finally:  # what a failing run left: processes this test started
        for driver in drivers:
            if group(driver):
                os.killpg(driver, signal.SIGKILL)
    assert left == {}, f"processes of killed drivers still run: {left}"
    assert "ended 2 session browser(s)" in result.stdout
    assert await api.service.parts.stores.runs.open_runs() == []  # the ledger counts none
