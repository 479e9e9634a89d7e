"""A restore's round trips (issue #15): what can go out together does.

The load subscription a restore needs for its ``location.replace`` navigations goes out
beside its first writes, not a round trip before them, and leaves beside the landing
check; a fresh Firefox, whose only navigation goes by ``browsingContext.navigate``, never
subscribes. With spare pages, the spare intercept and both subscriptions go at once, and
the jar is read beside the last page's acknowledgements.

The fake answers every command sent in one turn of the loop as one batch, so the batches
are the round trips a real browser would make a restore wait for.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.restore import restore
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.cookies import to_bidi
from sitekeep.errors import BidiError
from sitekeep.model import BrowserKind, BrowserRef, Cookie, OriginStorage, SiteData

A = "http://a.example.test:8000"
B = "http://b.a.example.test:8000"
LAND = f"{A}/page"


class BatchConn:
    """The BiDi boundary: commands sent in one turn are answered together, as a batch."""

    timeout = 5.0
    closed = False

    def __init__(self, jar: list[dict[str, Any]]) -> None:
        self.batches: list[list[str]] = [[]]
        self._waiting: list[tuple[asyncio.Future[Any], Any]] = []
        self._listeners: dict[str, list[Callable[[dict[str, Any]], None]]] = {}
        self._jar = jar
        self._subs = 0
        self.refuse: set[str] = set()
        """Methods answered with a BiDi error."""
        self._pump: asyncio.Task[None] | None = None

    def add_listener(self, event: str, fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        self._listeners.setdefault(event, []).append(fn)
        return lambda: self._listeners[event].remove(fn)

    async def subscribe(self, events: Any, contexts: Any = None) -> str:
        result = await self.send("session.subscribe", {"events": list(events)})
        return str(result["subscription"])

    async def unsubscribe(self, subscription: str) -> None:
        await self.send("session.unsubscribe", {"subscriptions": [subscription]})

    async def wait_event(self, awaitable: Any, *, timeout: float, what: str) -> Any:
        return await awaitable

    async def send(self, method: str, params: Any = None, **_: Any) -> Any:
        label = method
        if method == "session.subscribe":
            label = f"subscribe {params['events'][0]}"
        elif method == "script.evaluate" and "__sitekeepAcks" in params["expression"]:
            label = "ACKS"
        self.batches[-1].append(label)
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((future, (method, params)))
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._answer_batch())
        return await future

    async def _answer_batch(self) -> None:
        while self._waiting:
            for _ in range(50):  # every task sends what it can before the batch is answered
                await asyncio.sleep(0)
            waiting, self._waiting = self._waiting, []
            self.batches.append([])
            loads = False
            for future, (method, params) in waiting:
                reply = self._reply(method, params)
                if isinstance(reply, Exception):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
                loads |= method == "script.callFunction" and "location.replace" in str(params)
            if loads:
                await asyncio.sleep(0)
                for fn in list(self._listeners.get("browsingContext.load", [])):
                    fn({"context": "main"})

    def _reply(self, method: str, params: Any) -> Any:
        if method in self.refuse:
            return BidiError("unknown error", method)
        if method == "session.subscribe":
            self._subs += 1
            return {"subscription": f"sub{self._subs}"}
        if method == "network.addIntercept":
            return {"intercept": "spare"}
        if method == "script.addPreloadScript":
            return {"script": "leave again" if "channel" in str(params) else "landing"}
        if method == "storage.getCookies":
            return {"cookies": self._jar}
        if method == "script.evaluate":
            expression = params["expression"]
            value = (
                json.dumps({A: "ok", B: "ok"})
                if "__sitekeepAcks" in expression
                else json.dumps("ok")
            )
            return {"type": "success", "result": {"type": "string", "value": value}}
        if method == "script.callFunction":
            return {"type": "success", "result": {"type": "undefined"}}
        return {}

    def rounds(self) -> list[list[str]]:
        return [sorted(b) for b in self.batches if b]


COOKIE = Cookie("sid", "dummy-value", "a.example.test", "/", expiry=None)


async def _restore(
    kind: BrowserKind,
    origins: dict[str, OriginStorage],
    cookies: tuple[Cookie, ...] = (),
    *,
    browser: LiveBrowser | None = None,
) -> tuple[BatchConn, Any]:
    if browser is None:
        browser = _browser(kind, cookies)
    snapshot = SiteData(cookies=cookies, origins=origins)
    report = await restore(browser, snapshot, LAND, now=1.0)
    return browser.conn, report  # type: ignore[return-value]


def _browser(
    kind: BrowserKind, cookies: tuple[Cookie, ...] = (), leave_script: str | None = None
) -> LiveBrowser:
    raw = [{**to_bidi(c, kind), "sameSite": "lax"} for c in cookies]  # as Chromium reports it
    ref = BrowserRef(kind, "http://127.0.0.1:1", "s", "ws://127.0.0.1:1", 1.0)
    conn = BatchConn(raw)
    return LiveBrowser(
        ref,
        conn,  # type: ignore[arg-type]
        LeaveTracker.at_birth(),
        "main",
        leave_script=leave_script,
    )


@pytest.mark.anyio
async def test_one_origin_into_chromium_subscribes_beside_its_writes_and_leaves_with_check() -> (
    None
):
    conn, report = await _restore("chromium", {A: OriginStorage({"k": "v"})}, (COOKIE,))

    assert conn.rounds() == [
        [
            "script.addPreloadScript",
            "storage.getCookies",
            "storage.setCookie",
            "subscribe browsingContext.load",
        ],
        ["script.callFunction"],  # location.replace, then its load
        ["script.evaluate", "script.removePreloadScript", "session.unsubscribe"],
    ]
    assert not report.skipped
    assert sorted(report.restored) == ["a.example.test"]


@pytest.mark.anyio
async def test_one_origin_into_a_fresh_firefox_never_subscribes() -> None:
    conn, report = await _restore("firefox", {A: OriginStorage({"k": "v"})})

    assert conn.rounds() == [
        ["script.addPreloadScript"],
        ["browsingContext.navigate"],
        ["script.evaluate", "script.removePreloadScript"],
    ]
    assert not report.skipped


@pytest.mark.anyio
async def test_spare_pages_start_in_one_round_and_read_the_jar_beside_the_acks() -> None:
    origins = {A: OriginStorage({"k": "v"}), B: OriginStorage({"k": "w"})}
    conn, report = await _restore("chromium", origins, (COOKIE,))

    rounds = conn.rounds()
    assert rounds[0] == [
        "network.addIntercept",
        "subscribe browsingContext.load",
        "subscribe network.beforeRequestSent",
    ]
    assert ["ACKS", "storage.getCookies"] in rounds
    assert sum(r.count("storage.getCookies") for r in rounds) == 1
    assert not report.skipped


TWO = {A: OriginStorage({"k": "v"}), B: OriginStorage({"k": "w"})}


@pytest.mark.anyio
async def test_the_leave_script_is_off_while_spare_pages_load_and_back_before_the_landing() -> None:
    browser = _browser("chromium", leave_script="leave")
    conn, report = await _restore("chromium", TWO, browser=browser)

    rounds = conn.rounds()
    assert "script.removePreloadScript" in rounds[0]  # beside the intercept
    back = next(i for i, r in enumerate(rounds) if "script.addPreloadScript" in r)
    assert "ACKS" in rounds[back]  # beside the acknowledgements: no round trip of its own
    landing = max(i for i, r in enumerate(rounds) if "script.callFunction" in r)
    assert back < landing
    assert browser.leave_script == "leave again"
    assert browser.tracker.complete
    assert not report.skipped


@pytest.mark.anyio
async def test_a_leave_script_that_cannot_come_back_leaves_the_tracker_untrusted() -> None:
    browser = _browser("chromium", leave_script="leave")
    browser.conn.refuse.add("script.addPreloadScript")  # type: ignore[attr-defined]
    await _restore("chromium", TWO, browser=browser)

    assert browser.leave_script is None
    assert not browser.tracker.complete
