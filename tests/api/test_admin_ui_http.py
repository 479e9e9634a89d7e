"""The admin UI's server rules through the real app in-process (no browser): sign-in and its
cookie, CSRF and Origin on every write, headers on every ``/admin`` response, static files
shipped in the package. ``tests/ui`` drives the same pages in a real Chromium."""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import html5lib
import httpx
import jinja2
import pytest

from sitekeep.args import CreateBody
from sitekeep.model import Principal, SignIn
from sitekeep.seam import Session
from sitekeep.service import Service
from sitekeep.service.signins import SIGN_IN_TTL
from support import WHO, Api, ApiFactory

from .test_admin_http import HISTORY, NOW, SNAPSHOT, seed

pytestmark = pytest.mark.anyio

OWN = "http://sitekeep.test"
STATIC = resources.files("sitekeep.api.ui") / "static"
TEMPLATES = resources.files("sitekeep.api.ui") / "templates"


@dataclass
class Ui:
    """A cookie-keeping client of one app, and the tokens of t1 (admin, member), t2."""

    http: httpx.AsyncClient
    service: Service
    admin: str
    member: str
    intruder: str
    csrf: str = ""

    async def sign_in(self, token: str | None = None, **headers: str) -> httpx.Response:
        reply = await self.http.post(
            "/admin/sign-in", data={"token": token or self.admin}, headers=headers
        )
        if reply.status_code == 303:
            page = await self.http.get("/admin")
            found = re.search(r'name="csrf" value="([^"]+)"', page.text)
            self.csrf = found.group(1) if found else ""
        return reply

    async def snapshot_hosts(self) -> list[str]:
        pane = await self.service.admin.site_data(Principal(WHO.tenant, "boss", "admin"), "s1")
        return [r.site for r in pane.rows]


@pytest.fixture
async def ui(make_api: ApiFactory) -> AsyncIterator[Ui]:
    api: Api = await make_api()
    await seed(api.service, "s1", HISTORY, SNAPSHOT)
    http = httpx.AsyncClient(transport=api.http._transport, base_url=OWN)
    yield Ui(
        http,
        api.service,
        admin=await api.service.catalogue.create_token(WHO.tenant, "boss", "admin"),
        member=await api.service.catalogue.create_token(WHO.tenant, "agent", "member"),
        intruder=await api.service.catalogue.create_token("t2", "intruder", "admin"),
    )
    await http.aclose()


PAGES = ["/admin", "/admin/ui/sessions/s1", "/admin/ui/secrets", "/admin/ui/tokens"]
PARTIALS = [
    "/admin/ui/sessions/s1/panes/history",
    "/admin/ui/sessions/s1/panes/site-data",
    "/admin/ui/sessions/s1/panes/site-data/app.example.test",
    "/admin/ui/sessions/s1/panes/journal",
]
WRITES = [
    ("DELETE", "/admin/ui/sessions/s1/panes/history"),
    ("DELETE", "/admin/ui/sessions/s1/panes/site-data"),
    ("DELETE", "/admin/ui/sessions/s1/panes/site-data/app.example.test"),
    ("POST", "/admin/ui/secrets"),
    ("POST", "/admin/ui/secrets/staging/delete"),
    ("POST", "/admin/sign-out"),
]


async def test_nothing_but_sign_in_answers_without_a_sign_in(ui: Ui) -> None:
    for path in PAGES:
        reply = await ui.http.get(path)
        assert reply.status_code == 303 and reply.headers["location"] == "/admin/sign-in", path
    for path in PARTIALS:
        reply = await ui.http.get(path, headers={"HX-Request": "true"})
        assert reply.status_code == 401 and reply.headers["hx-redirect"] == "/admin/sign-in"
    assert (await ui.http.get("/admin/ui/sessions/s1/row")).status_code == 401
    for method, path in WRITES:
        reply = await ui.http.request(method, path, headers={"Origin": OWN})
        assert reply.status_code in (303, 401), (method, path)
    assert await ui.snapshot_hosts() == ["app.example.test", "id.example.test", "ads.cdn.test"]
    assert (await ui.http.get("/admin/sign-in")).status_code == 200


