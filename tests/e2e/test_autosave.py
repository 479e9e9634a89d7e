"""A session knows whether each site is signed in, saves by itself, and never trades a
good sign-in for a bad one (issue #26 items 1–3; SPEC §18).

Real Chromium and Firefox against the fixture form app (``form.example.test``): a
sign-in form whose ``/logout`` drops the browser's cookie while the server keeps the
sign-in, and whose ``/login-brief?ttl=N`` signs the browser out after N seconds.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any
from urllib.parse import quote

import pytest

from e2e.test_dead_browser import the_browser
from fixtures.sites import FORM_HOST, FORM_PASSWORD, FORM_USER, Sites
from processes import browser_pids
from sitekeep.args import OpenBody
from sitekeep.config import Settings
from sitekeep.model import Principal
from sitekeep.service import Service
from support import WHO, Api, ApiFactory

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SIGNED_IN = f"Form — signed in as {FORM_USER} (plan free)"
ADMIN = Principal(WHO.tenant, "boss", "admin")


async def sign_in(api: Api, sites: Sites, key: str, login: str = "/login") -> None:
    """Sign in to the form app through its form, as a person would."""
    await api.go(key, sites.url(FORM_HOST, login))
    await api.call("POST", f"/v1/sessions/{key}/type", {"selector": "#user", "text": FORM_USER})
    body = {"selector": "#pass", "text": FORM_PASSWORD, "submit": True}
    page = await api.call("POST", f"/v1/sessions/{key}/type", body)
    assert page["title"] == f"Form — welcome {FORM_USER}"
    assert (await api.go(key, sites.url(FORM_HOST)))["title"] == SIGNED_IN


async def sign_out(api: Api, sites: Sites, key: str) -> None:
    page = await api.go(key, sites.url(FORM_HOST, "/logout"))
    assert page["title"] == "Form — sign in"
    assert (await api.go(key, sites.url(FORM_HOST)))["title"] == "Form — signed out"
    await api.go(key, sites.url(FORM_HOST, "/logout"))  # back on the sign-in page


async def views(api: Api, key: str) -> list[str]:
    """The form host's state in every view: the session, its row in the list, the admin
    list and the MCP resource's view — which must agree."""
    current = await api.call("GET", f"/v1/sessions/{key}")
    (row,) = [r for r in (await api.call("GET", "/v1/sessions"))["sessions"] if r["key"] == key]
    (admin,) = [r for r in await api.service.admin.sessions(ADMIN) if r["key"] == key]
    resource = await api.service.views.sign_in(WHO, key)
    seen = [v["sign_in"].get(FORM_HOST, {}).get("state") for v in (current, row, admin, resource)]
    assert len(set(seen)) == 1, seen
    for view in (current, row, admin, resource):
        for known in view["sign_in"].values():
            assert FORM_PASSWORD not in str(known)
    return seen


async def journaled(api: Api, key: str) -> list[dict[str, Any]]:
    """The session's automatic saves, as its journal timeline shows them."""
    timeline = await api.service.admin.journal(ADMIN, key, limit=1000)
    return [row for row in timeline["rows"] if row.get("op") == "autosave"]


async def test_a_browser_closed_without_a_save_reopens_signed_in(api: Api, sites: Sites) -> None:
    await api.open(key="k")
    await sign_in(api, sites, "k")
    closed = await api.close("k")
    autosave = closed["autosave"]
    assert autosave["reason"] == "close"
    assert autosave["saved"]["cookies"] >= 1
    assert autosave["guarded"] == [] and autosave["signed_out"] == []
    assert await views(api, "k") == ["signed_in"] * 4
    made = await api.call("POST", "/v1/profiles", {"name": "form"})  # a profile of it too
    await api.call("POST", f"/v1/profiles/{made['id']}/capture", {"session": "k"})
    one = await api.call("GET", f"/v1/profiles/{made['id']}")
    (listed,) = (await api.call("GET", "/v1/profiles"))["profiles"]
    assert one["sign_in"][FORM_HOST]["state"] == "signed_in"
    assert listed["sign_in"] == one["sign_in"]
    (row,) = await journaled(api, "k")
    assert row["args"] == {"reason": "close"} and row["outcome"] == "ok"
    opened = await api.open(key="k", url=sites.url(FORM_HOST))
    assert opened["title"] == SIGNED_IN


