"""The live browser in a real browser (SPEC §10): Playwright's Chromium drives the admin
UI's live page, whose canvas streams a sitekeep session's browser — Chromium, and once
Firefox — and types into the remote fixture sign-in form through the canvas.

Assertions are on the DOM (the page's title line, frame count, error list) and on the
fixture server's state; a screenshot goes to ``.artifacts/`` for CI.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from fixtures.sites import FORM_HOST, FORM_PASSWORD, FORM_USER
from ui.test_admin_ui import ARTIFACTS, EVIL, WAIT, Live, chrome, live, sign_in

pytestmark = pytest.mark.e2e

OPEN_WAIT = 120_000  # ms: a deadline for a browser to start on a loaded machine, never a pause

__all__ = ["chrome", "live"]  # the shared module fixtures, re-exported for pytest


@pytest.fixture
def page(chrome: Browser, live: Live, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = chrome.new_context(base_url=live.url, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_navigation_timeout(OPEN_WAIT)  # opening starts a browser
    yield page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=Path(ARTIFACTS, f"ui-{request.node.name}.png"), full_page=True)
    context.close()


@pytest.mark.parametrize("kind", ["chromium", "firefox"])
def test_a_person_signs_in_through_the_canvas(page: Page, live: Live, kind: str) -> None:
    sign_in(page, live.admin)
    page.get_by_role("link", name="Live browser").click()
    page.get_by_label("Session").fill(f"live-{kind}")
    page.get_by_label("Browser").select_option(kind)
    page.get_by_label("Start at").fill(live.sites.url(FORM_HOST, "/login"))
    page.get_by_role("button", name="Open live browser").click(timeout=OPEN_WAIT)

    view = page.get_by_role("region", name="Live browser")
    expect(view).to_have_attribute("data-state", "live", timeout=WAIT)
    expect(view).to_have_attribute("data-frames", re.compile(r"[1-9]"), timeout=WAIT)
    expect(view.locator("[data-live-title]")).to_have_text("Form — sign in", timeout=WAIT)

    # Focus the remote page's body with a click on the canvas, then sign in by keyboard:
    # Tab to the username, type, Tab to the password, type, Enter.
    canvas = view.locator("canvas")
    canvas.click(position={"x": 4, "y": 4})
    page.keyboard.press("Tab")
    page.keyboard.type(FORM_USER)
    page.keyboard.press("Tab")
    page.keyboard.type(FORM_PASSWORD)
    page.keyboard.press("Enter")
    expect(view.locator("[data-live-title]")).to_have_text(
        f"Form — welcome {FORM_USER}", timeout=WAIT
    )
    assert (FORM_HOST, "/session") in live.sites.hits(FORM_HOST)  # posted by the form
    assert FORM_PASSWORD not in page.content()

    # The agents' navigation policy holds for a person too; the error is listed, kept.
    page.get_by_label("Address").fill("file:///etc/passwd")
    page.get_by_role("button", name="Go").click()
    expect(view.locator("[data-live-errors] li")).to_contain_text("(url)", timeout=WAIT)
    expect(view.locator("[data-live-title]")).to_have_text(f"Form — welcome {FORM_USER}")


_TRY_SOCKET = """url => new Promise(done => {
    const ws = new WebSocket(url);
    ws.onopen = () => { done("open"); ws.close(); };
    ws.onclose = event => done("refused " + event.code);
})"""


def test_another_sites_page_cannot_open_a_live_socket(page: Page, live: Live) -> None:
    # A page elsewhere that got hold of a ticket (or hopes to race one) never gets a
    # socket to send it on: the browser's Origin names the other site, the upgrade is
    # refused. The same script from the server's own page gets its socket.
    socket = live.url.replace("http://", "ws://") + "/v1/live-sessions/0123456789abcdef/socket"
    page.goto(live.sites.url(EVIL.removeprefix("http://"), "/__fixture/html?body=elsewhere"))
    assert page.evaluate(_TRY_SOCKET, socket) == "refused 1006"
    page.goto("/admin/sign-in")
    assert page.evaluate(_TRY_SOCKET, socket) == "open"
