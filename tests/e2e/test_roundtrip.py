"""The main job on real Chromium: sign in, save once, close, open — still signed in."""

from __future__ import annotations

import pytest

from fixtures.sites import Sites
from support import Api, assert_signed_in, sign_in_everywhere

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.e2e,
    pytest.mark.parametrize("via", ["local", "grid"]),  # the round trips run through a Grid too
]

SPARE = "/__sitekeep-spare__"


async def test_one_save_signs_in_two_apps_after_close_and_open(api: Api, sites: Sites) -> None:
    await sign_in_everywhere(api, sites, "s1")
    saved = await api.save("s1")
    assert saved["saved"]["cookies"] >= 4
    assert sites.url("token.example.test", "").rstrip("/") in saved["saved"]["sites"]
    assert saved["saved"]["skipped"] == []
    await api.close("s1")

    opened = await api.open(key="s1")
    assert opened["title"] == "Tabs — cart 2"  # landed on the last page, sessionStorage back
    restored = opened["site_data"]["restored"]
    assert {"app.example.test", "id.example.test", "token.example.test"} <= set(restored)
    await assert_signed_in(api, sites, "s1")
    assert not [h for h in sites.hits() if h[1] == SPARE], "a spare page reached the server"


async def test_sign_out_saved_after_sign_in_comes_back_signed_out(api: Api, sites: Sites) -> None:
    await api.open(key="s2")
    await api.go("s2", sites.url("app.example.test", "/login"))
    await api.go("s2", sites.url("token.example.test", "/login"))
    await api.save("s2")
    await api.go("s2", sites.url("token.example.test", "/logout"))
    out = await api.go("s2", sites.url("app.example.test", "/logout"))
    assert out["title"] == "App — signed out"
    await api.save("s2")
    await api.close("s2")

    await api.open(key="s2")
    assert (await api.go("s2", sites.url("app.example.test")))["title"] == "App — signed out"
    assert (await api.go("s2", sites.url("token.example.test")))["title"] == "Token — signed out"


async def test_back_after_a_restore_never_reaches_a_spare_page(api: Api, sites: Sites) -> None:
    await api.open(key="s3")
    await api.go("s3", sites.url("token.example.test", "/login"))
    await api.go("s3", sites.url("tabs.example.test", "/add"))
    await api.save("s3")
    await api.close("s3")
    await api.open(key="s3", url=sites.url("token.example.test"))
    behind: list[str] = []
    for _ in range(5):  # walk back until there is nowhere left to go
        reply = await api.http.post("/v1/sessions/s3/back")
        if reply.status_code == 409:
            assert reply.json()["error"]["type"] == "no_history_entry"
            break
        assert reply.status_code == 200, reply.text
        behind.append(reply.json()["url"])
    else:
        raise AssertionError(f"back() never ran out of pages: {behind}")
    # At most the new browser's own first page (data:,) is behind the landing page.
    assert all(not url.startswith("http") for url in behind), behind