async def test_sign_in_sets_a_strict_httponly_cookie_holding_no_token(ui: Ui) -> None:
    reply = await ui.sign_in(Origin=OWN)
    assert reply.status_code == 303 and reply.headers["location"] == "/admin"
    cookie = reply.headers["set-cookie"]
    attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
    assert attributes == {"httponly", "max-age", "path", "samesite"}  # not Secure over http
    assert "SameSite=strict" in cookie and "Path=/admin" in cookie
    assert f"Max-Age={int(SIGN_IN_TTL)}" in cookie
    sid = cookie.split(";")[0].split("=", 1)[1]
    assert ui.admin not in cookie and sid != ui.admin
    # The store keeps the id's hash with the principal, never the id nor the token.
    store = ui.service.parts.stores.sessions
    [key] = await store.keys("admin-sign-in/")
    assert key == "admin-sign-in/" + hashlib.sha256(sid.encode()).hexdigest()
    kept = await store.get(key)
    assert kept is not None and sid.encode() not in kept and ui.admin.encode() not in kept
    page = await ui.http.get("/admin/ui/sessions/s1")
    assert page.status_code == 200 and ui.admin not in page.text


async def test_the_cookie_is_secure_over_https(ui: Ui) -> None:
    https = httpx.AsyncClient(transport=ui.http._transport, base_url="https://sitekeep.test")
    reply = await https.post("/admin/sign-in", data={"token": ui.admin})
    assert reply.status_code == 303 and "; secure" in reply.headers["set-cookie"].lower()


@pytest.mark.parametrize(
    ("who", "headers", "status"),
    [
        ("member", {}, 403),
        ("nobody", {}, 401),
        ("admin", {"Origin": "http://evil.other.test"}, 403),
        ("admin", {"Origin": "null"}, 403),
        ("admin", {"Sec-Fetch-Site": "cross-site"}, 403),
        ("admin", {"Sec-Fetch-Site": "same-site"}, 403),
    ],
)
async def test_a_sign_in_is_refused_to_members_strangers_and_other_sites(
    ui: Ui, who: str, headers: dict[str, str], status: int
) -> None:
    token = {"member": ui.member, "nobody": "sk_unknown", "admin": ui.admin}[who]
    reply = await ui.sign_in(token, **headers)
    assert reply.status_code == status and "set-cookie" not in reply.headers
    assert await ui.service.parts.stores.sessions.keys("admin-sign-in/") == []


async def test_signing_in_again_ends_the_sign_in_the_browser_had(ui: Ui) -> None:
    await ui.sign_in()
    first = ui.http.cookies["sitekeep_admin"]
    await ui.sign_in()
    second = ui.http.cookies["sitekeep_admin"]
    assert first != second
    assert await ui.service.sign_ins.signed_in(first) is None
    assert await ui.service.sign_ins.signed_in(second) is not None


async def test_a_sign_in_expires(ui: Ui, monkeypatch: pytest.MonkeyPatch) -> None:
    await ui.sign_in()
    assert (await ui.http.get("/admin")).status_code == 200
    now = ui.service.sign_ins._clock()
    monkeypatch.setattr(ui.service.sign_ins, "_clock", lambda: now + SIGN_IN_TTL + 1)
    assert (await ui.http.get("/admin")).status_code == 303


@pytest.mark.parametrize(("method", "path"), WRITES)
async def test_every_write_needs_the_token_and_this_origin(ui: Ui, method: str, path: str) -> None:
    await seed(ui.service, "s1", HISTORY, SNAPSHOT)
    await ui.service.parts.vault.put(WHO.tenant, "staging", "", ["app.example.test"], {"k": "v"})
    await ui.sign_in()
    form = {"name": "planted", "hosts": "app.example.test", "values": "k=v"}
    forged: list[dict[str, str]] = [
        {},
        {"X-CSRF-Token": ui.csrf[::-1]},
        {"X-CSRF-Token": ui.csrf, "Origin": "http://evil.other.test"},
        {"X-CSRF-Token": ui.csrf, "Origin": "http://sitekeep.test:8080"},
        {"X-CSRF-Token": ui.csrf, "Origin": "null"},
        {"X-CSRF-Token": ui.csrf, "Sec-Fetch-Site": "cross-site"},
    ]
    for headers in forged:
        kwargs: dict[str, Any] = {"headers": headers}
        if method == "POST":
            kwargs["data"] = {**form, "csrf": "not-it"}
        reply = await ui.http.request(method, path, **kwargs)
        assert reply.status_code == 403, (headers, reply.text)
    assert await ui.snapshot_hosts() == ["app.example.test", "id.example.test", "ads.cdn.test"]
    record = await ui.service.parts.seam.records.load(WHO.tenant, "s1")
    assert record is not None and record.history == HISTORY
    names = [s.name for s in await ui.service.parts.vault.list(WHO.tenant)]
    assert names == ["staging"]
    assert (await ui.http.get("/admin")).status_code == 200  # still signed in

    kwargs = {"headers": {"Origin": OWN, "X-CSRF-Token": ui.csrf}}
    if method == "POST":
        kwargs = {"headers": {"Origin": OWN}, "data": {**form, "csrf": ui.csrf}}
    reply = await ui.http.request(method, path, **kwargs)
    assert reply.status_code in (200, 303), reply.text


