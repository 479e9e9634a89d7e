"""The fast save equals a full spare-tab read, on real Chromium (issue #2 §8).

The fast path takes each left origin's localStorage from the copy its last document
reported as it left; these tests drive pages the ways that change storage behind
sitekeep's back — script navigations, popups, frames, timers — and compare a fast save
with a save that reads every origin through the spare tab.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.sites import Sites
from sitekeep.browser.live import LiveBrowser
from sitekeep.model import SiteData
from support import Api, ApiFactory

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def run(live: LiveBrowser, expression: str, context: str | None = None) -> Any:
    """Evaluate in a page as its own script would (awaiting a promise)."""
    result = await live.conn.send(
        "script.evaluate",
        {
            "expression": expression,
            "target": {"context": context or live.context},
            "awaitPromise": True,
        },
    )
    return result.get("result", {}).get("value")


async def until(probe: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await probe():
        assert time.monotonic() < deadline, "the page never got there"
        await anyio.sleep(0.02)


async def at(live: LiveBrowser, url_part: str) -> None:
    async def probe() -> bool:
        try:
            page = await live.page_info()
        except Exception:
            return False
        return url_part in page.url

    await until(probe)


def origins(snapshot: SiteData) -> dict[str, dict[str, str]]:
    return {o: dict(s.local) for o, s in snapshot.origins.items()}


async def fast_and_full(api: Api, key: str) -> tuple[dict[str, Any], SiteData, SiteData]:
    fast = await api.save(key)
    fast_snapshot = await api.snapshot(key)
    await api.save(key, full=True)
    return fast, fast_snapshot, await api.snapshot(key)


async def test_fast_save_equals_a_full_read_after_script_navigations_and_popups(
    api: Api, sites: Sites
) -> None:
    await api.open(key="t")
    await api.go("t", sites.url("a.example.test", "/__fixture/ls?k=dummy-a1"))
    await api.go("t", sites.url("b.other.test", "/__fixture/ls?k=dummy-b1"))
    live = await api.browser("t")

    # A click handler's write, then its own navigation away (no sitekeep call in between).
    target = sites.url("c.example.test", "/__fixture/ls?k=dummy-c1")
    await run(live, f"localStorage.setItem('clicked', 'dummy-b2'); location.href = '{target}'")
    await at(live, "c.example.test")
    # A timer that writes and navigates between calls.
    later = sites.url("a.example.test", "/__fixture/page?title=later")
    await run(
        live,
        f"setTimeout(() => {{ localStorage.setItem('t', 'dummy-c2'); "
        f"location.href = '{later}'; }}, 50)",
    )
    await at(live, "title=later")
    await run(live, "localStorage.setItem('a2', 'dummy-a2')")
    # A popup that stays open, and one that writes and closes itself.
    popup = sites.url("d.example.test", "/__fixture/ls?k=dummy-d1")
    await run(live, f"window.open('{popup}'); 1")
    closing = sites.url("e.other.test", "/__fixture/ls?k=dummy-e1")
    await run(live, f"window.w = window.open('{closing}'); 1")
    await until(lambda: _title_of_popup(live, "LS e.other.test"))
    await run(live, "window.w.close(); 1")
    # Pages reached behind sitekeep's back are not in the history (SPEC §4): visit them.
    await api.go("t", sites.url("c.example.test", "/__fixture/page?title=visit"))
    await api.go("t", sites.url("e.other.test", "/__fixture/page?title=visit"))
    await api.go("t", sites.url("d.example.test", "/__fixture/page?title=visit"))
    await api.go("t", sites.url("b.other.test", "/__fixture/page?title=back"))

    fast, fast_snapshot, full_snapshot = await fast_and_full(api, "t")
    assert fast["saved"]["spare_reads"] == 0, "every copy should have been exact"
    assert origins(fast_snapshot) == origins(full_snapshot)
    assert origins(full_snapshot)[sites.url("a.example.test", "").rstrip("/")] == {
        "k": "dummy-a1",
        "a2": "dummy-a2",
    }
    assert origins(full_snapshot)[sites.url("b.other.test", "").rstrip("/")]["clicked"] == (
        "dummy-b2"
    )
    assert origins(full_snapshot)[sites.url("c.example.test", "").rstrip("/")]["t"] == "dummy-c2"
    assert fast_snapshot.session == full_snapshot.session


async def _title_of_popup(live: LiveBrowser, title: str) -> bool:
    tree = await live.conn.send("browsingContext.getTree", {"maxDepth": 0})
    for node in tree["contexts"]:
        if node["context"] != live.context:
            try:
                if (await live.page_info(node["context"])).title.startswith(title):
                    return True
            except Exception:
                continue
    return False


async def test_a_live_frame_of_another_origin_sends_its_origin_through_the_spare_tab(
    api: Api, sites: Sites
) -> None:
    await api.open(key="f")
    await api.go("f", sites.url("g.example.test", "/__fixture/ls?k=dummy-g1"))
    await api.go("f", sites.url("f.example.test", "/__fixture/ls?k=dummy-f1"))
    live = await api.browser("f")
    frame = sites.url("g.example.test", "/__fixture/ls?k2=dummy-g2")
    await run(
        live,
        "new Promise((done) => { const f = document.createElement('iframe'); "
        f"f.src = '{frame}'; f.onload = () => done(1); document.body.append(f); }})",
    )
    fast, fast_snapshot, full_snapshot = await fast_and_full(api, "f")
    assert fast["saved"]["spare_reads"] == 1  # g lives in a frame: its copy is not trusted
    assert origins(fast_snapshot) == origins(full_snapshot)
    assert origins(full_snapshot)[sites.url("g.example.test", "").rstrip("/")] == {
        "k": "dummy-g1",
        "k2": "dummy-g2",
    }


async def test_after_a_restart_the_first_save_reads_everything_then_copies_are_exact(
    make_api: ApiFactory, sites: Sites, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    first: Api = await make_api(session_store=store)
    await first.open(key="r")
    for host in ("a.example.test", "b.other.test", "c.example.test"):
        await first.go("r", sites.url(host, f"/__fixture/ls?k=dummy-{host[0]}"))
    await first.go("r", sites.url("tabs.example.test", "/add"))
    await first.service.parts.browsers.aclose()  # the process goes; the browser stays

    second: Api = await make_api(session_store=store)
    resynced = await second.save("r")
    assert resynced["saved"]["spare_reads"] == 3
    await second.go("r", sites.url("c.example.test", "/__fixture/ls?k2=dummy-c2"))
    await second.go("r", sites.url("tabs.example.test"))
    fast, fast_snapshot, full_snapshot = await fast_and_full(second, "r")
    assert fast["saved"]["spare_reads"] == 0
    assert origins(fast_snapshot) == origins(full_snapshot)
    assert fast_snapshot.session == full_snapshot.session
    assert origins(full_snapshot)[sites.url("c.example.test", "").rstrip("/")] == {
        "k": "dummy-c",
        "k2": "dummy-c2",
    }
