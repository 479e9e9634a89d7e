"""The admin UI in a real browser: Playwright drives Debian's Chromium against a live
``sitekeep serve``, whose sessions are real Chromium sessions of sitekeep that signed in to
the fixture sites and saved (SPEC §11, §12).

Assertions are on the DOM, through roles and names; each test leaves a screenshot under
``.artifacts/`` (git-ignored; ``SITEKEEP_ARTIFACTS`` moves it) for CI to keep.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from conftest import HOST_RULES
from e2e.test_server_restart import SITEKEEP, Server
from fixtures.sites import APP_HOST, TABS_HOST, TOKEN_HOST, WWW_HOST, Sites

pytestmark = pytest.mark.e2e

ARTIFACTS = Path(os.environ.get("SITEKEEP_ARTIFACTS", Path(__file__).parents[2] / ".artifacts"))
EVIL = "http://evil.other.test"
SECRET_VALUE = "dummy-ui-pass-9c1e"
WAIT = 30_000  # ms: a deadline for polling, never a pause


@dataclass
class Live:
    """The running server, its tokens, and the agent's calls (a member of t1)."""

    server: Server
    sites: Sites
    admin: str
    intruder: str
    member: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    def agent(self, path: str, body: Any = None, method: str = "POST") -> dict[str, Any]:
        reply = self.server.http.request(method, path, json=body)
        assert reply.status_code == 200, reply.text
        result: dict[str, Any] = reply.json()
        return result

    def admin_api(self, method: str, path: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.admin}"}
        return self.server.http.request(method, path, headers=headers)

    def hosts(self, key: str) -> list[str]:
        reply = self.admin_api("GET", f"/admin/sessions/{key}/site-data")
        return [h["site"] for h in reply.json()["hosts"]]

    def signed_in_session(self, key: str, *, keep_browser: bool = False) -> None:
        """An agent signs in to the app (through the IdP), gets a token, a parent-domain
        cookie and a cart, saves once while on the cart, and (usually) closes its browser."""
        url = self.sites.url
        opened = self.agent("/v1/sessions", {"key": key, "url": url(APP_HOST, "/login")})
        assert opened["title"] == "App — signed in as alice"
        for page in (url(TOKEN_HOST, "/login"), url(WWW_HOST, "/set-parent")):
            self.agent(f"/v1/sessions/{key}/navigate", {"url": page})
        self.agent(f"/v1/sessions/{key}/navigate", {"url": url(TABS_HOST, "/add")})
        self.agent(f"/v1/sessions/{key}/save-site-data")
        if not keep_browser:
            self.agent(f"/v1/sessions/{key}/browser", method="DELETE")


def _token(server: Server, tenant: str, subject: str, *admin: str) -> str:
    created = subprocess.run(
        [SITEKEEP, "token", "create", "--tenant", tenant, "--subject", subject, *admin],
        env=server.env,
        capture_output=True,
        text=True,
        check=True,
    )
    return created.stdout.strip()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, sites: Sites) -> Iterator[Live]:
    server = Server(tmp_path_factory.mktemp("ui") / "data", cache_dir, "chromium")
    member = server.http.headers["Authorization"].removeprefix("Bearer ")
    admin = _token(server, "t1", "boss", "--admin")
    intruder = _token(server, "t2", "intruder", "--admin")
    server.start()
    running = Live(server, sites, admin, intruder, member)
    secret = {"description": "staging sign-in", "hosts": ["*.example.test"], "values": {}}
    secret["values"] = {"username": "carol", "password": SECRET_VALUE}
    reply = server.http.put("/v1/secrets/staging", json=secret, headers=_bearer(admin))
    assert reply.status_code == 200, reply.text
    yield running
    server.kill()
    server.http.close()
    subprocess.run([SITEKEEP, "stop"], env=server.env, capture_output=True, timeout=120)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def shown(live: Live) -> str:
    """A signed-in, saved session that tests only look at."""
    live.signed_in_session("ui-shown")
    return "ui-shown"


