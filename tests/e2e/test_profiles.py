"""Profiles with real browsers (SPEC §9): the state preview of a signed-in Chromium,
capture of a selection into a profile, sessions opened from it in Chromium and Firefox,
and later saves that do not write back; key rotation while a session saves (SPEC §12)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from fixtures.sites import Sites
from sitekeep.config import Settings
from sitekeep.history import origin_of
from sitekeep.stores.cipher import KeyFile
from support import Api, ApiFactory

from .conftest import FIREFOX_PREFS

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def no_values(preview: Any) -> None:
    """No ``value`` key anywhere in the preview."""
    if isinstance(preview, dict):
        assert "value" not in preview
        for item in preview.values():
            no_values(item)
    elif isinstance(preview, list):
        for item in preview:
            no_values(item)


@pytest.mark.parametrize("browser", ["chromium"])  # the test opens Firefox itself
async def test_a_profile_captured_in_chromium_signs_in_sessions_of_both_browsers(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(webdriver_url=None, firefox_prefs=FIREFOX_PREFS)
    await api.open(key="wizard")
    assert (await api.go("wizard", sites.url("app.example.test", "/login")))["title"] == (
        "App — signed in as alice"
    )
    await api.go("wizard", sites.url("token.example.test", "/login"))
    await api.go("wizard", sites.url("www.example.test", "/set-parent"))

    preview = await api.call("GET", "/v1/sessions/wizard/state-preview")
    no_values(preview)
    assert preview["source"] == "browser" and preview["now"] > 0
    app = next(d for d in preview["domains"] if d["domain"] == "app.example.test")
    session_cookie = next(c for c in app["cookies"] if c["name"] == "app_session")
    assert session_cookie["http_only"] is True and session_cookie["selected"] is True

    profile = await api.call("POST", "/v1/profiles", {"name": "alice at app"})
    ident = profile["id"]
    dead = [{"domain": "app.example.test", "name": "no_such_cookie"}]
    refused = await api.call(
        "POST",
        f"/v1/profiles/{ident}/capture",
        {"session": "wizard", "cookies": dead},
        status=400,
    )
    assert refused["error"]["field"] == "cookies"
    assert (await api.call("GET", f"/v1/profiles/{ident}"))["captured_at"] is None

    selection = [{"domain": "app.example.test", "name": "app_session"}]
    done = await api.call(
        "POST", f"/v1/profiles/{ident}/capture", {"session": "wizard", "cookies": selection}
    )
    assert done["captured"]["cookies"] == 1
    assert done["profile"]["cookie_domains"] == ["app.example.test"]
    captured_at = done["profile"]["captured_at"]
    assert captured_at is not None

    used = await api.open(key="agent", profile=ident)
    assert used["site_data"]["profile"] == {"id": ident, "name": "alice at app"}
    assert (await api.go("agent", sites.url("app.example.test")))["title"] == (
        "App — signed in as alice"
    )
    # localStorage of the session's origins is captured whatever the cookie selection.
    assert (await api.go("agent", sites.url("token.example.test")))["title"] == (
        "Token — signed in as bob"
    )
    # A new browser of a session that saved nothing of its own comes from the profile again.
    await api.close("agent")
    await api.open(key="agent")
    assert (await api.go("agent", sites.url("app.example.test")))["title"] == (
        "App — signed in as alice"
    )
    await api.go("agent", sites.url("app.example.test", "/__fixture/cookie?name=later&value=x"))
    await api.save("agent")
    assert (await api.call("GET", f"/v1/profiles/{ident}"))["captured_at"] == captured_at
    state = await api.call("GET", f"/v1/profiles/{ident}/storage-state")
    assert [c["name"] for c in state["cookies"]] == ["app_session"]
    # Asked: save_site_data(profile=ID) writes every unexpired cookie of the session into it.
    saved = await api.save("wizard", profile=ident)
    assert {"app.example.test", "id.example.test"} <= set(saved["profile"]["cookie_domains"])
    assert saved["profile"]["captured_at"] > captured_at

    in_firefox = await api.open(key="fox", browser="firefox", profile=ident)
    assert (await api.browser("fox")).ref.kind == "firefox"
    assert in_firefox["site_data"]["profile"]["id"] == ident
    assert (await api.go("fox", sites.url("app.example.test")))["title"] == (
        "App — signed in as alice"
    )


@pytest.mark.parametrize("browser", ["chromium"])
async def test_key_rotation_while_a_session_saves_loses_nothing(
    api: Api, sites: Sites, settings: Settings
) -> None:
    """SPEC §12: ``sitekeep keys rotate``'s pass and a save of the same session run at
    once; whichever comes first, the snapshot ends up whole, holding the save, and sealed
    under the new key."""
    await api.open(key="r")
    await api.go("r", sites.url("app.example.test", "/login"))
    await api.save("r")  # sealed under the first key
    new = KeyFile(settings.key_file).add().current.id
    await api.go("r", sites.url("token.example.test", "/__fixture/ls?during=dummy-during"))
    async with anyio.create_task_group() as both:
        both.start_soon(api.save, "r")
        both.start_soon(api.service.keys.reseal_all)
    snapshot = await api.snapshot("r")
    token = origin_of(sites.url("token.example.test"))
    assert token is not None
    assert dict(snapshot.origins[token].local) == {"during": "dummy-during"}
    assert any(c.name == "app_session" for c in snapshot.cookies)
    # The snapshot, and the first save's kept as a version (issue #26): both under it.
    assert await api.service.keys.key_use() == {new: 2}
