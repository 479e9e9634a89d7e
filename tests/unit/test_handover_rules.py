"""The rules of a WebDriver handover, attacked without a browser (SPEC §21; issue #24).

What a handed-out endpoint relays, in every spelling an outsider would try: paths (``..``,
``%2f``, double slashes, another id in another case), methods, vendor commands, URLs and
file paths; BiDi commands that would undo sitekeep's hold on the browser; and what its
answers may carry (no driver address, no driver session id).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest

from sitekeep.address import Refused, ServerAddress
from sitekeep.browser import wire
from sitekeep.browser.handover_bidi import IN_FLIGHT, BidiGate, BidiRefusal
from sitekeep.browser.handover_classic import (
    Refusal,
    check_command,
    parse_body,
    parse_path,
    route,
)
from sitekeep.browser.scrub import HIDDEN, Scrubber
from sitekeep.cli.logs import GrantMask
from sitekeep.model import BrowserRef

SID = "3f2a9c0d8e7b6a5f4e3d2c1b0a998877"
"""The session id a handover gave out."""
DRIVER = "http://127.0.0.1:9515"
REAL = "c0ffee00c0ffee00c0ffee00c0ffee00"
REF = BrowserRef(
    "chromium", DRIVER, REAL, f"ws://127.0.0.1:9515/session/{REAL}", 0.0, debugger="127.0.0.1:41000"
)
GRID = "http://grid-user:grid-pass@grid.internal:4444"


def refused() -> Refused:
    endpoints = [DRIVER, GRID, REF.ws_url, f"http://{REF.debugger}"]  # as the manager adds them
    return Refused(ServerAddress.listening("127.0.0.1", 8700), endpoints)


# -- WebDriver classic: paths ---------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/../../sessions",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/%2e%2e/%2E%2E/sessions",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/..%2f..%2fsessions",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"//url",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/url/",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/element%2factive",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/element%5cactive",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/title%00",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/title%0d%0aHost:%20x",
        b"/v1/webdriver/wd_x/session/" + SID.encode() + b"/%ff",
        b"/v1/webdriver/wd_x/./session",
        b"v1/webdriver/wd_x/status",
    ],
)
def test_a_path_with_a_dot_empty_or_unsafe_segment_is_refused(raw: bytes) -> None:
    with pytest.raises(Refusal) as refused_:
        parse_path(raw)
    assert refused_.value.code == "invalid argument" and refused_.value.status == 400


def test_a_segment_is_decoded_once() -> None:
    assert parse_path(b"/a/%2561/b%20c") == ["a", "%61", "b c"]


@pytest.mark.parametrize(
    ("method", "tail", "code"),
    [
        ("GET", ["sessions"], "unknown command"),
        ("POST", ["session"], "session not created"),
        ("GET", ["session"], "unknown command"),
        ("GET", ["session", REAL, "cookie"], "invalid session id"),
        ("GET", ["session", SID.upper(), "cookie"], "invalid session id"),
        ("GET", ["session", SID + " ", "cookie"], "invalid session id"),
        ("DELETE", ["session", SID], "unsupported operation"),
        ("GET", ["session", SID], "unknown command"),
        ("POST", ["session", SID, "goog", "cdp", "execute"], "unknown command"),
        ("POST", ["session", SID, "moz", "context"], "unknown command"),
        ("POST", ["session", SID, "moz", "addon", "install"], "unknown command"),
        ("POST", ["session", SID, "se", "file"], "unknown command"),
        ("GET", ["session", SID, "se", "files"], "unknown command"),
        ("POST", ["session", SID, "chromium", "launch_app"], "unknown command"),
        ("POST", ["session", SID, "webauthn", "authenticator"], "unknown command"),
        ("GET", ["session", SID, "URL"], "unknown command"),
        ("PUT", ["session", SID, "url"], "unknown method"),
        ("POST", ["session", SID, "title"], "unknown method"),
        ("GET", ["status", "x"], "unknown command"),
        ("POST", ["status"], "unknown command"),
    ],
)
def test_only_the_handed_out_session_and_w3c_commands_are_routed(
    method: str, tail: list[str], code: str
) -> None:
    with pytest.raises(Refusal) as refused_:
        route(method, tail, SID)
    assert refused_.value.code == code, refused_.value.message


def test_w3c_commands_of_the_handed_out_session_are_routed() -> None:
    assert route("GET", ["status"], SID) is None
    click = route("POST", ["session", SID, "element", "f.1.d.2.e.3", "click"], SID)
    assert click is not None and click.pattern == ("element", "*", "click")
    active = route("GET", ["session", SID, "element", "active"], SID)
    assert active is not None and active.pattern == ("element", "active")
    for method, tail in (
        ("GET", ["cookie", "a b"]),
        ("DELETE", ["cookie"]),
        ("POST", ["execute", "async"]),
        ("DELETE", ["window"]),
        ("GET", ["element", "x", "css", "background-color"]),
    ):
        assert route(method, ["session", SID, *tail], SID) is not None, tail


# -- WebDriver classic: what a command may reach ----------------------------------------


def _check(tail: list[str], body: dict[str, Any]) -> None:
    command = route("POST", ["session", SID, *tail], SID)
    assert command is not None
    check_command(command, body, own=refused(), own_origins=["http://127.0.0.1:8700"])


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/hostname",
        "FILE:///etc/hostname",
        "chrome://version",
        "about:config",
        "view-source:http://app.example.test/",
        "javascript:alert(1)",
        "data:text/html,<p>x",
        "http://127.1:9515/sessions",
        "http://0x7f000001:9515/session/x/cookie",
        "http://[::ffff:127.0.0.1]:41000/json/list",
        "http://localhost.:8700/v1/sessions",
        "http://grid.internal:4444/status",
        None,
        7,
    ],
)
def test_a_navigation_goes_only_where_an_agent_may(url: Any) -> None:
    with pytest.raises(Refusal) as refused_:
        _check(["url"], {"url": url})
    assert refused_.value.code == "invalid argument"
    assert refused_.value.message.startswith("url: ")


@pytest.mark.parametrize(
    "text",
    ["/etc/passwd", " /root/.ssh/id_rsa", "note\n/etc/hostname", "C:\\secret.txt", "\\\\srv\\s"],
)
def test_send_keys_never_types_an_absolute_path(text: str) -> None:
    with pytest.raises(Refusal, match="absolute path"):
        _check(["element", "e1", "value"], {"text": text})


def test_ordinary_text_and_urls_pass() -> None:
    _check(["element", "e1", "value"], {"text": "alice@example.test\ue007"})
    _check(["element", "e1", "value"], {"text": "a/b and ~me"})
    _check(["url"], {"url": "http://app.example.test:8001/login"})
    _check(["url"], {"url": "about:blank"})


def test_a_body_must_be_a_json_object() -> None:
    command = route("POST", ["session", SID, "url"], SID)
    assert command is not None
    for raw in (b"[]", b'"x"', b"{", b"\xff"):
        with pytest.raises(Refusal):
            parse_body(command, raw)
    assert parse_body(command, b"") == {}
    get = route("GET", ["session", SID, "url"], SID)
    assert get is not None and parse_body(get, b"{not json") is None  # never sent on


# -- what an answer may carry -----------------------------------------------------------


def scrubber() -> Scrubber:
    return Scrubber(REF, SID, refused(), [GRID])


def test_no_driver_address_nor_driver_session_id_survives_an_answer() -> None:
    answer = {
        "value": {
            "error": "unknown error",
            "message": (
                f"session {REAL} at {DRIVER}/session/{REAL}: ws://127.0.0.1:9515/x, "
                "localhost:9515, [::1]:9515, 127.1:41000, grid-user:grid-pass@grid.internal:4444"
                ", grid.internal:4444, app.example.test:8001 stays, 12:30 stays"
                "\nBuild info: version: '4.20.0'\nSystem info: host: 'node-7', ip: '10.0.0.7'"
            ),
            "stacktrace": "#0 0x55d3 <unknown> http://127.0.0.1:9515",
            "data": {REAL: [DRIVER]},
        }
    }
    out = json.dumps(scrubber().value(answer))
    for word in (REAL, "9515", "41000", "grid-pass", "grid.internal", "node-7", "10.0.0.7"):
        assert word not in out, word
    assert SID in out and HIDDEN in out
    assert "app.example.test:8001 stays" in out and "12:30 stays" in out
    assert json.loads(out)["value"]["stacktrace"] == ""


def test_scrubbing_is_linear_in_the_text() -> None:
    # Ports a host-first pattern would rescan: its work grows with the square of the text.
    # Linear means 8x the text costs about 8x the CPU time (quadratic: 64x); the best of
    # three, in this process's CPU time, so other processes' load cannot fake a growth.
    unit = "x" * 200 + ":12 "

    def cost(n: int) -> float:
        text = unit * n
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            assert scrubber().text(text) == text
            best = min(best, time.process_time() - started)
        return max(best, 1e-4)

    assert cost(20_000) / cost(2_500) < 24


def test_the_access_log_never_holds_a_grant() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/v1/webdriver/wd_AbC-123_x/session/s/url", "1.1", 200),
        None,
    )
    GrantMask().filter(record)
    assert "AbC" not in record.getMessage() and "/v1/webdriver/wd_…/session/s/url" in (
        record.getMessage()
    )


# -- WebDriver BiDi ---------------------------------------------------------------------


def gate() -> BidiGate:
    return BidiGate(own=refused(), own_origins=["http://127.0.0.1:8700"])


def command(g: BidiGate, method: str, params: dict[str, Any] | None = None, ident: int = 1) -> Any:
    return g.command(json.dumps({"id": ident, "method": method, "params": params or {}}))


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("session.new", {"capabilities": {}}),
        ("session.end", {}),
        ("browser.close", {}),
        (
            "browser.setDownloadBehavior",
            {"downloadBehavior": {"type": "allowed", "destinationFolder": "/"}},
        ),
        (
            "input.setFiles",
            {"context": "c", "element": {"sharedId": "s"}, "files": ["/etc/passwd"]},
        ),
        ("webExtension.install", {"extensionData": {"type": "path", "path": "/tmp/x"}}),
        ("goog:cdp.sendCommand", {"method": "Target.getTargets"}),
        ("moz:anything.x", {}),
        ("bluetooth.simulateAdapter", {}),
        (
            "browser.createUserContext",
            {"proxy": {"proxyType": "manual", "httpProxy": "127.0.0.1:9515"}},
        ),
        ("browsingContext.navigate", {"context": "c", "url": "file:///etc/hostname"}),
        ("browsingContext.navigate", {"context": "c", "url": "http://127.1:9515/sessions"}),
        ("network.removeIntercept", {"intercept": "sitekeeps-guard"}),
        ("script.removePreloadScript", {"script": "sitekeeps-preload"}),
        ("session.unsubscribe", {"subscriptions": ["sitekeeps"]}),
        ("session.unsubscribe", {"events": ["network.beforeRequestSent"]}),
        ("session.unsubscribe", {"events": ["network"], "contexts": ["c"]}),
        ("session.unsubscribe", {"subscriptions": [], "events": ["network"]}),
        ("session.unsubscribe", {"subscriptions": []}),
        ("session.unsubscribe", {}),
        ("network.continueRequest", {"request": "1.2"}),
        ("network.failRequest", {"request": "1.2"}),
        ("network.provideResponse", {"request": "1.2"}),
        ("network.continueWithAuth", {"request": "1.2", "action": "default"}),
        ("network.continueResponse", {"request": "1.2"}),
        ("nodot", {}),
        ("session.subscribe", {"events": ["goog:cdp.Target.targetCreated"]}),
        ("session.subscribe", {"events": ["log.entryAdded", "goog:cdp"]}),
        ("session.subscribe", {"events": "network"}),
    ],
)
def test_a_bidi_command_beyond_the_browser_or_against_sitekeeps_hold_is_refused(
    method: str, params: dict[str, Any]
) -> None:
    with pytest.raises(BidiRefusal) as refused_:
        command(gate(), method, params, ident=41)
    assert refused_.value.ident == 41
    error = json.loads(refused_.value.text())
    assert error["type"] == "error" and error["id"] == 41 and error["error"] and error["message"]


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"method": "session.status", "params": {}}',
        '{"id": true, "method": "session.status", "params": {}}',
        '{"id": -1, "method": "session.status", "params": {}}',
        '{"id": 1.5, "method": "session.status", "params": {}}',
        '{"id": 9007199254740992, "method": "session.status", "params": {}}',
        '{"id": "1", "method": "session.status", "params": {}}',
        '{"id": 1, "method": 7, "params": {}}',
        '{"id": 1, "method": "session.status", "params": []}',
    ],
)
def test_a_message_that_is_no_command_is_refused(text: str) -> None:
    with pytest.raises(BidiRefusal) as refused_:
        gate().command(text)
    assert refused_.value.code == "invalid argument"


def test_ids_are_the_relays_own_upstream_and_the_clients_in_answers() -> None:
    g = gate()
    first, second = command(g, "session.status", ident=7), command(g, "session.status", ident=7)
    assert first.ident != second.ident  # a client reusing ids cannot answer for another
    assert json.loads(first.text())["id"] == first.ident
    _, answer = g.answer({"type": "success", "id": second.ident, "result": {}})
    assert answer == {"type": "success", "id": 7, "result": {}}
    assert g.answer({"type": "success", "id": second.ident, "result": {}}) == (None, None)
    own = g.own(wire.browsing_context_get_tree())
    assert g.answer({"type": "success", "id": own.ident, "result": {}}) == (own.ident, None)


def test_only_what_this_socket_made_is_removed_or_released() -> None:
    g = gate()
    added = command(g, "network.addIntercept", {"phases": ["beforeRequestSent"]}, ident=1)
    g.answer({"type": "success", "id": added.ident, "result": {"intercept": "mine"}})
    assert command(g, "network.removeIntercept", {"intercept": "mine"}).method
    subscribed = command(g, "session.subscribe", {"events": ["network"]})
    g.answer({"type": "success", "id": subscribed.ident, "result": {"subscription": "sub"}})
    assert command(g, "session.unsubscribe", {"subscriptions": ["sub"]}).method
    with pytest.raises(BidiRefusal):
        command(g, "session.unsubscribe", {"subscriptions": ["sub", "theirs"]})

    def blocked(request: str, intercepts: list[str], url: str) -> None:
        g.answer(
            {
                "type": "event",
                "method": "network.beforeRequestSent",
                "params": {
                    "isBlocked": True,
                    "intercepts": intercepts,
                    "request": {"request": request, "url": url},
                },
            }
        )

    blocked("1.1", ["mine"], "http://app.example.test/")
    blocked("1.2", ["guard"], "http://app.example.test/")
    blocked("1.3", ["mine", "guard"], "http://127.1:9515/sessions")
    assert not command(g, "network.continueRequest", {"request": "1.1"}).released
    with pytest.raises(BidiRefusal, match="not blocked by an intercept of this socket"):
        command(g, "network.continueRequest", {"request": "1.2"})
    with pytest.raises(BidiRefusal, match="url"):
        command(g, "network.continueRequest", {"request": "1.1", "url": DRIVER})
    # Held by sitekeep's guard too: released only after its URL is checked.
    co_held = command(g, "network.continueRequest", {"request": "1.3"})
    assert co_held.urgent and co_held.released == "http://127.1:9515/sessions"
    assert not command(g, "network.failRequest", {"request": "1.3"}).released
    # A finished request is forgotten.
    g.answer(
        {"type": "event", "method": "network.fetchError", "params": {"request": {"request": "1.1"}}}
    )
    with pytest.raises(BidiRefusal):
        command(g, "network.provideResponse", {"request": "1.1"})
    removals = g.clean_up()
    assert [r.params for r in removals] == [{"intercept": "mine"}]


def test_commands_in_flight_are_bounded() -> None:
    g = gate()
    for i in range(IN_FLIGHT):
        command(g, "session.status", ident=i)
    with pytest.raises(BidiRefusal, match="unanswered"):
        command(g, "session.status", ident=IN_FLIGHT)


def test_no_proxy_credentials_reach_the_client_in_an_event() -> None:
    headers = [
        {"name": "Proxy-Authorization", "value": {"type": "string", "value": "Basic dTpw"}},
        {"name": "proxy-authorization", "value": {"type": "string", "value": "Basic dTpw"}},
        {"name": "Accept", "value": {"type": "string", "value": "*/*"}},
    ]
    event = {
        "type": "event",
        "method": "network.beforeRequestSent",
        "params": {"request": {"request": "1.1", "url": "http://a.test/", "headers": headers}},
    }
    _, shown = gate().answer(event)
    assert shown is not None and "dTpw" not in json.dumps(shown)
    assert [h["name"] for h in shown["params"]["request"]["headers"]] == ["Accept"]
