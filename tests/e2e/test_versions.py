"""Versions of saved site data (issue #26) on real Chromium and Firefox: a save that
turned a sign-in into a sign-out is undone by restoring the version before it, and the
reopened browser is signed in; ``restore_site_data=false`` forgets every version."""

from __future__ import annotations

import pytest

from fixtures.sites import Sites
from support import SIGNED_IN, WHO, Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

TOKEN = "token.example.test"
APP = "app.example.test"


async def test_restoring_the_version_before_a_signed_out_save_signs_the_reopen_back_in(
    api: Api, sites: Sites
) -> None:
    await api.open(key="v1")
    assert (await api.go("v1", sites.url(APP, "/login")))["title"] == SIGNED_IN[APP]
    assert (await api.go("v1", sites.url(TOKEN, "/login")))["title"] == SIGNED_IN[TOKEN]
    await api.save("v1")
    # Sign out in the page (the app forgets its token; the server would still take it),
    # then save on purpose: the signed-out state replaces the signed-in one.
    await api.go("v1", sites.url(TOKEN, "/logout"))
    assert (await api.go("v1", sites.url(TOKEN, "/")))["title"] == "Token — signed out"
    await api.save("v1")
    [kept] = (await api.call("GET", "/v1/sessions/v1/site-data/versions"))["versions"]
    token = next(h for h in kept["hosts"] if h["site"] == TOKEN)
    assert token["local"] == 1 and token["local_bytes"] > len("token")

    done = await api.call("POST", f"/v1/sessions/v1/site-data/versions/{kept['id']}/restore")
    assert done["restored"]["id"] == kept["id"] and TOKEN in done["restored"]["hosts"]
    assert "hint" in done  # the live browser still holds the signed-out state
    await api.close("v1", autosave=False)  # as the hint says: its save would replace it

    reopened = await api.open(key="v1")
    assert reopened["title"] == SIGNED_IN[TOKEN]  # it lands where the save was made
    assert (await api.go("v1", sites.url(APP)))["title"] == SIGNED_IN[APP]
    versions = (await api.call("GET", "/v1/sessions/v1/site-data/versions"))["versions"]
    assert len(versions) == 2  # the signed-out save, kept by the restore
    signed_out = await api.service.parts.seam.records.versions.load(
        WHO.tenant, "v1", versions[0]["id"]
    )
    assert signed_out is not None and not any(
        "token" in storage.local for storage in signed_out.origins.values()
    )


async def test_opening_without_saved_data_forgets_every_version(api: Api, sites: Sites) -> None:
    await api.open(key="v2", url=sites.url(TOKEN, "/login"))
    assert (await api.go("v2", sites.url(TOKEN)))["title"] == SIGNED_IN[TOKEN]
    await api.save("v2")
    await api.save("v2")
    assert len((await api.call("GET", "/v1/sessions/v2/site-data/versions"))["versions"]) == 1

    opened = await api.open(key="v2", restore_site_data=False)
    assert opened["site_data"] == {"forgotten": 1}  # hosts: the token app
    assert (await api.call("GET", "/v1/sessions/v2/site-data/versions"))["versions"] == []
    stored = await api.service.parts.stores.sessions.keys(f"site-data-version/{WHO.tenant}/v2/")
    assert stored == []
    assert opened["title"] == "Token — signed out"  # a clean browser, where it last was