@pytest.fixture(scope="module")
def chrome() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", HOST_RULES.replace('"', "")],
        )
        yield browser
        browser.close()


@pytest.fixture
def context(chrome: Browser, live: Live) -> Iterator[BrowserContext]:
    context = chrome.new_context(base_url=live.url)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext, request: pytest.FixtureRequest) -> Iterator[Page]:
    page = context.new_page()
    yield page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"ui-{request.node.name}.png", full_page=True)


def sign_in(page: Page, token: str) -> None:
    page.goto("/admin/sign-in")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def open_session(page: Page, key: str, tab: str = "site-data") -> None:
    page.goto(f"/admin/ui/sessions/{key}?tab={tab}")
    expect(page.get_by_role("heading", name=f"Session {key}")).to_be_visible()


def pane(page: Page, name: str) -> Any:
    return page.get_by_role("tabpanel", name=name)


def row_hosts(page: Page, which: str) -> list[str]:
    hosts: list[str] = page.locator(f'[data-pane="{which}"] .rows > li').evaluate_all(
        "rows => rows.map(r => r.dataset.row)"
    )
    return hosts


def polls(page: Page) -> int:
    """How many revision polls the page has finished (admin.js counts them)."""
    done: str | None = page.locator("html").get_attribute("data-polls")
    return int(done or 0)


def wait_for_polls(page: Page, count: int) -> None:
    """Until the page has finished ``count`` polls; a deadline, never a fixed pause."""
    deadline = time.monotonic() + WAIT / 1000
    while polls(page) < count:
        assert time.monotonic() < deadline, f"the page finished {polls(page)} polls, not {count}"
        page.wait_for_timeout(100)


def csrf_of(page: Page) -> str:
    headers = json.loads(page.locator("body").get_attribute("hx-headers") or "{}")
    token: str = headers["X-CSRF-Token"]
    return token


# -- signing in ---------------------------------------------------------------------------


def test_sign_in_trades_the_token_for_a_strict_httponly_cookie(
    page: Page, context: BrowserContext, live: Live
) -> None:
    page.goto("/admin")
    expect(page).to_have_url(re.compile("/admin/sign-in$"))
    sign_in(page, live.admin)
    [cookie] = context.cookies()
    assert cookie["name"] == "sitekeep_admin"
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/admin" and cookie["secure"] is False  # plain http here
    assert live.admin not in cookie["value"] and live.admin not in page.content()
    assert page.evaluate("document.cookie") == ""  # no script can read it
    headers = page.request.get("/admin").headers
    assert headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "script-src 'self'" in headers["content-security-policy"]


@pytest.mark.parametrize("who", ["member", "unknown"])
def test_only_an_admin_token_signs_in(
    page: Page, context: BrowserContext, live: Live, who: str
) -> None:
    page.goto("/admin/sign-in")
    page.get_by_label("Admin token").fill(live.member if who == "member" else "sk_not-a-token")
    page.get_by_role("button", name="Sign in").click()
    message = "member's token" if who == "member" else "not a token of this server"
    expect(page.get_by_role("alert").filter(has_text=message)).to_be_visible()
    assert context.cookies() == []


def test_a_planted_cookie_never_becomes_a_sign_in(
    page: Page, context: BrowserContext, chrome: Browser, live: Live
) -> None:
    # Planted on the whole host (Path=/), as a page of a related origin could: it must
    # neither sign the browser in nor shadow the real sign-in once there is one.
    planted = {"name": "sitekeep_admin", "value": "attacker-chosen-id", "url": live.url}
    context.add_cookies([planted])  # type: ignore[list-item]
    page.goto("/admin")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

    def ours() -> str:
        [cookie] = [c for c in context.cookies() if c["path"] == "/admin"]
        return cookie["value"]

    sign_in(page, live.admin)
    first = ours()
    assert first != "attacker-chosen-id"
    sign_in(page, live.admin)  # signing in again ends the sign-in the browser had
    second = ours()
    assert second != first
    for stale in ("attacker-chosen-id", first):
        other = chrome.new_context(base_url=live.url)
        other.add_cookies([{**planted, "value": stale, "url": live.url + "/admin/"}])  # type: ignore[list-item]
        probe = other.new_page()
        probe.goto("/admin")
        expect(probe.get_by_role("heading", name="Sign in")).to_be_visible()
        other.close()


