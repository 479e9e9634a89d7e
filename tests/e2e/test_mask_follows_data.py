"""The mask follows the data (SPEC §7, §9, §12; issue #24 item 2): a secret value a page
copied into its localStorage and a cookie is ``•••`` wherever that site data goes — the
profiles made from the session (``save_site_data(profile=…)`` and a capture), their exports
(HTTP, CLI), the sessions opened from them (their views, exports, results, and their own
saves into another profile, over MCP too) — even after the secret was changed and deleted;
while every restore still carries the raw values into the browser, so the sign-in works."""

from __future__ import annotations

import base64
import json
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
# and signs in from them on load — its title then shows them base64-encoded (which no
# mask recognises: the proof the browser got the raw values) and its text shows them raw.
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
document.title = "Stored " + btoa(stored) + " " + btoa(decodeURIComponent(cookie));
document.getElementById("raw").textContent = "Raw " + stored;
</script>"""

_B64 = base64.b64encode(TYPED_SECRET.encode()).decode()
SIGNED_IN = f"Stored {_B64} {_B64}"


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