async def test_the_token_may_come_in_the_form_and_without_origin_from_a_plain_client(
    ui: Ui,
) -> None:
    await ui.sign_in()
    reply = await ui.http.post(
        "/admin/ui/secrets",
        data={"csrf": ui.csrf, "name": "s2", "hosts": "a.example.test", "values": "k=v"},
    )
    assert reply.status_code == 303 and reply.headers["location"] == "/admin/ui/secrets?saved=s2"


async def test_a_form_must_be_small_and_url_encoded(ui: Ui) -> None:
    await ui.sign_in()
    big = {"csrf": ui.csrf, "name": "big", "hosts": "a.example.test", "values": "k=" + "v" * 70_000}
    reply = await ui.http.post("/admin/ui/secrets", data=big)
    assert reply.status_code == 400 and "at most 65536 bytes" in reply.text
    as_json = await ui.http.post("/admin/ui/secrets", json={"csrf": ui.csrf})
    assert as_json.status_code == 400
    assert [s.name for s in await ui.service.parts.vault.list(WHO.tenant)] == []


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ("k\nx=SEKRIT", "line 1 is not a new key=value"),
        ("a=1\na=SEKRIT", "line 2 is not a new key=value"),
        ("", "values must map"),
        ("bad key=SEKRIT", "values: key names are"),
    ],
)
async def test_a_bad_secret_form_says_what_and_never_echoes_values(
    ui: Ui, values: str, says: str
) -> None:
    await ui.sign_in()
    form = {"csrf": ui.csrf, "name": "s3", "description": "d", "hosts": "a.example.test"}
    reply = await ui.http.post("/admin/ui/secrets", data={**form, "values": values})
    assert reply.status_code == 400 and says in reply.text
    assert "SEKRIT" not in reply.text
    assert 'value="s3"' in reply.text  # the name is kept; values are never put back
    assert await ui.service.parts.vault.list(WHO.tenant) == []


async def test_every_admin_response_carries_the_security_headers(ui: Ui) -> None:
    await ui.sign_in()
    bare = httpx.AsyncClient(transport=ui.http._transport, base_url=OWN)
    replies = [
        await ui.http.get("/admin"),
        await ui.http.get("/admin/ui/sessions/s1"),
        await ui.http.get("/admin/ui/sessions/nope"),
        await ui.http.get("/admin/static/admin.js"),
        await bare.get("/admin"),
        await bare.get("/admin/sessions"),
    ]
    for reply in replies:
        headers = reply.headers
        assert headers["x-frame-options"] == "DENY", reply.url
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"
    assert replies[0].headers["cache-control"] == "no-store"
    assert replies[2].status_code == 404 and "no session named" in replies[2].text
    assert "x-frame-options" not in (await bare.get("/healthz")).headers


async def test_static_files_are_the_shipped_ones_only(ui: Ui) -> None:
    for name, kind in (("htmx.min.js", "javascript"), ("admin.js", "javascript")):
        reply = await ui.http.get(f"/admin/static/{name}")
        assert reply.status_code == 200 and kind in reply.headers["content-type"]
        assert reply.content == (STATIC / name).read_bytes()
    for name in ("VENDORED", "htmx.LICENSE", "..%2F__init__.py", "%2e%2e%2fguard.py", "x.js"):
        assert (await ui.http.get(f"/admin/static/{name}")).status_code == 404, name


def test_htmx_is_the_vendored_file_and_its_licence_ships_with_it() -> None:
    vendored = (STATIC / "VENDORED").read_text(encoding="utf-8")
    digest = re.search(r"sha256 ([0-9a-f]{64})", vendored)
    assert digest is not None and "htmx.org 2." in vendored
    assert hashlib.sha256((STATIC / "htmx.min.js").read_bytes()).hexdigest() == digest.group(1)
    assert "Zero-Clause BSD" in (STATIC / "htmx.LICENSE").read_text(encoding="utf-8")


def test_templates_hold_no_inline_script_style_or_outside_url() -> None:
    for template in TEMPLATES.iterdir():
        text = template.read_text(encoding="utf-8")
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), template.name
        assert not re.search(r"\sstyle=|<style|\son[a-z]+=|hx-on|javascript:", text), template.name
        assert not re.search(r"(src|href)=\"(https?:)?//", text), template.name