def test_sign_out_ends_the_sign_in(
    page: Page, context: BrowserContext, chrome: Browser, live: Live
) -> None:
    sign_in(page, live.admin)
    sid = context.cookies()[0]["value"]
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("status").filter(has_text="Signed out.")).to_be_visible()
    assert context.cookies() == []
    replay = chrome.new_context(base_url=live.url)
    replay.add_cookies([{"name": "sitekeep_admin", "value": sid, "url": live.url + "/admin"}])
    probe = replay.new_page()
    probe.goto("/admin")
    expect(probe.get_by_role("heading", name="Sign in")).to_be_visible()
    replay.close()


# -- the tabs -----------------------------------------------------------------------------


def test_site_data_lists_the_snapshot_by_host_with_the_top_row_open(
    page: Page, live: Live, shown: str
) -> None:
    sign_in(page, live.admin)
    page.get_by_role("link", name=shown).click()
    tab = page.get_by_role("tab", name="Site data")
    expect(tab).to_have_attribute("aria-selected", "true")
    expect(tab).to_contain_text("4")
    site = pane(page, "Site data")
    expect(site.get_by_text(re.compile(r"^saved (just now|\dm ago)$"))).to_be_visible()
    # History hosts first, most recent first (tabs, www has nothing of its own, token,
    # app), then the rest alphabetically (the IdP, reached only by a redirect).
    assert row_hosts(page, "site-data") == [TABS_HOST, TOKEN_HOST, APP_HOST, "id.example.test"]
    top = site.get_by_role("button", name=f"http://{TABS_HOST}:{live.sites.port}")
    expect(top).to_have_attribute("aria-expanded", "true")
    tabs_data = site.get_by_role("region", name=f"Site data of {TABS_HOST}")
    expect(tabs_data.get_by_role("heading", name="Session storage")).to_be_visible()
    expect(tabs_data.get_by_role("cell", name="cart", exact=True)).to_be_visible()
    # The parent-domain cookie is listed under the row it covers, marked shared.
    expect(tabs_data.get_by_role("cell", name="pref shared", exact=True)).to_be_visible()
    # A cookie-only host is labelled by its host and counts its cookies alone.
    app = site.get_by_role("button", name=APP_HOST, exact=True)
    expect(app).to_have_attribute("aria-expanded", "false")
    expect(site.locator(f'[data-row="{APP_HOST}"] .meta')).to_have_text("3 cookies")
    app.click()
    app_data = site.get_by_role("region", name=f"Site data of {APP_HOST}")
    session_row = app_data.get_by_role("row").filter(has_text="app_session")
    expect(session_row.get_by_role("cell", name="•••", exact=True)).to_be_visible()
    expect(app_data.get_by_text("dummy-app-")).to_have_count(0)  # the httpOnly value
    expect(app_data.get_by_role("heading", name="Local storage")).to_be_visible()
    expect(app_data.get_by_text("none")).to_have_count(2)


