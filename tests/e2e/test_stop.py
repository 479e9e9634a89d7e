"""sitekeep stop ends every session's browser cleanly, then the embedded drivers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.sites import Sites
from sitekeep.browser.driver import session_alive
from sitekeep.errors import BrowserUnavailable
from support import WHO, Api, ApiFactory

from .conftest import FIREFOX_PREFS

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SITEKEEP = str(Path(sys.executable).parent / "sitekeep")


def driver_tmps(data_dir: Path) -> list[Path]:
    """The private temporary folders the data dir's drivers were given (their TMPDIR,
    where chromedriver and geckodriver make each browser's profile), from their state."""
    states = [data_dir / "chromedriver.json", *(data_dir / "geckodriver").glob("*.json")]
    return [Path(json.loads(state.read_text(encoding="utf-8"))["tmp"]) for state in states]


@pytest.mark.parametrize("browser", ["chromium"])  # the test opens one of each itself
async def test_stop_ends_each_browser_and_leaves_no_profile_behind(
    make_api: ApiFactory, sites: Sites, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    api: Api = await make_api(webdriver_url=None, session_store=store, firefox_prefs=FIREFOX_PREFS)
    await api.open(key="c", url=sites.url("app.example.test"))
    await api.open(key="f", browser="firefox", url=sites.url("app.example.test"))
    refs = [(await api.browser(k)).ref for k in ("c", "f")]
    await api.service.browsers.aclose()  # the server goes; its browsers stay

    settings = api.service.settings
    tmps = driver_tmps(settings.data_dir)
    assert len(tmps) == 2, tmps  # the chromedriver's and the Firefox's geckodriver's
    chromium_profiles = list(tmps[0].glob("org.chromium.Chromium.scoped_dir.*"))
    assert [p for p in chromium_profiles if (p / "Default").is_dir()], "no profile in TMPDIR"
    env = {**os.environ, "SITEKEEP_DATA_DIR": str(settings.data_dir)}
    env["SITEKEEP_CACHE_DIR"] = str(settings.cache_dir)
    env["SITEKEEP_SESSION_STORE"] = store
    env.pop("SITEKEEP_WEBDRIVER_URL", None)
    result = subprocess.run(
        [SITEKEEP, "stop"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "ended 2 session browser(s)" in result.stdout
    for ref in refs:  # each driver is gone with its sessions
        with pytest.raises(BrowserUnavailable):
            await session_alive(ref.endpoint, ref.session_id)
    assert [tmp for tmp in tmps if tmp.exists()] == [], "a browser profile was left behind"
    assert not list((settings.data_dir / "geckodriver").glob("*.profile")), "a profile copy stayed"
    assert (await api.service.record(WHO, "c")).browser is None
