"""The opt-in Chromium engine ``SITEKEEP_CHROMIUM_BIDI=mapper`` (``browser.mapper``):
sitekeep's own Chromium beside chromium-bidi's mapper in Node, on real Chromium, once per
run (Chromium only; the engine changes nothing for Firefox or a Grid).

What chromedriver did that the engine must still do: the main job (save, close, open:
still signed in), the own-address guard over its port, a browser that ends with its
session (no process, no profile left), reattach from another process; and what it
cannot do — hand out a WebDriver classic endpoint — is refused clearly.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.sites import Sites
from processes import browser_pids
from sitekeep.browser.bidi import BidiConnection
from sitekeep.browser.processes import group_running
from sitekeep.config import Settings
from support import Api, ApiFactory

from .test_dead_browser import ANSWER_WITHIN, SLOW, kill_while_waiting
from .test_own_address import assert_port_refused
from .test_roundtrip import sign_in_everywhere

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.e2e,
    pytest.mark.parametrize("browser", ["chromium"]),
    pytest.mark.parametrize("via", ["mapper"]),
]


async def test_one_save_signs_in_after_close_and_open(api: Api, sites: Sites) -> None:
    await sign_in_everywhere(api, sites, "s1")
    ref = (await api.browser("s1")).ref
    assert ref.ws_url.startswith("ws://127.0.0.1:") and not ref.debugger  # a CDP pipe only
    saved = await api.save("s1")
    assert saved["saved"]["cookies"] >= 4 and saved["saved"]["skipped"] == []
    await api.close("s1")

    opened = await api.open(key="s1")
    assert opened["title"] == "Tabs — cart 2"  # landed on the last page, sessionStorage back
    assert (await api.go("s1", sites.url("app.example.test")))["title"] == (
        "App — signed in as alice"
    )
    assert (await api.go("s1", sites.url("token.example.test")))["title"] == (
        "Token — signed in as bob"
    )


async def test_the_mapper_port_is_refused_and_hands_out_no_webdriver(
    api: Api, sites: Sites
) -> None:
    """The mapper's port carries the BiDi socket of every browser of the engine: refused
    in every spelling, by the URL check and by the browser for a redirect hop; and the
    take-over route says why it has nothing to hand out."""
    await api.open(key="k", url=sites.url("app.example.test"))
    port = (await api.browser("k")).ref.endpoint.rsplit(":", 1)[1]
    await assert_port_refused(api, sites, port, "/status", "/session/x/window")
    reply = await api.http.get("/v1/sessions/k/webdriver")
    assert reply.status_code == 409, reply.text
    assert "mapper engine" in reply.json()["error"]["message"]
    assert (await api.go("k", sites.url("app.example.test")))["title"]


async def test_a_closed_browser_leaves_no_process_and_no_profile(
    api: Api, settings: Settings, sites: Sites
) -> None:
    await api.open(key="k", url=sites.url("app.example.test"))
    endpoint = (await api.browser("k")).ref.endpoint
    state = settings.data_dir / "mapper" / f"{endpoint.rsplit(':', 1)[1]}.json"
    recorded = json.loads(state.read_text(encoding="utf-8"))
    pid, profile = int(recorded["pid"]), Path(recorded["profile"])
    assert group_running(pid) and profile.is_dir()
    assert f"--user-data-dir={profile}".encode() in _group_cmdlines(pid)
    await api.close("k")
    assert not group_running(pid), "the mapper or its Chromium outlived the session"
    assert not profile.exists() and not state.exists()


async def test_another_process_reattaches_to_the_same_browser(
    make_api: ApiFactory, settings: Settings, sites: Sites, tmp_path: Path
) -> None:
    """Stateless reattach (SPEC §2): a second app on the same data dir and session store
    reaches the browser the first one started, through a socket of its own."""
    shared = {"session_store": f"sqlite:///{tmp_path / 'sessions.db'}"}
    first: Api = await make_api(**shared)
    await first.open(key="k", url=sites.url("app.example.test", "/login"))
    ref = (await first.browser("k")).ref
    second: Api = await make_api(**shared)
    again = await second.browser("k")
    assert (
        again.ref.session_id == ref.session_id and again.conn is not (await first.browser("k")).conn
    )
    page = await second.go("k", sites.url("app.example.test"))
    assert page["title"] == "App — signed in as alice"


def _group_cmdlines(pgid: int) -> bytes:
    """Every command line of process group ``pgid``, joined (Linux ``/proc``)."""
    out = b""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) == pgid:
                out += (entry / "cmdline").read_bytes() + b"\n"
        except (OSError, ProcessLookupError):
            continue
    return out


async def test_a_killed_browser_answers_503_at_once_then_reopens(
    make_api: ApiFactory, sites: Sites
) -> None:
    """Chromium killed (SIGKILL) mid-navigation: its mapper sees the CDP pipe close and
    ends, the socket closes, the call answers 503 at once; the next call opens anew."""
    api: Api = await make_api(navigation_timeout=60.0)
    await api.open(key="k", url=sites.url("app.example.test"))
    endpoint = (await api.browser("k")).ref.endpoint
    (pid,) = browser_pids(endpoint, "node")
    slow = {"url": sites.url("app.example.test", f"{SLOW}?ms=60000")}
    took = await kill_while_waiting(
        api, sites, "POST", "/v1/sessions/k/navigate", slow, lambda: pid
    )
    assert took < ANSWER_WITHIN, f"answered {took:.1f} s after the kill"
    assert (await api.go("k", sites.url("app.example.test")))["title"]
    reopened = (await api.browser("k")).ref.endpoint
    assert reopened != endpoint and browser_pids(reopened, "node") != {pid}


async def test_a_request_held_by_a_socket_that_closed_is_failed_not_left_blocked(
    make_api: ApiFactory, sites: Sites
) -> None:
    """A request blocked by a socket's intercept whose socket goes away (a sitekeep
    process that died mid-call, another client) is failed, so its tab goes on — removing
    the intercept does not release it, and the tab waited for ever (chromedriver too:
    /tmp/mapper15/blocked.py, 15 s and still blocked)."""
    api: Api = await make_api(navigation_timeout=60.0)
    await api.open(key="k", url=sites.url("app.example.test"))
    other = await BidiConnection.connect((await api.browser("k")).ref.ws_url)
    held: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    def on_request(params: dict[str, Any]) -> None:
        if params.get("isBlocked") and not held.done():
            held.set_result(params)

    other.add_listener("network.beforeRequestSent", on_request)
    await other.subscribe(["network.beforeRequestSent"])
    pattern = {"type": "pattern", "pathname": "/held"}
    await other.send(
        "network.addIntercept", {"phases": ["beforeRequestSent"], "urlPatterns": [pattern]}
    )
    replies: list[Any] = []

    async def navigate() -> None:
        url = sites.url("app.example.test", "/held")
        replies.append(await api.http.post("/v1/sessions/k/navigate", json={"url": url}))

    async with anyio.create_task_group() as calls:
        calls.start_soon(navigate)
        with anyio.fail_after(10):
            await held
        await other.close()
        closed = time.monotonic()
    took = time.monotonic() - closed
    assert took < 10, f"the held navigation answered {took:.1f} s after its socket closed"
    assert replies[0].status_code == 502, replies[0].text
    assert replies[0].json()["error"]["type"] == "navigation_failed"
    assert (await api.go("k", sites.url("app.example.test")))["title"]
