"""A snapshot saved in Chromium restores into Firefox, and back (SPEC §3 Cross-browser)."""

from __future__ import annotations

import pytest

from fixtures.sites import Sites
from support import Api, ApiFactory, assert_signed_in, sign_in_everywhere

from .conftest import FIREFOX_PREFS

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


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
    await assert_signed_in(api, sites, "x")

    await api.go("x", sites.url("tabs.example.test", "/add"))
    await api.go("x", sites.url("tabs.example.test"))
    saved = await api.save("x")
    assert saved["saved"]["skipped"] == []
    back = await api.open(key="x", browser="chromium")
    assert (await api.browser("x")).ref.kind == "chromium"
    assert back["title"] == "Tabs — cart 3"
    assert back["site_data"]["skipped"] == []
    await assert_signed_in(api, sites, "x")
