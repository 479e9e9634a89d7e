"""``LiveBrowser.evaluate_json``: a call with only booleans, integers and None goes as one
``script.evaluate`` (cheaper on Chromium's mapper, issue #15); text is never spliced into
script source — it goes as ``script.callFunction`` arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.errors import BidiError
from sitekeep.model import BrowserRef

FN = "async (a, b, c) => JSON.stringify([a, b, c])"


class Conn:
    timeout = 5.0

    def __init__(self, reply: dict[str, Any]) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.reply = reply

    async def send(self, method: str, params: Any = None, **_: Any) -> dict[str, Any]:
        self.sent.append((method, params))
        return self.reply


def _browser(conn: Conn) -> LiveBrowser:
    ref = BrowserRef("chromium", "http://127.0.0.1:1", "s", "ws://127.0.0.1:1", 1.0)
    return LiveBrowser(ref, conn, LeaveTracker.at_birth(), "main")  # type: ignore[arg-type]


def _ok(value: Any) -> dict[str, Any]:
    return {"type": "success", "result": {"type": "string", "value": json.dumps(value)}}


@pytest.mark.anyio
async def test_booleans_integers_and_none_go_inline_in_one_evaluate() -> None:
    conn = Conn(_ok([True, 3, None]))
    got = await _browser(conn).evaluate_json(FN, True, 3, None, await_promise=True)

    assert got == [True, 3, None]
    [(method, params)] = conn.sent
    assert method == "script.evaluate"
    assert params["expression"] == f"({FN})(true, 3, null)"
    assert params["target"] == {"context": "main"}
    assert params["awaitPromise"] is True
    assert params["resultOwnership"] == "none"


@pytest.mark.anyio
async def test_text_goes_as_arguments_never_into_the_source() -> None:
    conn = Conn(_ok(["x", 1, False]))
    await _browser(conn).evaluate_json(FN, "'); alert(1); ('", 1, False, realm="r1")

    [(method, params)] = conn.sent
    assert method == "script.callFunction"
    assert params["functionDeclaration"] == FN
    assert params["arguments"] == [
        {"type": "string", "value": "'); alert(1); ('"},
        {"type": "number", "value": 1},
        {"type": "boolean", "value": False},
    ]
    assert params["target"] == {"realm": "r1"}


@pytest.mark.anyio
async def test_an_exception_in_the_page_is_a_javascript_error() -> None:
    conn = Conn({"type": "exception", "exceptionDetails": {}})
    with pytest.raises(BidiError) as caught:
        await _browser(conn).evaluate_json("() => { throw 1 }")
    assert caught.value.code == "javascript error"