def test_history_folds_joins_secrets_and_its_pills_open_site_data(
    page: Page, live: Live, shown: str
) -> None:
    sign_in(page, live.admin)
    open_session(page, shown, "history")
    history = pane(page, "History")
    expect(page.get_by_role("tab", name="History")).to_contain_text("4")
    assert row_hosts(page, "history") == [TABS_HOST, WWW_HOST, TOKEN_HOST, APP_HOST]
    port = live.sites.port
    top = history.get_by_role("button", name=f"http://{TABS_HOST}:{port}/add")
    expect(top).to_have_attribute("aria-expanded", "true")  # the top row opens once
    secrets = history.get_by_role("list", name=f"Secrets allowed on {TABS_HOST}")
    expect(secrets).to_contain_text("staging")
    expect(secrets).to_contain_text("staging sign-in")
    expect(secrets.get_by_text("password", exact=True)).to_be_visible()
    expect(history.get_by_text(SECRET_VALUE)).to_have_count(0)
    www = history.locator(f'[data-row="{WWW_HOST}"]')
    expect(www.locator(".meta")).to_have_text(re.compile(r"^(just now|\dm ago) · 1 secret$"))
    expect(www.locator("[data-open-site]")).to_have_count(0)  # nothing of www's own is saved
    token = history.get_by_role("button", name=f"http://{TOKEN_HOST}:{port}/login")
    expect(token).to_have_attribute("aria-expanded", "false")
    token.click()
    expect(history.get_by_role("list", name=f"Secrets allowed on {TOKEN_HOST}")).to_be_visible()
    top.click()
    expect(top).to_have_attribute("aria-expanded", "false")
    pill = history.locator(f'[data-row="{APP_HOST}"]').get_by_role("button", name="3 cookies")
    pill.click()
    expect(page.get_by_role("tab", name="Site data")).to_have_attribute("aria-selected", "true")
    app = pane(page, "Site data").get_by_role("button", name=APP_HOST, exact=True)
    expect(app).to_have_attribute("aria-expanded", "true")
    expect(app).to_be_focused()


def test_a_pane_repaints_only_for_its_own_revision_and_folds_stay_the_readers(
    page: Page, live: Live
) -> None:
    live.signed_in_session("ui-revs", keep_browser=True)
    sign_in(page, live.admin)
    open_session(page, "ui-revs", "history")
    history = pane(page, "History")
    history.get_by_role("button", name=re.compile(f"{TOKEN_HOST}")).click()  # reader opens
    history.get_by_role("button", name=re.compile(f"{TABS_HOST}")).click()  # and closes top
    mark = "which => document.querySelector(`[data-pane='${which}'] .pane`).dataset.mark = 'old'"
    for which in ("history", "site-data"):
        page.evaluate(mark, which)

    # A new page on the app: History's revision moves, Site data's does not.
    app_page = live.sites.url(APP_HOST, "/__fixture/page?title=Inbox")
    live.agent("/v1/sessions/ui-revs/navigate", {"url": app_page})
    expect(page.locator("[data-pane='history'] .pane[data-mark]")).to_have_count(0, timeout=WAIT)
    expect(history.get_by_role("button", name="__fixture/page?title=Inbox")).to_be_visible()
    wait_for_polls(page, polls(page) + 2)  # a whole poll has run since
    expect(page.locator("[data-pane='site-data'] .pane[data-mark]")).to_have_count(1)
    # The reader's folds survived the repaint; the new top row did not open by itself.
    token = history.get_by_role("button", name=re.compile(TOKEN_HOST))
    expect(token).to_have_attribute("aria-expanded", "true")
    expect(history.get_by_role("button", name=re.compile(APP_HOST))).to_have_attribute(
        "aria-expanded", "false"
    )

    # A save on the same page: Site data's revision moves, History's does not.
    page.evaluate(mark, "history")
    live.agent("/v1/sessions/ui-revs/save-site-data")
    expect(page.locator("[data-pane='site-data'] .pane[data-mark]")).to_have_count(0, timeout=WAIT)
    wait_for_polls(page, polls(page) + 2)
    expect(page.locator("[data-pane='history'] .pane[data-mark]")).to_have_count(1)
    live.agent("/v1/sessions/ui-revs/browser", method="DELETE")


