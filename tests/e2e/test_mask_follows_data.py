"""The mask follows the data (SPEC §7, §9, §12; issue #24 item 2): a secret value a page
copied into its localStorage and a cookie is ``•••`` wherever that site data goes — the
profiles made from the session (``save_site_data(profile=…)`` and a capture), their exports
(HTTP, CLI), the sessions opened from them (their views, exports, results, and their own
saves into another profile, over MCP too) — even after the secret was changed and deleted;
while every restore still carries the raw values into the browser, so the sign-in works."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import pytest
from mcp import Client
from mcp.types import TextResourceContents
from typer.testing import CliRunner

from fixtures.sites import TYPED_SECRET, Sites
from sitekeep.cli import app
from sitekeep.config import Settings
from sitekeep.masking import MASK
from sitekeep.mcp import build_server
from support import WHO, Api, call_tool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

HOST = "copy.example.test"

# What a careless sign-in page does: it keeps what was typed in localStorage and a cookie,
# and signs in from them on load — its title then shows them reversed (which no mask
# recognises: the proof the browser got the raw values) and its text shows them raw.
PAGE = """<input id="p" type="password" aria-label="Pass">
<p id="raw"></p>
<script>
const p = document.getElementById("p");
p.addEventListener("input", () => {
  localStorage.setItem("copy", p.value);
  document.cookie = "copy=" + encodeURIComponent(p.value) + "; path=/; max-age=86400";
});
const stored = localStorage.getItem("copy") || "";
const cookie = (document.cookie.match(/(?:^|; )copy=([^;]*)/) || ["", ""])[1];
const reversed = (v) => [...v].reverse().join("");
document.title = "Stored " + reversed(stored) + " " + reversed(decodeURIComponent(cookie));
document.getElementById("raw").textContent = "Raw " + stored;
</script>"""

_REVERSED = TYPED_SECRET[::-1]
SIGNED_IN = f"Stored {_REVERSED} {_REVERSED}"


async def copied_into_profile(api: Api, sites: Sites, key: str, value: str, page: str) -> str:
    """Type ``value`` (a secret allowed on :data:`HOST`) into ``#p`` of ``page`` served on
    HOST in session ``key``, and save the session into a new profile: its id."""
    await api.service.parts.vault.put(WHO.tenant, "login", "", [HOST], {"password": value})
    await api.open(key=key, url=sites.url(HOST, "/__fixture/html?body=" + quote(page)))
    typed = {"selector": "#p", "secret": "login", "field": "password"}
    await api.call("POST", f"/v1/sessions/{key}/type-secret", typed)
    profile: str = (await api.call("POST", "/v1/profiles", {"name": f"from {key}"}))["id"]
    await api.save(key, profile=profile)
    return profile


def masked_state(state: dict[str, Any]) -> None:
    """A storage state whose copied cookie and localStorage value are ``•••``."""
    cookie = next(c for c in state["cookies"] if c["name"] == "copy")
    assert cookie["value"] == MASK
    [origin] = [o for o in state["origins"] if HOST in o["origin"]]
    assert {"name": "copy", "value": MASK} in origin["localStorage"]


async def profile_masked(api: Api, ident: str, cli: Path) -> None:
    """The profile's per-host view and its exports (HTTP both formats, CLI) mask the value
    (every reply is also searched for it by the ``api`` client's hook)."""
    shown = await api.call("GET", f"/v1/profiles/{ident}")
    assert [s["site"] for s in shown["sites"]] == [HOST]
    masked_state(await api.call("GET", f"/v1/profiles/{ident}/storage-state"))
    txt = await api.http.get(f"/v1/profiles/{ident}/storage-state?format=cookies-txt")
    assert f"\tcopy\t{MASK}" in txt.text
    out = cli / f"{ident}.json"
    args = ["export", "--profile", ident, "--to", str(out), "--tenant", WHO.tenant]
    env = {"SITEKEEP_DATA_DIR": str(cli.parent / "data"), "SITEKEEP_SESSION_STORE": None}
    done = await anyio.to_thread.run_sync(
        lambda: CliRunner().invoke(app, [*args, "--as", WHO.subject], env=env)
    )
    assert done.exit_code == 0, done.output
    assert TYPED_SECRET not in done.output
    masked_state(json.loads(out.read_text(encoding="utf-8")))


async def session_masked(
    api: Api, key: str, admin: httpx.AsyncClient, ui: httpx.AsyncClient
) -> None:
    """The session's own per-host view, its exports, and the admin's views of it: over
    HTTP, and in the admin UI (its page opens the top host; a pane opens one asked)."""
    host = await api.call("GET", f"/v1/sessions/{key}/site-data/{HOST}")
    assert [c["value"] for c in host["cookies"]] == [MASK]
    assert list(host["local_storage"].values()) == [{"copy": MASK}]
    masked_state(await api.call("GET", f"/v1/sessions/{key}/storage-state"))
    txt = await api.http.get(f"/v1/sessions/{key}/storage-state?format=cookies-txt")
    assert f"\tcopy\t{MASK}" in txt.text
    for seen in (
        await admin.get(f"/admin/sessions/{key}/site-data/{HOST}"),
        await ui.get(f"/admin/ui/sessions/{key}"),
        await ui.get(f"/admin/ui/sessions/{key}/panes/site-data?open={HOST}"),
        await ui.get(f"/admin/ui/sessions/{key}/panes/site-data/{HOST}"),
    ):
        assert seen.status_code == 200, seen.text
        assert TYPED_SECRET not in seen.text and MASK in seen.text, seen.url


@pytest.mark.parametrize(
    ("browser", "via"), [("chromium", "local"), ("firefox", "local"), ("firefox", "grid")]
)
async def test_a_copied_secret_stays_masked_in_every_copy_of_the_data_and_still_signs_in(
    api: Api, sites: Sites, settings: Settings
) -> None:
    svc = api.service
    await svc.parts.vault.put(WHO.tenant, "login", "", [HOST], {"password": TYPED_SECRET})
    url = sites.url(HOST, "/__fixture/html?body=" + quote(PAGE))
    await api.open(key="typed", url=url)
    await api.call(
        "POST",
        "/v1/sessions/typed/type-secret",
        {"selector": "#p", "secret": "login", "field": "password"},
    )
    # Changed at once: the value in the page is no longer the secret's.
    await svc.parts.vault.put(WHO.tenant, "login", "", [HOST], {"password": "dummy-changed-4e1a"})
    saved, taken, later = [
        (await api.call("POST", "/v1/profiles", {"name": name}))["id"]
        for name in ("saved", "captured", "copy of a copy")
    ]
    await api.save("typed", profile=saved)
    await api.call("POST", f"/v1/profiles/{taken}/capture", {"session": "typed"})
    await api.close("typed")
    assert await svc.parts.vault.delete(WHO.tenant, "login")

    boss = await svc.catalogue.create_token(WHO.tenant, "boss", "admin")
    transport = api.http._transport  # type: ignore[attr-defined]
    base = "http://sitekeep.test"
    admin = httpx.AsyncClient(
        transport=transport, base_url=base, headers={"Authorization": f"Bearer {boss}"}
    )
    ui = httpx.AsyncClient(transport=transport, base_url=base)
    cli = settings.data_dir.parent / "cli"
    cli.mkdir()
    async with admin, ui:
        signed = await ui.post("/admin/sign-in", data={"token": boss})
        assert signed.status_code == 303, signed.text
        await session_masked(api, "typed", admin, ui)
        for ident in (saved, taken):
            await profile_masked(api, ident, cli)
            key = f"from-{ident}"
            opened = await api.open(key=key, profile=ident, url=url)
            assert opened["title"] == SIGNED_IN  # the raw values reached the browser
            read = await api.call("POST", f"/v1/sessions/{key}/read")
            assert f"Raw {MASK}" in read["text"]
            copy = await api.http.post(f"/v1/sessions/{key}/press", json={"keys": "Control+C"})
            assert copy.status_code == 403, copy.text
            assert copy.json()["error"]["type"] == "clipboard_not_allowed"
            await api.close(key)

        # Copy after copy: a session opened from a profile (its browser reopened silently,
        # from the profile again) saves into another profile, over MCP.
        async with Client(build_server(lambda: svc, lambda _ctx: WHO)) as mcp:
            await call_tool(mcp, "save_site_data", key=f"from-{saved}", profile=later)
            uri = f"sitekeep://sessions/from-{saved}/site-data/{HOST}"
            [content] = (await mcp.read_resource(uri)).contents
            assert isinstance(content, TextResourceContents)
            assert TYPED_SECRET not in content.text and MASK in content.text
        await session_masked(api, f"from-{saved}", admin, ui)
        await api.close(f"from-{saved}")
        await profile_masked(api, later, cli)
        assert (await api.open(key="third", profile=later, url=url))["title"] == SIGNED_IN
        await api.save("third")
        await session_masked(api, "third", admin, ui)


SPECIAL = "Dummy p@ss/w\u00f6rd!*'()~+7e"
"""A typed value that every encoding spells differently (reserved and non-ASCII chars)."""

# Where a page puts a typed value besides a cookie's value: a cookie's name and path, and
# the value as encodeURIComponent, escape(), base64 (alone and in "user:…", as Basic
# auth), base64url, hex in either case and percent-encoding in lower-case hex give it.
ENCODING_PAGE = """<input id="p" type="password" aria-label="Pass">
<script>
const p = document.getElementById("p");
const utf8 = (v) => new TextEncoder().encode(v);
const b64 = (v) => btoa(String.fromCharCode(...utf8(v)));
const hex = (v) => [...utf8(v)].map((b) => b.toString(16).padStart(2, "0")).join("");
p.addEventListener("input", () => {
  const v = p.value, uri = encodeURIComponent(v), keep = "; max-age=86400";
  document.cookie = uri + "=named; path=/" + keep;
  document.cookie = "pathed=1; path=/x/" + uri + keep;
  document.cookie = "uri=" + uri + "; path=/" + keep;
  document.cookie = "esc=" + escape(v) + "; path=/" + keep;
  const items = {
    b64: b64(v), basic: "Basic " + b64("carol:" + v),
    b64url: b64(v).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, ""),
    hex: hex(v), HEX: hex(v).toUpperCase(),
    lower: uri.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
  };
  for (const [k, s] of Object.entries(items)) localStorage.setItem(k, s);
  localStorage.setItem(uri, "keyed");
});
</script>"""


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def spelled(value: str) -> list[str]:
    """What ENCODING_PAGE wrote, as Python spells the same encodings."""
    utf8 = value.encode()
    uri = quote(value, safe="!*'()~")
    b64 = base64.b64encode(utf8).decode()
    return [
        uri,
        quote(value.encode("latin-1"), safe="@*_+-./"),  # escape()
        b64,
        base64.b64encode(b"carol:" + utf8).decode(),
        base64.urlsafe_b64encode(utf8).decode().rstrip("="),
        utf8.hex(),
        utf8.hex().upper(),
        re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), uri),
    ]


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
async def test_a_copied_secret_is_masked_in_every_field_and_every_encoding(
    api: Api, sites: Sites
) -> None:
    """Found attacking issue #24 item 2 afresh: an export masked a copied value in cookie
    values and storage only as typed or as Python's quote() spells it — not in a cookie's
    name or path, nor as encodeURIComponent (which keeps !*'()), escape(), base64 (alone
    or inside "user:…"), base64url, hex, or percent-encoding in lower-case hex. Every
    string of every copy and view of the data is searched in each of those spellings."""
    profile = await copied_into_profile(api, sites, "enc", SPECIAL, ENCODING_PAGE)
    raw = (await api.snapshot("enc")).cookies
    assert any(quote(SPECIAL, safe="!*'()~") in c.name for c in raw)  # the page did copy it
    forms = spelled(SPECIAL)
    shown = [
        (await api.http.get("/v1/sessions/enc/storage-state")).text,
        (await api.http.get("/v1/sessions/enc/storage-state?format=cookies-txt")).text,
        dumps(await api.call("GET", f"/v1/sessions/enc/site-data/{HOST}")),
        dumps(await api.call("GET", "/v1/sessions/enc/site-data")),
        (await api.http.get(f"/v1/profiles/{profile}/storage-state")).text,
        (await api.http.get(f"/v1/profiles/{profile}/storage-state?format=cookies-txt")).text,
        dumps(await api.call("GET", f"/v1/profiles/{profile}")),
    ]
    for text in shown:
        for form in forms:
            assert form[:12] not in text and form[-12:] not in text, (form, text[:2000])
        assert MASK in text or '"hosts"' in text, text[:2000]
    state = json.loads(shown[0])
    names = {c["name"] for c in state["cookies"]}
    paths = {c["path"] for c in state["cookies"]}
    assert MASK in names and "/x/" + MASK in paths, state["cookies"]