async def test_a_sign_out_closed_is_guarded_and_reopens_signed_in(api: Api, sites: Sites) -> None:
    await api.open(key="k")
    await sign_in(api, sites, "k")
    assert (await api.save("k"))["signed_out"] == []
    assert await views(api, "k") == ["signed_in"] * 4
    await sign_out(api, sites, "k")
    judged = await api.call("POST", "/v1/sessions/k/check")
    assert judged["sign_in"][FORM_HOST]["state"] == "signed_out"
    assert judged["sign_in"][FORM_HOST]["evidence"]["page"] == "/login"
    assert await views(api, "k") == ["signed_out"] * 4  # the live browser, as judged
    closed = await api.close("k")
    (guarded,) = closed["autosave"]["guarded"]
    assert guarded["site"] == FORM_HOST
    assert "signed in at the last save" in guarded["reason"]
    assert "kept" in guarded["reason"]
    assert await views(api, "k") == ["signed_in"] * 4  # what a reopen brings back
    opened = await api.open(key="k", url=sites.url(FORM_HOST))
    assert opened["title"] == SIGNED_IN


async def test_an_explicit_save_after_a_sign_out_replaces_and_names_the_site(
    api: Api, sites: Sites
) -> None:
    await api.open(key="k")
    await sign_in(api, sites, "k")
    await api.save("k")
    await sign_out(api, sites, "k")
    saved = await api.save("k")
    assert saved["signed_out"] == [FORM_HOST]
    assert saved["guarded"] == []
    assert await views(api, "k") == ["signed_out"] * 4
    closed = await api.close("k")  # the automatic save finds nothing signed in to guard
    assert closed["autosave"]["guarded"] == []
    opened = await api.open(key="k", url=sites.url(FORM_HOST))
    assert opened["title"] == "Form — signed out"
    assert await views(api, "k") == ["signed_out"] * 4


async def test_a_session_that_does_not_autosave_or_is_insecure_never_saves_by_itself(
    api: Api, sites: Sites
) -> None:
    records = api.service.parts.seam.records
    for key, options in (("off", {"autosave": False}), ("insecure", {"insecure": True})):
        await api.open(key=key, **options)
        assert (await api.call("GET", f"/v1/sessions/{key}"))["autosave"] is False
        await sign_in(api, sites, key)
        assert "autosave" not in await api.close(key), key
        assert await journaled(api, key) == [], key
        assert await records.load_snapshot(WHO.tenant, key) is None, key