def test_forget_and_clear_leave_the_other_tab_and_the_live_browser_alone(
    page: Page, live: Live
) -> None:
    live.signed_in_session("ui-forget", keep_browser=True)
    sign_in(page, live.admin)
    open_session(page, "ui-forget")
    site = pane(page, "Site data")

    site.get_by_role("button", name=f"Forget {TOKEN_HOST}").click()
    dialog = page.get_by_role("dialog", name=f"Forget {TOKEN_HOST}")
    expect(dialog.get_by_role("list", name="Goes")).to_contain_text("its local storage (1)")
    expect(dialog.get_by_role("list", name="Stays")).to_contain_text("every other host")
    dialog.get_by_role("button", name="Forget").click()
    expect(site.locator(f'[data-row="{TOKEN_HOST}"]')).to_have_count(0)
    assert row_hosts(page, "site-data") == [TABS_HOST, APP_HOST, "id.example.test"]
    expect(page.get_by_role("tab", name="Site data")).to_contain_text("3")
    assert live.hosts("ui-forget") == [TABS_HOST, APP_HOST, "id.example.test"]

    page.get_by_role("tab", name="History").click()
    history = pane(page, "History")
    assert row_hosts(page, "history") == [TABS_HOST, WWW_HOST, TOKEN_HOST, APP_HOST]
    # Its pill followed the snapshot without a repaint of History.
    expect(history.locator(f'[data-row="{TOKEN_HOST}"] [data-open-site]')).to_be_hidden()

    history.get_by_role("button", name="Clear", exact=True).click()
    dialog = page.get_by_role("dialog", name="Clear history")
    expect(dialog).to_contain_text("History only: site data and the browser are untouched.")
    expect(dialog.get_by_role("list", name="Goes")).to_have_text(
        re.compile(f"{WWW_HOST}.*{TOKEN_HOST}.*{APP_HOST}")
    )
    expect(dialog.get_by_role("list", name="Stays")).to_have_text(TABS_HOST)
    dialog.get_by_role("button", name="Clear history").click()
    expect(history.locator(".rows > li")).to_have_count(1)
    expect(history.get_by_role("button", name="Clear", exact=True)).to_have_count(0)
    assert row_hosts(page, "site-data") == [TABS_HOST, APP_HOST, "id.example.test"]
    assert live.hosts("ui-forget") == [TABS_HOST, APP_HOST, "id.example.test"]

    page.get_by_role("tab", name="Site data").click()
    site.get_by_role("button", name="Clear", exact=True).click()
    dialog = page.get_by_role("dialog", name="Clear site data")
    expect(dialog).to_contain_text("3 sites — a reopened browser comes back signed out.")
    dialog.get_by_role("button", name="Clear site data").click()
    expect(site).to_contain_text("Nothing saved — an agent calls save_site_data after signing in.")
    assert live.hosts("ui-forget") == []
    assert row_hosts(page, "history") == [TABS_HOST]

    # The live browser still has everything: only the stored snapshot changed.
    url = live.sites.url
    went = live.agent("/v1/sessions/ui-forget/navigate", {"url": url(TOKEN_HOST, "/")})
    assert went["title"] == "Token — signed in as bob"
    went = live.agent("/v1/sessions/ui-forget/navigate", {"url": url(APP_HOST, "/")})
    assert went["title"] == "App — signed in as alice"
    live.agent("/v1/sessions/ui-forget/browser", method="DELETE")


