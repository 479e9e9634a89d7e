"""A save's fixed cost (issue #15): with only the main tab open, everything a save reads
goes out at once, so it waits on one round trip; and it learns where the tab is from
that same read (no ``page_info`` before or after). A browser tracked from birth with no
other context known sends only the jar read and the main tab's READ; ``getTree`` and
``getRealms`` follow only when that READ finds frames."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.save import save_read
from sitekeep.browser.snapshot import read_snapshot
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.errors import BrowserUnavailable
from sitekeep.model import BrowserRef, SiteData

ORIGIN = "http://a.example.test:8000"
URL = f"{ORIGIN}/page"


def _main_read(frames: int = 0) -> dict[str, Any]:
    doc = {
        "frames": frames,
        "origin": ORIGIN,
        "spare": False,
        "trusted": True,
        "top": True,
        "url": URL,
        "local": {"k": "v"},
        "session": {},
        "ua": "agent",
        "title": "the title",
        "idb": False,
    }
    return {"type": "success", "result": {"type": "string", "value": json.dumps(doc)}}


REPLIES: dict[str, dict[str, Any]] = {
    "storage.getCookies": {"cookies": []},
    "browsingContext.getTree": {"contexts": [{"context": "main", "children": []}]},
    "script.getRealms": {"realms": []},
    "script.evaluate": _main_read(),
}


class HeldConn:
    """The BiDi boundary: each command waits until the test releases every reply."""

    timeout = 5.0

    def __init__(self, frames: int = 0) -> None:
        self.sent: list[str] = []
        self.release = asyncio.Event()
        self.replies = {**REPLIES, "script.evaluate": _main_read(frames)}

    async def send(self, method: str, params: Any = None, **_: Any) -> dict[str, Any]:
        self.sent.append(method)
        await self.release.wait()
        return self.replies[method]


async def _save(conn: HeldConn, tracker: LeaveTracker) -> tuple[list[str], Any]:
    """The commands in flight before any reply, and the save's read."""
    ref = BrowserRef("chromium", "http://127.0.0.1:1", "s", "ws://127.0.0.1:1", 1.0)
    browser = LiveBrowser(ref, conn, tracker, "main")  # type: ignore[arg-type]
    saving = asyncio.ensure_future(save_read(browser, ["http://b.example.test"], deadline=5.0))
    for _ in range(100):  # let every task run up to its first wait; no clock involved
        await asyncio.sleep(0)
    in_flight = sorted(conn.sent)
    conn.release.set()
    return in_flight, await saving


@pytest.mark.anyio
async def test_a_browser_tracked_from_birth_with_one_tab_sends_two_reads_and_no_more() -> None:
    conn = HeldConn()
    in_flight, read = await _save(conn, LeaveTracker.at_birth())

    assert in_flight == ["script.evaluate", "storage.getCookies"]
    assert len(conn.sent) == 2  # no getTree, no getRealms, no page_info
    assert read.page == PageInfo(URL, "the title")
    assert read.local[ORIGIN] == {"k": "v"}


@pytest.mark.anyio
async def test_frames_in_the_main_tab_bring_the_tree_after_its_read() -> None:
    conn = HeldConn(frames=1)
    in_flight, read = await _save(conn, LeaveTracker.at_birth())

    assert in_flight == ["script.evaluate", "storage.getCookies"]
    assert sorted(conn.sent[2:]) == ["browsingContext.getTree", "script.getRealms"]
    assert read.page == PageInfo(URL, "the title")


@pytest.mark.anyio
async def test_a_save_of_the_main_tab_alone_sends_every_read_before_any_reply() -> None:
    tracker = LeaveTracker.at_birth()
    tracker.on_context_created({"context": "popup", "parent": None})  # another tab is known
    conn = HeldConn()
    in_flight, read = await _save(conn, tracker)

    assert in_flight == [
        "browsingContext.getTree",
        "script.evaluate",
        "script.getRealms",
        "storage.getCookies",
    ]
    assert len(conn.sent) == 4  # nothing after the replies: no page_info
    assert read.page == PageInfo(URL, "the title")
    assert read.order[0] == ORIGIN
    assert read.local[ORIGIN] == {"k": "v"}


@pytest.mark.anyio
async def test_the_last_snapshot_is_loaded_beside_the_browsers_first_reads() -> None:
    conn = HeldConn()
    ref = BrowserRef("chromium", "http://127.0.0.1:1", "s", "ws://127.0.0.1:1", 1.0)
    browser = LiveBrowser(ref, conn, LeaveTracker.at_birth(), "main")  # type: ignore[arg-type]
    loading = asyncio.Event()
    loaded = asyncio.Event()

    async def load() -> SiteData | None:
        loading.set()
        await loaded.wait()
        return SiteData()

    saving = asyncio.ensure_future(
        read_snapshot(browser, [ORIGIN], load(), deadline=5.0, cap=1 << 20, now=1.0)
    )
    for _ in range(100):
        await asyncio.sleep(0)
    assert loading.is_set() and sorted(conn.sent) == ["script.evaluate", "storage.getCookies"]
    conn.release.set()
    loaded.set()
    captured = await saving
    assert ORIGIN in captured.snapshot.origins


@pytest.mark.anyio
async def test_a_failed_browser_read_drops_the_snapshot_load_under_way() -> None:
    class DeadConn(HeldConn):
        async def send(self, method: str, params: Any = None, **_: Any) -> dict[str, Any]:
            raise BrowserUnavailable("gone")

    ref = BrowserRef("chromium", "http://127.0.0.1:1", "s", "ws://127.0.0.1:1", 1.0)
    browser = LiveBrowser(ref, DeadConn(), LeaveTracker.at_birth(), "main")  # type: ignore[arg-type]
    never = asyncio.Event()
    cancelled = []

    async def load() -> SiteData | None:
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return None

    with pytest.raises(BrowserUnavailable):
        await read_snapshot(browser, [ORIGIN], load(), deadline=5.0, cap=1 << 20, now=1.0)
    for _ in range(10):
        await asyncio.sleep(0)
    assert cancelled == [True]