async def test_a_killed_browser_reopens_with_its_last_checkpoint(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(checkpoint=0.5)
    chromedriver = api.service.parts.settings.webdriver_url
    before = browser_pids(chromedriver) if chromedriver else set()
    await api.open(key="k")
    await sign_in(api, sites, "k")
    await state_becomes(api, "k", "signed_in")  # a checkpoint, half a second after a call
    assert await views(api, "k") == ["signed_in"] * 4
    rows = await journaled(api, "k")
    assert {r["args"]["reason"] for r in rows} == {"checkpoint"}
    endpoint = (await api.browser("k")).ref.endpoint
    os.kill(the_browser(api, endpoint, before), signal.SIGKILL)
    form = {"url": sites.url(FORM_HOST)}
    reply = await api.http.post("/v1/sessions/k/navigate", json=form)
    if reply.status_code == 503:  # the death seen by this call: the next one reopens
        assert reply.json()["error"]["type"] == "browser_unavailable"
        reply = await api.http.post("/v1/sessions/k/navigate", json=form)
    page = reply.json()  # reopened silently, restored from the checkpoint
    assert page["title"] == SIGNED_IN
    assert FORM_HOST in page["site_data"]["restored"]


async def test_the_reaper_and_stop_save_a_browser_before_they_end_it(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(browser_idle=1.0)
    await api.open(key="idle")
    await sign_in(api, sites, "idle")
    await asyncio.sleep(1.1)
    assert await api.service.reaper.reap() == {"reaped": 1}
    assert [r["args"] for r in await journaled(api, "idle")] == [{"reason": "reaper"}]
    assert await views(api, "idle") == ["signed_in"] * 4
    opened = await api.open(key="idle", url=sites.url(FORM_HOST))
    assert opened["title"] == SIGNED_IN
    await api.close("idle")
    await api.open(key="stopped")
    await sign_in(api, sites, "stopped")
    assert await api.service.reaper.end_browsers() == 1  # sitekeep stop
    assert [r["args"] for r in await journaled(api, "stopped")] == [{"reason": "stop"}]
    assert (await api.snapshot("stopped")).sign_in[FORM_HOST].state == "signed_in"


async def test_a_server_shutting_down_saves_the_browsers_it_drives(
    settings: Settings, sites: Sites
) -> None:
    stored = settings.model_copy(update={"session_store": None})  # the data dir's stores
    first = Service.from_settings(stored)
    try:
        await first.sessions.open(WHO, OpenBody(key="k", url=sites.url(FORM_HOST, "/login")))
        await first.sessions.act(WHO, "k", "type", selector="#user", text=FORM_USER)
        typed = {"selector": "#pass", "text": FORM_PASSWORD, "submit": True}
        await first.sessions.act(WHO, "k", "type", **typed)
    finally:
        await first.aclose()  # the server stops; its browsers live on (SPEC §2)
    again = Service.from_settings(stored)
    try:
        rows = (await again.admin.journal(ADMIN, "k", limit=1000))["rows"]
        assert [r["args"] for r in rows if r.get("op") == "autosave"] == [{"reason": "shutdown"}]
        snapshot = await again.parts.seam.records.load_snapshot(WHO.tenant, "k")
        assert snapshot is not None and snapshot.sign_in[FORM_HOST].state == "signed_in"
        page = await again.sessions.navigate(WHO, "k", sites.url(FORM_HOST))
        assert page["title"] == SIGNED_IN and "site_data" not in page  # the same browser
    finally:
        await again.parts.browsers.close_all()
        await again.aclose()


async def state_becomes(api: Api, key: str, wanted: str) -> None:
    """Wait (at most 10 s) until the session's form host is judged ``wanted``."""
    for _ in range(200):
        current = await api.call("GET", f"/v1/sessions/{key}")
        if current["sign_in"].get(FORM_HOST, {}).get("state") == wanted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{FORM_HOST} never became {wanted}: {current['sign_in']}")


async def test_a_checkpoint_after_the_app_signed_the_browser_out_is_guarded(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(checkpoint=0.5)
    await api.open(key="k")
    await sign_in(api, sites, "k", "/login-brief?ttl=3")  # the app signs out after 3 s
    await state_becomes(api, "k", "signed_in")  # a checkpoint saved the sign-in
    await asyncio.sleep(3)
    assert (await api.go("k", sites.url(FORM_HOST)))["title"] == "Form — signed out"
    await state_becomes(api, "k", "unknown")  # the next checkpoint: no sign-in cookie left
    kept = await api.snapshot("k")
    assert kept.sign_in[FORM_HOST].state == "signed_in"
    assert "form_session" in {c.name for c in kept.cookies}
    reasons = {r["args"]["reason"] for r in await journaled(api, "k")}
    assert reasons == {"checkpoint"}


async def test_a_check_runs_in_a_background_tab_and_leaves_the_page_alone(
    api: Api, sites: Sites
) -> None:
    await api.open(key="k")
    await sign_in(api, sites, "k")
    tall = quote('<div style="height: 5000px">tall</div>', safe="")
    long_page = sites.url("www.example.test", f"/__fixture/html?body={tall}")
    await api.go("k", long_page)
    live = await api.browser("k")
    await live.evaluate_json("() => { window.scrollTo(0, 1500); return JSON.stringify(scrollY); }")
    before = await where(api, "k")
    assert before[2] > 0
    check = {
        "url": sites.url(FORM_HOST),
        "signed_in": {"text": f"signed in as {FORM_USER}"},
        "signed_out": {"selector": "a[href='/login']"},
    }
    put = await api.call("PUT", f"/v1/sessions/k/checks/{FORM_HOST}", check)
    assert put["check"]["signed_in"] == {"text": f"signed in as {FORM_USER}"}
    judged = (await api.call("POST", "/v1/sessions/k/check"))["sign_in"][FORM_HOST]
    assert judged["state"] == "signed_in"
    assert judged["evidence"]["source"] == "check"
    assert judged["evidence"]["found"] == "signed_in"
    assert await where(api, "k") == before
    await sign_out(api, sites, "k")
    judged = (await api.call("POST", "/v1/sessions/k/check"))["sign_in"][FORM_HOST]
    assert (judged["state"], judged["evidence"]["found"]) == ("signed_out", "signed_out")
    await api.call("DELETE", "/v1/sessions/k/checks/" + FORM_HOST)
    assert (await api.call("GET", "/v1/sessions/k/checks"))["checks"] == {}


async def test_a_profiles_check_runs_in_a_throwaway_browser(api: Api, sites: Sites) -> None:
    await api.open(key="k")
    await sign_in(api, sites, "k")
    made = await api.call("POST", "/v1/profiles", {"name": "form"})
    ident = made["id"]
    await api.call("POST", f"/v1/profiles/{ident}/capture", {"session": "k"})
    await api.close("k")
    check = {"url": sites.url(FORM_HOST), "signed_in": {"text": f"signed in as {FORM_USER}"}}
    await api.call("PUT", f"/v1/profiles/{ident}/checks/{FORM_HOST}", check)
    judged = (await api.call("POST", f"/v1/profiles/{ident}/check"))["sign_in"][FORM_HOST]
    assert (judged["state"], judged["evidence"]["source"]) == ("signed_in", "check")
    shown = (await api.call("GET", f"/v1/profiles/{ident}"))["sign_in"][FORM_HOST]
    assert shown == judged
    assert await api.service.parts.stores.runs.open_runs() == []  # it ended


@pytest.mark.parametrize("browser", ["chromium"])
async def test_a_bad_session_check_is_400_naming_its_field_and_changes_nothing(
    api: Api, sites: Sites
) -> None:
    await api.open(key="k")
    good = {"url": sites.url(FORM_HOST), "signed_in": {"text": "signed in"}}
    await api.call("PUT", f"/v1/sessions/k/checks/{FORM_HOST}", good)
    before = await api.service.parts.seam.records.load(WHO.tenant, "k")
    for body, field in (
        ({**good, "url": sites.url("app.example.test")}, "url"),
        ({**good, "signed_in": {"selector": "#a", "text": "b"}}, "signed_in"),
        ({"url": good["url"]}, "signed_in"),
    ):
        refused = await api.call("PUT", f"/v1/sessions/k/checks/{FORM_HOST}", body, status=400)
        assert refused["error"]["field"] == field
    refused = await api.call("PUT", "/v1/sessions/k/checks/a%20b", good, status=400)
    assert refused["error"]["field"] == "host"
    assert await api.service.parts.seam.records.load(WHO.tenant, "k") == before


async def where(api: Api, key: str) -> tuple[str, str, int, int]:
    """The main tab's URL, title and scroll, and how many tabs the browser has."""
    live = await api.browser(key)
    url, title, scrolled = await live.evaluate_json(
        "() => JSON.stringify([location.href, document.title, Math.round(scrollY)])"
    )
    tree = await live.conn.send("browsingContext.getTree", {"maxDepth": 0})
    return url, title, scrolled, len(tree["contexts"])
