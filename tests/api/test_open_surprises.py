"""Surprises of open_session announced or removed (issue #14 item 7): a change of browser
kind says so; ``restore_site_data=false`` starts a clean browser."""

from __future__ import annotations

import pytest

from fixtures.sites import Sites
from support import Api, ApiFactory

pytestmark = pytest.mark.anyio

SIGNED_IN = "App — signed in as alice"


async def test_forgetting_the_site_data_of_a_live_signed_in_browser_starts_a_clean_one(
    api: Api, sites: Sites
) -> None:
    home = sites.url("app.example.test", "/")
    assert (await api.open(key="k", url=sites.url("app.example.test", "/login")))[
        "title"
    ] == SIGNED_IN
    await api.save("k")
    forgot = await api.open(key="k", restore_site_data=False, url=home)
    assert forgot["site_data"] == {"forgotten": 2}  # the app and its IdP
    assert forgot["title"] == "App — signed out"
    assert "switched_browser" not in forgot


async def test_opening_a_live_firefox_session_as_chromium_says_it_switched(
    make_api: ApiFactory, sites: Sites
) -> None:
    api = await make_api(
        webdriver_url=None, firefox_prefs={"network.dns.forceResolve": "127.0.0.1"}
    )
    home = sites.url("app.example.test", "/login")
    first = await api.open(key="k", browser="firefox", url=home)
    assert first["title"] == SIGNED_IN and "switched_browser" not in first
    await api.save("k")
    switched = await api.open(key="k", browser="chromium")
    assert switched["switched_browser"] == {"from": "firefox", "to": "chromium"}
    assert switched["title"] == SIGNED_IN  # reopened from the snapshot
    again = await api.open(key="k")
    assert "switched_browser" not in again