def test_versions_list_earlier_saves_and_restoring_one_signs_the_reopen_back_in(
    page: Page, live: Live
) -> None:
    """Issue #26: an explicit save after a sign-out (the token app forgets its token in
    the page; the server would still take it) replaced a signed-in snapshot; the Versions
    tab shows it and brings it back."""
    live.signed_in_session("ui-versions", keep_browser=True)
    url = live.sites.url
    live.agent("/v1/sessions/ui-versions/navigate", {"url": url(TOKEN_HOST, "/logout")})
    out = live.agent("/v1/sessions/ui-versions/navigate", {"url": url(TOKEN_HOST, "/")})
    assert out["title"] == "Token — signed out"  # and where a reopen lands
    live.agent("/v1/sessions/ui-versions/save-site-data")
    sign_in(page, live.admin)
    open_session(page, "ui-versions", tab="versions")
    expect(page.get_by_role("tab", name="Versions")).to_contain_text("1")
    versions = pane(page, "Versions")
    [version] = page.locator('[data-pane="versions"] .rows > li').evaluate_all(
        "rows => rows.map(r => r.dataset.row)"
    )
    fold = versions.get_by_role("button", name=re.compile(r"^saved "))
    expect(fold).to_have_attribute("aria-expanded", "false")
    fold.click()
    sites = versions.get_by_role("region", name=f"Version {version}")
    token_row = sites.get_by_role("row").filter(has_text=TOKEN_HOST)
    expect(token_row.get_by_role("cell").nth(3)).to_contain_text("1 · ")  # its token
    expect(sites.get_by_text("dummy-")).to_have_count(0)  # never a value
    site_rev = page.locator('[data-pane="site-data"] .pane').get_attribute("data-rev")

    versions.get_by_role("button", name=f"Restore {version}").click()
    dialog = page.get_by_role("dialog", name=f"Restore {version}")
    expect(dialog.get_by_role("list", name="Comes back")).to_contain_text(TOKEN_HOST)
    expect(dialog).to_contain_text("the live browser keeps what it has")
    dialog.get_by_role("button", name="Restore").click()
    expect(page.get_by_role("tab", name="Versions")).to_contain_text("2")
    expect(versions.locator(".rows > li")).to_have_count(2)
    # Site data repaints on the next poll: its revision moved with the restore.
    wait_for_polls(page, polls(page) + 2)
    after = page.locator('[data-pane="site-data"] .pane').get_attribute("data-rev")
    assert after != site_rev
    journal = live.admin_api("GET", "/admin/sessions/ui-versions/journal").json()["rows"]
    assert {"version": version} in [r.get("args") for r in journal]

    # The hint's way: a close without its automatic save (which would replace the version).
    live.agent("/v1/sessions/ui-versions/browser?autosave=false", method="DELETE")
    reopened = live.agent("/v1/sessions", {"key": "ui-versions"})
    assert reopened["title"] == "Token — signed in as bob"
    live.agent("/v1/sessions/ui-versions/browser", method="DELETE")


def test_an_empty_session_says_so_in_both_tabs(page: Page, live: Live) -> None:
    live.agent("/v1/sessions", {"key": "ui-empty"})
    live.agent("/v1/sessions/ui-empty/browser", method="DELETE")
    sign_in(page, live.admin)
    open_session(page, "ui-empty")
    expect(pane(page, "Site data")).to_have_text(
        "Nothing saved — an agent calls save_site_data after signing in."
    )
    page.get_by_role("tab", name="History").click()
    expect(pane(page, "History")).to_have_text("Nowhere yet.")


# -- attacks ------------------------------------------------------------------------------


def test_hostile_keys_names_and_urls_render_as_text(page: Page, live: Live) -> None:
    url = live.sites.url
    key = "<img src=x onerror=window.__pwned=1>"
    value = "<script>window.__pwned=2</script>"
    cookie = {"name": "<b>bold</b>", "value": "<img src=y onerror=window.__pwned=3>"}
    title = "<img src=z onerror=window.__pwned=4>"
    live.agent("/v1/sessions", {"key": "ui-xss", "url": url(TOKEN_HOST, "/__fixture/ls?")})
    for path in (
        "/__fixture/ls?" + urlencode({key: value}),
        "/__fixture/cookie?" + urlencode(cookie),
        "/__fixture/page?" + urlencode({"title": title, "'\"><i>": "x"}),
    ):
        live.agent("/v1/sessions/ui-xss/navigate", {"url": url(TOKEN_HOST, path)})
    live.agent("/v1/sessions/ui-xss/save-site-data")
    live.agent("/v1/sessions/ui-xss/browser", method="DELETE")

    sign_in(page, live.admin)
    open_session(page, "ui-xss")
    data = pane(page, "Site data").get_by_role("region", name=f"Site data of {TOKEN_HOST}")
    expect(data.get_by_role("cell", name=key, exact=True)).to_be_visible()
    expect(data.get_by_role("cell", name=value, exact=True)).to_be_visible()
    expect(data.get_by_role("cell", name=cookie["name"], exact=True)).to_be_visible()
    expect(data.get_by_role("cell", name=cookie["value"], exact=True)).to_be_visible()
    page.get_by_role("tab", name="History").click()
    expect(pane(page, "History").locator(".url")).to_contain_text("/__fixture/page?title=")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img, main script, main b, main i").count() == 0


