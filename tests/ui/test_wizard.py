"""The sign-in wizard and the Profiles tab in a real browser (SPEC §9, §10, §11):
name → live browser → sign in to the fixture form through the canvas → the polled
preview ticks the auth cookie, a person's own tick survives later polls → Save profile →
the profile is listed, shared, and a session an agent opens from it is signed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect

from fixtures.sites import FORM_HOST, FORM_PASSWORD, FORM_USER
from ui.test_admin_ui import ARTIFACTS, WAIT, Live, chrome, live, sign_in

pytestmark = pytest.mark.e2e

__all__ = ["chrome", "live"]  # the shared module fixtures, re-exported for pytest

OPEN_WAIT = 120_000  # ms: a deadline for a browser to start on a loaded machine, never a pause


@pytest.fixture
def page(chrome: Browser, live: Live, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = chrome.new_context(base_url=live.url, viewport={"width": 1600, "height": 1100})
    page = context.new_page()
    page.set_default_navigation_timeout(OPEN_WAIT)
    yield page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=Path(ARTIFACTS, f"ui-{request.node.name}.png"), full_page=True)
    context.close()


def polls(page: Page) -> int:
    return int(page.locator("[data-preview]").get_attribute("data-polls") or 0)


def wait_for_polls(page: Page, count: int) -> None:
    """Until the wizard has finished ``count`` more preview polls (a deadline, no pause)."""
    target = polls(page) + count
    page.wait_for_function(
        f"() => +document.querySelector('[data-preview]').dataset.polls >= {target}",
        timeout=WAIT,
    )


@pytest.mark.parametrize("kind", ["chromium", "firefox"])
def test_the_wizard_saves_a_signed_in_profile_agents_can_open(
    page: Page, live: Live, kind: str
) -> None:
    name = f"Form via {kind}"
    sign_in(page, live.admin)
    page.get_by_role("link", name="Profiles").click()
    page.get_by_role("link", name="New profile").click()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Browser").select_option(kind)
    page.get_by_role("button", name="Open live browser").click(timeout=OPEN_WAIT)

    view = page.get_by_role("region", name="Live browser")
    expect(view).to_have_attribute("data-state", "live", timeout=WAIT)
    page.get_by_label("Address").fill(live.sites.url(FORM_HOST, "/login"))
    page.get_by_role("button", name="Go").click()
    expect(view.locator("[data-live-title]")).to_have_text("Form — sign in", timeout=WAIT)
    view.locator("canvas").click(position={"x": 4, "y": 4})
    page.keyboard.press("Tab")
    page.keyboard.type(FORM_USER)
    page.keyboard.press("Tab")
    page.keyboard.type(FORM_PASSWORD)
    page.keyboard.press("Enter")
    expect(view.locator("[data-live-title]")).to_have_text(
        f"Form — welcome {FORM_USER}", timeout=WAIT
    )

    keeps = page.get_by_role("complementary", name="What the profile keeps")
    session = keeps.get_by_role("checkbox", name="form_session")
    plan = keeps.get_by_role("checkbox", name="form_plan")
    expect(session).to_be_checked(timeout=WAIT)  # httpOnly: the heuristic's pick
    expect(plan).not_to_be_checked()
    plan.check()  # the person's choice...
    wait_for_polls(page, 2)
    expect(plan).to_be_checked()  # ...survives later polls
    expect(session).to_be_checked()

    keeps.get_by_role("button", name="Save profile").click()
    expect(page.get_by_role("status")).to_have_text(f"Saved {name}.", timeout=WAIT)
    row = page.get_by_role("row").filter(has_text=name)
    expect(row.get_by_text("Private")).to_be_visible()
    expect(row).to_contain_text(FORM_HOST)
    row.get_by_role("button", name=f"Share {name}").click()
    row = page.get_by_role("row").filter(has_text=name)
    expect(row.get_by_text("Shared")).to_be_visible()
    ident = row.get_attribute("data-profile")
    assert ident and FORM_PASSWORD not in page.content()

    # The wizard's session is gone; an agent's session opened from the profile is signed in.
    key = f"from-{kind}"
    opened = live.agent(
        "/v1/sessions", {"key": key, "profile": ident, "url": live.sites.url(FORM_HOST, "/")}
    )
    assert re.fullmatch(rf"Form — signed in as {FORM_USER} \(plan \w+\)", opened["title"])
    live.agent(f"/v1/sessions/{key}", method="DELETE")


def test_close_without_saving_keeps_nothing(page: Page, live: Live) -> None:
    sign_in(page, live.admin)
    before = live.admin_api("GET", "/admin/sessions").json()["sessions"]
    page.goto("/admin/ui/profiles/new")
    page.get_by_label("Name").fill("Never kept")
    page.get_by_role("button", name="Open live browser").click(timeout=OPEN_WAIT)
    expect(page.get_by_role("region", name="Live browser")).to_have_attribute(
        "data-state", "live", timeout=WAIT
    )
    page.get_by_role("button", name="Close without saving").click()
    expect(page.get_by_role("heading", name="Profiles", exact=True)).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="Never kept")).to_have_count(0)
    after = live.admin_api("GET", "/admin/sessions").json()["sessions"]
    assert [s["key"] for s in after] == [s["key"] for s in before]


def test_sign_in_again_lands_signed_in_on_the_profiles_first_site(page: Page, live: Live) -> None:
    # An agent signs in to the form site (http, on the fixture server's port) and captures
    # a shared profile from that session.
    source = "again-source"
    login = live.sites.url(FORM_HOST, "/login")
    live.agent("/v1/sessions", {"key": source, "url": login})
    live.agent(f"/v1/sessions/{source}/type", {"selector": "#user", "text": FORM_USER})
    body = {"selector": "#pass", "text": FORM_PASSWORD, "submit": True}
    assert live.agent(f"/v1/sessions/{source}/type", body)["title"] == f"Form — welcome {FORM_USER}"
    name = "Form again"
    made = live.agent("/v1/profiles", {"name": name, "visibility": "workspace"})
    live.agent(f"/v1/profiles/{made['id']}/capture", {"session": source})
    live.agent(f"/v1/sessions/{source}", method="DELETE")

    sign_in(page, live.admin)
    page.goto("/admin/ui/profiles")
    before = {s["key"] for s in live.admin_api("GET", "/admin/sessions").json()["sessions"]}
    page.get_by_role("button", name=f"Sign in again to {name}").click(timeout=OPEN_WAIT)
    view = page.get_by_role("region", name="Live browser")
    expect(view).to_have_attribute("data-state", "live", timeout=WAIT)
    signed_in = rf"Form — signed in as {FORM_USER} \(plan \w+\)"
    expect(view.locator("[data-live-title]")).to_have_text(re.compile(signed_in), timeout=WAIT)

    # The remote page itself, read through the session: on the form site's own origin
    # (scheme and port as saved), signed in.
    after = {s["key"] for s in live.admin_api("GET", "/admin/sessions").json()["sessions"]}
    (key,) = after - before
    headers = {"Authorization": f"Bearer {live.admin}"}
    current = live.server.http.get(f"/v1/sessions/{key}", headers=headers).json()
    assert current["url"] == live.sites.url(FORM_HOST, "/")
    read = live.server.http.post(f"/v1/sessions/{key}/read", json={}, headers=headers).json()
    assert f"signed in as {FORM_USER}" in str(read), read
    page.get_by_role("button", name="Close without saving").click()
    expect(page.get_by_role("heading", name="Profiles", exact=True)).to_be_visible()


def test_an_expired_cookie_is_shown_greyed_with_a_chip_and_never_selectable(
    page: Page, live: Live
) -> None:
    sign_in(page, live.admin)
    before = {s["key"] for s in live.admin_api("GET", "/admin/sessions").json()["sessions"]}
    page.goto("/admin/ui/profiles/new")
    page.get_by_label("Name").fill("Short-lived")
    page.get_by_role("button", name="Open live browser").click(timeout=OPEN_WAIT)
    view = page.get_by_role("region", name="Live browser")
    expect(view).to_have_attribute("data-state", "live", timeout=WAIT)
    cookies = (
        '<script>document.cookie = "short_session=1; max-age=15; path=/";'
        'document.cookie = "kept_session=1; max-age=86400; path=/";</script>'
    )
    page.get_by_label("Address").fill(
        live.sites.url(FORM_HOST, "/__fixture/html?body=" + quote(cookies))
    )
    page.get_by_role("button", name="Go").click()
    keeps = page.get_by_role("complementary", name="What the profile keeps")
    short = keeps.get_by_role("checkbox", name="short_session")
    expect(short).to_be_checked(timeout=WAIT)  # unexpired: the heuristic's pick
    expect(keeps.get_by_text("expired", exact=True)).to_have_count(0)

    # The browser goes; the preview reads the saved snapshot, where the cookie outlives
    # its expiry: still listed, greyed, unticked, not selectable, with its chip.
    (key,) = {
        s["key"] for s in live.admin_api("GET", "/admin/sessions").json()["sessions"]
    } - before
    headers = {"Authorization": f"Bearer {live.admin}"}
    saved = live.server.http.post(f"/v1/sessions/{key}/save-site-data", headers=headers)
    assert saved.status_code == 200, saved.text
    gone = live.server.http.delete(f"/v1/sessions/{key}/browser", headers=headers)
    assert gone.status_code == 200, gone.text
    expect(short).to_be_disabled(timeout=WAIT)
    expect(short).not_to_be_checked()
    row = keeps.locator(".cookie.expired").filter(
        has=page.get_by_role("checkbox", name="short_session")
    )
    expect(row.get_by_text("expired", exact=True)).to_be_visible()
    expect(row).to_have_css("color", "rgb(91, 100, 116)")
    kept = keeps.get_by_role("checkbox", name="kept_session")
    expect(kept).to_be_enabled()
    expect(kept).to_be_checked()
    page.get_by_role("button", name="Close without saving").click()
    expect(page.get_by_role("heading", name="Profiles", exact=True)).to_be_visible()