async def test_revoking_a_token_ends_the_sign_ins_made_with_it(ui: Ui) -> None:
    second = await ui.service.catalogue.create_token(WHO.tenant, "deputy", "admin")
    other_ui = httpx.AsyncClient(transport=ui.http._transport, base_url=OWN)
    await other_ui.post("/admin/sign-in", data={"token": second})
    assert (await other_ui.get("/admin")).status_code == 200
    await ui.sign_in()
    page = await ui.http.get("/admin/ui/tokens")
    ids = re.findall(r'data-token="([0-9a-f]{16})"', page.text)
    assert len(ids) == 4 and second not in page.text and ui.admin not in page.text
    deputy = hashlib.sha256(second.encode()).hexdigest()[:16]
    reply = await ui.http.post(
        f"/admin/ui/tokens/{deputy}/revoke", data={"csrf": ui.csrf}, headers={"Origin": OWN}
    )
    assert reply.status_code == 303
    assert (await other_ui.get("/admin")).status_code == 303  # its sign-in ended
    assert (await ui.http.get("/admin")).status_code == 200  # this one did not
    bearer = {"Authorization": f"Bearer {second}"}
    assert (await ui.http.get("/admin/sessions", headers=bearer)).status_code == 401
    await other_ui.aclose()


async def test_a_token_another_replica_revoked_signs_in_no_more_though_remembered_here(
    ui: Ui,
) -> None:
    # Bearer calls may ride this process's 30 s memory of a revoked token (the accepted
    # gap); a sign-in may not: it would turn those seconds into an 8-hour sign-in.
    bearer = {"Authorization": f"Bearer {ui.admin}"}
    assert (await ui.http.get("/admin/sessions", headers=bearer)).status_code == 200
    await ui.service.parts.stores.tokens.delete(hashlib.sha256(ui.admin.encode()).hexdigest())
    reply = await ui.sign_in()
    assert reply.status_code == 401, reply.headers
    assert "sitekeep_admin" not in reply.headers.get("set-cookie", "")
    assert (await ui.http.get("/admin")).status_code == 303
    # What the sign-in learned, this process's bearer calls now know too.
    assert (await ui.http.get("/admin/sessions", headers=bearer)).status_code == 401