def test_writes_need_the_csrf_token_and_this_origin(
    page: Page, context: BrowserContext, live: Live
) -> None:
    live.signed_in_session("ui-csrf")
    sign_in(page, live.admin)
    open_session(page, "ui-csrf")
    target = "/admin/ui/sessions/ui-csrf/panes/site-data"
    # The signed-in browser's own script, cookie sent, without the token.
    status = page.evaluate(f"fetch('{target}', {{method: 'DELETE'}}).then(r => r.status)")
    assert status == 403
    token = csrf_of(page)
    forged = page.request.delete(target, headers={"X-CSRF-Token": token, "Origin": EVIL})
    assert forged.status == 403
    wrong = page.request.delete(target, headers={"X-CSRF-Token": token[::-1]})
    assert wrong.status == 403
    form = {"name": "forged", "hosts": "app.example.test", "values": "password=x"}
    assert page.request.post("/admin/ui/secrets", form=form).status == 403
    assert live.hosts("ui-csrf") == [TABS_HOST, TOKEN_HOST, APP_HOST, "id.example.test"]
    # The same write with the token from this origin goes through.
    done = page.request.delete(target, headers={"X-CSRF-Token": token, "Origin": live.url})
    assert done.status == 200 and live.hosts("ui-csrf") == []


def test_another_sites_page_never_sends_the_cookie_nor_frames_the_ui(
    page: Page, live: Live
) -> None:
    sign_in(page, live.admin)
    token = csrf_of(page)
    fields = {"csrf": token, "name": "planted", "hosts": "app.example.test", "values": "k=x"}
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    framed = live.sites.url(WWW_HOST, "/__fixture/page?title=Framed")
    markup = (
        f'<a href="{live.url}/admin">Admin</a>'
        f'<form id="f" method="post" action="{live.url}/admin/ui/secrets">{inputs}</form>'
        f'<iframe title="admin" src="{live.url}/admin/sign-in"></iframe>'
        f'<iframe title="control" src="{framed}"></iframe>'
    )
    # Another site's page, served from this machine like the UI (a public page reaching
    # for a local one would be stopped by the browser for that reason alone).
    evil = live.sites.url("evil.other.test", "/__fixture/html?" + urlencode({"body": markup}))
    page.goto(evil)
    # The control frame loads: frames do load here. The admin UI's does not.
    control = page.frame_locator('iframe[title="control"]')
    expect(control.get_by_role("heading", name="Framed")).to_be_visible()
    handle = page.locator('iframe[title="admin"]').element_handle()
    admin = handle.content_frame() if handle else None
    assert admin is not None
    assert not admin.url.startswith(live.url), admin.url  # an error page stands in
    assert admin.get_by_role("heading", name="Sign in").count() == 0
    # A link from another site: SameSite=Strict keeps the cookie home, so no sign-in.
    page.get_by_role("link", name="Admin").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    # A form another site submits, even with a leaked CSRF token, changes nothing.
    page.goto(evil)
    with page.expect_navigation():
        page.evaluate("document.getElementById('f').submit()")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    names = [s["name"] for s in live.admin_api("GET", "/v1/secrets").json()["secrets"]]
    assert "planted" not in names
    page.goto("/admin")  # typed by the person: the cookie goes, still signed in
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def test_another_tenants_admin_sees_none_of_the_sessions(
    page: Page, live: Live, shown: str
) -> None:
    sign_in(page, live.intruder)
    expect(page.get_by_text("No sessions yet")).to_be_visible()
    token = csrf_of(page)
    page.goto(f"/admin/ui/sessions/{shown}")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    expect(page.get_by_role("alert").filter(has_text=f"no session named '{shown}'")).to_be_visible()
    for path in ("panes/history", "panes/site-data", f"panes/site-data/{APP_HOST}", "row"):
        assert page.request.get(f"/admin/ui/sessions/{shown}/{path}").status == 404, path
    target = f"/admin/ui/sessions/{shown}/panes/site-data"
    gone = page.request.delete(target, headers={"X-CSRF-Token": token})
    assert gone.status == 404 and live.hosts(shown)


