"""``browser.guard``: every refused endpoint gets an intercept, the ones that appear while
a browser runs too (attacker review C1: a page reached the shared chromedriver)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from sitekeep.address import Refused, ServerAddress
from sitekeep.browser.guard import OwnAddressGuard

pytestmark = pytest.mark.anyio


class FakeConn:
    """The BiDi boundary: records what the guard sends, hands out intercept ids."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.listeners: dict[str, Callable[[dict[str, Any]], None]] = {}
        self.closed = False

    def add_listener(self, event: str, listener: Callable[[dict[str, Any]], None]) -> None:
        self.listeners[event] = listener

    def on_close(self, callback: Callable[[], None]) -> None:
        pass

    async def subscribe(self, events: list[str]) -> None:
        pass

    async def send(self, method: str, params: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.sent.append((method, params))
        return {"intercept": f"i{len(self.sent)}"} if method == "network.addIntercept" else {}


def blocked(conn: FakeConn, ident: str, url: str, intercept: str) -> None:
    conn.listeners["network.beforeRequestSent"](
        {"isBlocked": True, "intercepts": [intercept], "request": {"request": ident, "url": url}}
    )


async def test_an_endpoint_that_appears_later_is_intercepted_and_refused_in_any_spelling() -> None:
    refused = Refused(ServerAddress.listening("127.0.0.1", 8700))
    conn = FakeConn()
    guard = OwnAddressGuard(refused)
    await guard.install(conn)  # type: ignore[arg-type]
    assert conn.sent[0][1]["urlPatterns"] == [{"type": "pattern", "port": "8700"}]

    await refused.add("http://127.0.0.1:9515")  # a driver started after this browser
    method, params = conn.sent[-1]
    assert method == "network.addIntercept"
    assert params["urlPatterns"] == [{"type": "pattern", "port": "9515"}]
    late = "i2"

    blocked(conn, "r1", "http://127.1:9515/sessions", late)
    blocked(conn, "r2", "http://0x7f000001:9515/session/x/cookie", late)
    blocked(conn, "r3", "http://10.9.9.9:9515/", late)  # another machine's port 9515
    await anyio.wait_all_tasks_blocked()
    answers = {p["request"]: m for m, p in conn.sent if m != "network.addIntercept"}
    assert answers == {
        "r1": "network.failRequest",
        "r2": "network.failRequest",
        "r3": "network.continueRequest",
    }
    assert guard.refusals == 2
