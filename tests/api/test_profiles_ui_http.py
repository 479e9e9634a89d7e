"""The Profiles and Proxies tabs' writes through the real app in-process (no browser):
share / make private / rename / delete a profile, add and delete a proxy, each behind the
sign-in, CSRF and origin rules; the pages show no value. Needs issue #12's profiles and
proxies (``tests/ui/test_wizard.py`` drives the wizard)."""

from __future__ import annotations

import re

import pytest

from sitekeep.args import CreateBody
from sitekeep.model import Principal
from support import WHO

from .test_admin_ui_http import OWN, Ui, ui

pytestmark = pytest.mark.anyio

__all__ = ["ui"]  # the shared fixture, re-exported for pytest

BOSS = Principal(WHO.tenant, "boss", "admin")


async def post(ui: Ui, path: str, **form: str) -> str:
    """A write from the page; the page it redirects to."""
    reply = await ui.http.post(path, data={"csrf": ui.csrf, **form}, headers={"Origin": OWN})
    assert reply.status_code == 303, reply.text
    return (await ui.http.get(reply.headers["location"])).text


async def test_a_profile_is_shared_made_private_renamed_and_deleted(ui: Ui) -> None:
    made = await ui.service.profiles.create(BOSS, CreateBody(name="Staging login"))
    ident = made["id"]
    await ui.sign_in()
    page = (await ui.http.get("/admin/ui/profiles")).text
    assert "Staging login" in page and "Private" in page and "not captured" in page
    forged = await ui.http.post(f"/admin/ui/profiles/{ident}/share", data={"csrf": "no"})
    assert forged.status_code == 403
    page = await post(ui, f"/admin/ui/profiles/{ident}/share")
    assert "is shared with the workspace." in page and "Shared" in page
    await post(ui, f"/admin/ui/profiles/{ident}/private")
    page = await post(ui, f"/admin/ui/profiles/{ident}/rename", name="Prod <login>")
    assert "Prod &lt;login&gt;" in page and "Prod <login>" not in page
    page = await post(ui, f"/admin/ui/profiles/{ident}/delete")
    assert (
        re.search(r"Deleted Prod &lt;login&gt;\.", page) and f'data-profile="{ident}"' not in page
    )


async def test_proxies_are_added_refused_with_the_field_and_deleted(ui: Ui) -> None:
    await ui.sign_in()
    bad = await ui.http.post(
        "/admin/ui/proxies",
        data={"csrf": ui.csrf, "name": "de-1", "country": "Germany", "url": "http://p.test:3128"},
        headers={"Origin": OWN},
    )
    assert bad.status_code == 400 and 'role="alert"' in bad.text and "country" in bad.text
    page = await post(ui, "/admin/ui/proxies", name="de-1", country="de", url="http://p.test:3128")
    assert "Saved de-1." in page and "http://p.test:3128" in page
    new = (await ui.http.get("/admin/ui/profiles/new")).text
    assert '<option value="de">DE</option>' in new  # the wizard's countries
    assert "No proxies" in await post(ui, "/admin/ui/proxies/de-1/delete")