# -- secrets ------------------------------------------------------------------------------


def test_secrets_are_created_listed_and_deleted_with_values_write_only(
    page: Page, live: Live
) -> None:
    sign_in(page, live.admin)
    page.get_by_role("link", name="Secrets").click()
    expect(page.get_by_role("heading", name="Secrets", exact=True)).to_be_visible()

    page.get_by_label("Name").fill("ui-login")
    page.get_by_label("Description").fill("<i>form sign-in</i>")
    page.get_by_label("Hosts it may be typed on").fill("https://form.example.test")
    page.get_by_label("Values").fill(f"username=carol\npassword={SECRET_VALUE}")
    page.get_by_role("button", name="Save secret").click()
    expect(page.get_by_role("alert").filter(has_text="hosts[0]")).to_be_visible()
    expect(page.get_by_label("Name")).to_have_value("ui-login")  # kept
    expect(page.get_by_label("Values")).to_have_value("")  # never put back
    assert SECRET_VALUE not in page.content()

    page.get_by_label("Hosts it may be typed on").fill("form.example.test\n*.other.test")
    page.get_by_label("Values").fill(f"username=carol\npassword={SECRET_VALUE}")
    page.get_by_role("button", name="Save secret").click()
    expect(page.get_by_role("status").filter(has_text="Saved ui-login.")).to_be_visible()
    row = page.get_by_role("row").filter(has_text="ui-login")
    expect(row).to_contain_text("<i>form sign-in</i>")
    expect(row).to_contain_text("form.example.test, *.other.test")
    expect(row.get_by_text("password", exact=True)).to_be_visible()
    expect(page.get_by_label("Values")).to_have_value("")
    assert SECRET_VALUE not in page.content()

    row.get_by_role("button", name="Delete ui-login").click()
    page.get_by_role("dialog", name="Delete ui-login").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status").filter(has_text="Deleted ui-login.")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="ui-login")).to_have_count(0)


# -- tokens -------------------------------------------------------------------------------


def test_tokens_list_by_id_and_revoking_ends_that_tokens_sign_in(
    page: Page, chrome: Browser, live: Live
) -> None:
    deputy = _token(live.server, "t1", "deputy", "--admin")
    deputy_id = hashlib.sha256(deputy.encode()).hexdigest()[:16]
    other = chrome.new_context(base_url=live.url)
    elsewhere = other.new_page()
    sign_in(elsewhere, deputy)

    sign_in(page, live.admin)
    page.get_by_role("link", name="Tokens").click()
    expect(page.get_by_role("heading", name="Tokens", exact=True)).to_be_visible()
    row = page.get_by_role("row").filter(has_text=deputy_id)
    expect(row).to_contain_text("deputy")
    expect(page.get_by_role("row").filter(has_text="intruder")).to_have_count(0)  # t2's
    assert deputy not in page.content() and live.admin not in page.content()

    row.get_by_role("button", name=f"Revoke {deputy_id}").click()
    dialog = page.get_by_role("dialog", name=f"Revoke {deputy_id}")
    dialog.get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("status").filter(has_text=f"Revoked {deputy_id}.")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text=deputy_id)).to_have_count(0)

    elsewhere.goto("/admin")  # the deputy's sign-in ended with its token
    expect(elsewhere).to_have_url(re.compile("/admin/sign-in$"))
    other.close()
