"""A snapshot saved in Chromium restores into Firefox, and back (SPEC §3 Cross-browser)."""

from __future__ import annotations

import pytest

from fixtures.sites import Sites
from support import Api, ApiFactory

from .conftest import FIREFOX_PREFS
from .test_roundtrip import sign_in_everywhere

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def signed_in_everywhere(api: Api, sites: Sites, key: str) -> None:
    expected = {
        sites.url("app.example.test"): "App — signed in as alice",
        sites.url("token.example.test"): "Token — signed in as bob",
        sites.url("shop.example.test"): "Shop — pref dummy-pref",
        sites.url("id.example.test"): "IdP — known",
    }
    for url, title in expected.items():
        assert (await api.go(key, url))["title"] == title, url


@pytest.mark.parametrize("browser", ["chromium"])  # the test switches kinds itself
async def test_saved_in_chromium_signed_in_in_firefox_and_back(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(webdriver_url=None, firefox_prefs=FIREFOX_PREFS)
    await sign_in_everywhere(api, sites, "x")
    assert (await api.browser("x")).ref.kind == "chromium"
    await api.save("x")

    in_firefox = await api.open(key="x", browser="firefox")
    assert (await api.browser("x")).ref.kind == "firefox"
    assert in_firefox["title"] == "Tabs — cart 2"  # sessionStorage crossed over too
    assert in_firefox["site_data"]["skipped"] == []
    await signed_in_everywhere(api, sites, "x")

    await api.go("x", sites.url("tabs.example.test", "/add"))
    await api.go("x", sites.url("tabs.example.test"))
    saved = await api.save("x")
    assert saved["saved"]["skipped"] == []
    back = await api.open(key="x", browser="chromium")
    assert (await api.browser("x")).ref.kind == "chromium"
    assert back["title"] == "Tabs — cart 3"
    assert back["site_data"]["skipped"] == []
    await signed_in_everywhere(api, sites, "x")