async def test_a_revocation_landing_between_the_token_check_and_the_sign_in_ends_it(
    ui: Ui, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sign-in checked the token, then the revocation ran (its sweep of sign-ins found
    # none yet), then the sign-in was written: it must not outlive the revocation by hours.
    second = await ui.service.catalogue.create_token(WHO.tenant, "deputy", "admin")
    deputy = hashlib.sha256(second.encode()).hexdigest()[:16]
    admin = ui.service.sign_ins
    sign_in = admin.sign_in

    async def revoked_meanwhile(*args: Any, **kwargs: Any) -> Any:
        await ui.service.catalogue.revoke_token(None, deputy, WHO.tenant)
        return await sign_in(*args, **kwargs)

    monkeypatch.setattr(admin, "sign_in", revoked_meanwhile)
    reply = await ui.sign_in(second)
    assert reply.status_code == 401, reply.headers
    assert (await ui.http.get("/admin")).status_code == 303
    assert await ui.service.parts.stores.sessions.keys("admin-sign-in/") == []


async def test_the_session_page_has_a_journal_tab_whose_pane_loads_by_itself(ui: Ui) -> None:
    await ui.sign_in()
    page = await ui.http.get("/admin/ui/sessions/s1?tab=journal")
    assert page.status_code == 200
    assert 'id="tab-journal"' in page.text and 'aria-selected="true"' in page.text
    assert 'hx-get="/admin/ui/sessions/s1/panes/journal" hx-trigger="load"' in page.text
    boss = Principal(WHO.tenant, "boss", "admin")
    await ui.service.admin.clear_history(boss, "s1")  # journaled as a mark (issue #11)
    pane = await ui.http.get("/admin/ui/sessions/s1/panes/journal", headers={"HX-Request": "true"})
    assert pane.status_code == 200
    other = await ui.http.get("/admin/ui/sessions/nope/panes/journal")
    assert 'class="timeline"' in pane.text and ">cleared<" in pane.text
    assert other.status_code == 404


async def test_the_sessions_list_shows_each_sites_sign_in_at_a_glance(ui: Ui) -> None:
    """SPEC §18: a pill per site — ✓ signed in, ✗ signed out, ? unknown — its evidence's
    summary on hover, the state spelled out for screen readers, never a value."""
    states = {
        "app.example.test": SignIn("signed_in", {"summary": "sign-in cookie sid"}, NOW),
        "id.example.test": SignIn("signed_out", {"summary": "a sign-in page (/login)"}, NOW),
    }

    async def judged(s: Session) -> dict[str, Any]:
        s.record = replace(s.require(), sign_in=states)
        await s.put()
        return {}

    await ui.service.parts.seam.call(WHO, "s1", judged, inspect=False)
    await ui.sign_in()
    page = await ui.http.get("/admin")
    assert ">Signed in</th>" in page.text
    assert (
        '<span class="pill sign-in-signed_in" title="signed in: sign-in cookie sid">'
        '✓ app.example.test<span class="visually-hidden">: signed in</span></span>'
    ) in page.text
    assert "✗ id.example.test" in page.text and "sign-in-signed_out" in page.text
    assert _structure_problems(page.text, fragment=False) == []
    row = await ui.http.get("/admin/ui/sessions/s1/row")
    assert row.json()["row"]["sign_in"]["app.example.test"]["state"] == "signed_in"


def _structure_problems(text: str, *, fragment: bool) -> list[str]:
    """What an HTML5 parser (html5lib, the WHATWG algorithm) finds wrong in ``text``:
    its parse errors, markup inside ``<title>`` (read there as text), repeated ids."""
    parser = html5lib.HTMLParser(namespaceHTMLElements=False)
    tree = parser.parseFragment(text) if fragment else parser.parse(text)
    found = [f"line {line} col {col}: {code} {data}" for (line, col), code, data in parser.errors]
    title = tree.find("head/title")
    if not fragment and (title is None or "<" in (title.text or "")):
        found.append(f"<title> holds markup: {title.text if title is not None else None!r}")
    ids = [element.get("id") for element in tree.iter() if element.get("id")]
    found += [f"id {i!r} repeated" for i in sorted({i for i in ids if ids.count(i) > 1})]
    return found


async def test_every_template_renders_well_formed_html(
    ui: Ui, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every page and pane the UI serves, signed out and in, through an HTML5 parser; and
    every template in the package is among what they rendered."""
    rendered: set[str] = set()
    load = jinja2.Environment._load_template

    def spy(env: jinja2.Environment, name: str, globals: Any) -> Any:
        rendered.add(name)
        return load(env, name, globals)

    monkeypatch.setattr(jinja2.Environment, "_load_template", spy)
    pages = ["/admin/sign-in"]
    await ui.sign_in()
    boss = Principal(WHO.tenant, "boss", "admin")
    await ui.service.admin.clear_history(boss, "s1")  # a journal row for the pane
    live, _ = await ui.service.live._start(boss, "s1")  # a live record; no browser needed
    await ui.service.profiles.create(boss, CreateBody(name="Shop", visibility="workspace"))
    pages += [
        *PAGES,
        "/admin/ui/sessions/s1?tab=history",
        "/admin/ui/profiles",
        "/admin/ui/profiles/new",
        "/admin/ui/proxies",
        "/admin/ui/live",
        f"/admin/ui/live/{live.id}",
        f"/admin/ui/wizard/{live.id}?name=Shop",
        "/admin/ui/sessions/nope",  # the error page
    ]
    for path in pages:
        reply = await ui.http.get(path)
        assert reply.status_code in (200, 404), (path, reply.status_code)
        assert _structure_problems(reply.text, fragment=False) == [], path
    for path in PARTIALS:
        reply = await ui.http.get(path, headers={"HX-Request": "true"})
        assert reply.status_code == 200, path
        assert _structure_problems(reply.text, fragment=True) == [], path
    shipped = {p.name for p in TEMPLATES.iterdir() if p.name.endswith(".html")}
    assert shipped - rendered == set(), "templates no page rendered"


async def test_a_live_browser_asked_for_from_the_ui_is_bounded_like_the_apis(ui: Ui) -> None:
    """The UI's form reaches the same service as POST /v1/live-sessions: a URL past
    ``MAX_URL`` is refused on the page, and no browser starts (a form cannot carry a lone
    surrogate: its percent-escapes decode with replacement)."""
    await ui.sign_in()
    reply = await ui.http.post(
        "/admin/ui/live",
        data={
            "csrf": ui.csrf,
            "browser": "chromium",
            "url": "https://a.example.test/?" + "x" * 9000,
        },
        headers={"Origin": OWN},
    )
    assert reply.status_code == 400, reply.text[:300]
    assert "a URL is at most 8192 characters" in reply.text
    assert not ui.service.parts.browsers._live
