"""Storage state files between Playwright and sitekeep, both ways, on Debian's Chromium
(SPEC §15): what Playwright writes imports, and what sitekeep exports Playwright loads —
signed in."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright

from fixtures.sites import Sites
from sitekeep.interop import export_site_data, import_text
from sitekeep.interop.files import convert_file

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

HOST_MAP = "MAP *.example.test 127.0.0.1, MAP *.other.test 127.0.0.1"
APP_IN = "App — signed in as alice"
TOKEN_IN = "Token — signed in as bob"


@pytest.fixture
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=True,
            args=["--no-sandbox", f"--host-resolver-rules={HOST_MAP}"],
        )
        yield browser
        await browser.close()


async def _titles(browser: Browser, state: Path, sites: Sites) -> tuple[str, str]:
    context = await browser.new_context(storage_state=str(state))
    page = await context.new_page()
    await page.goto(sites.url("app.example.test"))
    app = await page.title()
    await page.goto(sites.url("token.example.test"))
    token = await page.title()
    await context.close()
    return app, token


async def test_a_playwright_sign_in_imports_and_exports_back_into_playwright_signed_in(
    chromium: Browser, sites: Sites, tmp_path: Path
) -> None:
    context = await chromium.new_context()
    page = await context.new_page()
    await page.goto(sites.url("app.example.test", "/login"))
    assert await page.title() == APP_IN
    await page.goto(sites.url("token.example.test", "/login"))
    assert await page.title() == TOKEN_IN
    written = tmp_path / "playwright.json"
    await context.storage_state(path=str(written))
    await context.close()

    imported = import_text(written.read_text(encoding="utf-8"), None, time.time())
    names = {c.name for c in imported.site_data.cookies}
    assert {"app_session", "app_seen", "idp_session"} <= names
    assert "https://token.example.test" not in imported.site_data.origins
    assert any(o.startswith("http://token.example.test") for o in imported.site_data.origins)
    assert not imported.report.dropped
    assert {n.rule for n in imported.report.changed} <= {"expiry-fraction"}

    exported = tmp_path / "sitekeep.json"
    exported.write_bytes(export_site_data(imported.site_data, "storage-state").data)
    assert await _titles(chromium, exported, sites) == (APP_IN, TOKEN_IN)


async def test_a_storage_state_through_cookies_txt_keeps_the_cookie_sign_in(
    chromium: Browser, sites: Sites, tmp_path: Path
) -> None:
    """cookies.txt carries cookies only: the cookie sign-in survives, the token kept in
    localStorage does not — and the receipts say so."""
    context = await chromium.new_context()
    page = await context.new_page()
    await page.goto(sites.url("app.example.test", "/login"))
    await page.goto(sites.url("token.example.test", "/login"))
    source = tmp_path / "playwright.json"
    await context.storage_state(path=str(source))
    await context.close()

    there = convert_file(source, tmp_path / "cookies.txt", to="cookies-txt")
    assert there["dropped"].get("local-storage-not-carried", 0) >= 1
    back = convert_file(tmp_path / "cookies.txt", tmp_path / "back.json", to="storage-state")
    assert back["carried"]["cookies"] == there["carried"]["cookies"]
    app, token = await _titles(chromium, tmp_path / "back.json", sites)
    assert app == APP_IN
    assert token != TOKEN_IN
