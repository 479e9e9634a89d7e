"""SPEC §3 save rules on real Chromium: carry-over, bounded time, size cap, workers, 503."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from fixtures.sites import Sites
from sitekeep.browser.chromedriver import LocalChromedriver
from sitekeep.browser.save import SW_REASON
from sitekeep.browser.webdriver import delete_session
from sitekeep.history import origin_of
from sitekeep.model import dump_site_data
from support import Api, ApiFactory

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def wait_for_title(api: Api, key: str, title: str, timeout: float = 10.0) -> None:
    """Poll the current page (GET /v1/sessions/{key}) until its title is ``title``."""
    deadline = time.monotonic() + timeout
    while (await api.call("GET", f"/v1/sessions/{key}"))["title"] != title:
        assert time.monotonic() < deadline, f"the page never showed {title!r}"
        await anyio.sleep(0.05)


def ls(sites: Sites, host: str, **pairs: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in pairs.items())
    return sites.url(host, f"/__fixture/ls?{query}")


async def test_save_keeps_last_storage_of_origin_whose_read_timed_out(
    make_api: ApiFactory, sites: Sites
) -> None:
    # 127.0.0.1's service worker never answers: the spare page's navigation hangs for real
    # until the BiDi timeout, and the loop stops there.
    api: Api = await make_api(bidi_timeout=1.0)
    await api.open(key="k")
    await api.go("k", sites.url("127.0.0.1", "/sw/"))
    await wait_for_title(api, "k", "SW — controlled")
    await api.go("k", sites.url("127.0.0.1", "/sw/set?small=dummy-small"))
    await api.go("k", ls(sites, "app.example.test", keep="dummy-app"))
    first = await api.save("k")
    assert first["saved"]["skipped"] == []

    await api.go("k", sites.url("127.0.0.1", "/sw/set?more=dummy-more"))
    await api.go("k", ls(sites, "token.example.test", fresh="dummy-new"))
    saved = await api.save("k", full=True)

    skipped = {s["site"]: s["reason"] for s in saved["saved"]["skipped"]}
    stuck = origin_of(sites.url("127.0.0.1"))
    app = origin_of(sites.url("app.example.test"))
    assert skipped == {stuck: "timed out", app: "not attempted: an earlier read timed out"}
    snapshot = await api.snapshot("k")
    assert dict(snapshot.origins[stuck].local) == {"small": "dummy-small"}  # the last good one
    assert dict(snapshot.origins[app].local) == {"keep": "dummy-app"}
    token = origin_of(sites.url("token.example.test"))
    assert dict(snapshot.origins[token].local) == {"fresh": "dummy-new"}  # the page it is on


async def test_save_past_its_deadline_keeps_the_unattempted_origins(
    make_api: ApiFactory, sites: Sites, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    api: Api = await make_api(session_store=store)
    await api.open(key="d")
    await api.go("d", ls(sites, "a.other.test", v="dummy-1"))
    await api.go("d", ls(sites, "b.example.test", v="dummy-2"))
    await api.save("d")
    await api.go("d", ls(sites, "a.other.test", v="dummy-3"))
    await api.go("d", sites.url("tabs.example.test"))

    late: Api = await make_api(session_store=store, save_deadline=1e-9)  # a hurried replica
    saved = await late.save("d", full=True)

    reasons = {s["reason"] for s in saved["saved"]["skipped"]}
    assert reasons == {"not attempted: the save's deadline passed"}
    snapshot = await late.snapshot("d")
    assert dict(snapshot.origins[origin_of(sites.url("a.other.test"))].local) == {"v": "dummy-1"}


async def test_size_capped_save_leaves_out_the_oldest_origin(
    make_api: ApiFactory, sites: Sites
) -> None:
    # Three 600-byte origins, the User-Agent and four hosts' sign-in state (SPEC §18: it
    # counts in the cap too).
    api: Api = await make_api(snapshot_cap=2400)
    await api.open(key="c")
    filler = "x" * 600
    for host in ("o1.example.test", "o2.example.test", "o3.example.test"):
        await api.go("c", ls(sites, host, pad=filler))
    await api.go("c", sites.url("tabs.example.test"))
    saved = await api.save("c")

    oldest = origin_of(sites.url("o1.example.test"))
    assert saved["saved"]["skipped"] == [
        {"site": oldest, "reason": "left out: the snapshot passed its 2400-byte cap"}
    ]
    snapshot = await api.snapshot("c")
    assert oldest not in snapshot.origins
    assert origin_of(sites.url("o3.example.test")) in snapshot.origins
    assert len(dump_site_data(snapshot)) <= 2400


async def test_cookies_alone_over_the_cap_are_refused_and_the_old_snapshot_stands(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(snapshot_cap=3000)
    await api.open(key="o")
    await api.go("o", ls(sites, "token.example.test", v="dummy"))
    before = await api.save("o")
    for i in range(2):
        url = sites.url("app.example.test", f"/__fixture/cookie?name=big{i}&value={'y' * 2000}")
        await api.go("o", url)
    reply = await api.http.post("/v1/sessions/o/save-site-data")
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "snapshot_too_large" and error["field"] == "cookies"
    assert "y" * 50 not in reply.text
    snapshot = await api.snapshot("o")
    assert len(snapshot.cookies) == before["saved"]["cookies"]


@pytest.mark.parametrize("browser", ["chromium"])  # the endpoint is what goes down
async def test_bidi_down_is_503_and_nothing_is_saved(
    make_api: ApiFactory, sites: Sites, tmp_path: Path
) -> None:
    driver = LocalChromedriver(tmp_path / "own-driver", Path("/usr/bin/chromedriver"))
    api: Api = await make_api(webdriver_url=driver.ensure())
    await api.open(key="b")
    await api.go("b", ls(sites, "token.example.test", v="dummy-kept"))
    await api.save("b")
    ref = (await api.browser("b")).ref
    await delete_session(ref.endpoint, ref.session_id)  # its profile goes with it
    driver.stop()  # the driver and its browser are gone; nothing can reach BiDi

    reply = await api.http.post("/v1/sessions/b/save-site-data")
    assert reply.status_code == 503, reply.text
    assert reply.json()["error"]["type"] == "browser_unavailable"
    snapshot = await api.snapshot("b")
    assert dict(snapshot.origins[origin_of(sites.url("token.example.test"))].local) == {
        "v": "dummy-kept"
    }


async def test_a_service_worker_origin_is_read_past_it_on_chromium_and_skipped_on_firefox(
    api: Api, sites: Sites, browser: str
) -> None:
    await api.open(key="w")
    await api.go("w", sites.url("localhost", "/sw/"))
    await wait_for_title(api, "w", "SW — controlled")
    await api.go("w", sites.url("localhost", "/sw/set?k=dummy-sw"))
    await api.go("w", sites.url("tabs.example.test"))
    sites.reset_hits()
    saved = await api.save("w", full=True)

    localhost = origin_of(sites.url("localhost"))
    snapshot = await api.snapshot("w")
    if browser == "chromium":  # browsingContext.reload(ignoreCache) bypasses the worker
        assert saved["saved"]["skipped"] == []
        assert dict(snapshot.origins[localhost].local) == {"k": "dummy-sw"}
    else:  # Firefox rejects ignoreCache: the origin keeps its last storage, with the reason
        assert saved["saved"]["skipped"] == [{"site": localhost, "reason": SW_REASON}]
        assert localhost not in snapshot.origins  # nothing was saved for it before
    assert not [h for h in sites.hits() if h[1] == "/__sitekeep-spare__"]


async def test_save_result_names_what_was_saved_never_a_value(api: Api, sites: Sites) -> None:
    await api.open(key="v")
    await api.go("v", sites.url("app.example.test", "/login"))
    await api.go("v", ls(sites, "token.example.test", secretish="dummy-value-42"))
    await api.go("v", sites.url("token.example.test", "/__fixture/page"))  # the URL held it
    saved = await api.save("v")
    text = json.dumps(saved)
    assert "dummy-value-42" not in text and "dummy-app-" not in text and "dummy-idp-" not in text
    assert saved["saved"]["sites"] == [origin_of(sites.url("token.example.test"))]
    assert saved["uri"] == "sitekeep://sessions/v/site-data"
