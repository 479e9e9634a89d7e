"""The BiDi wire in one place (``sitekeep.browser.wire``, issue #25 item 4): each command's
shape as it goes on the socket, sending through the connection boundary, event names —
and no module but the wire spells a command or event name."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sitekeep.browser import wire

SRC = Path(__file__).resolve().parents[2] / "src" / "sitekeep"
WIRE = SRC / "browser" / "wire"

_MODULES = (
    "session|browser|browsingContext|emulation|input|log|network|permissions|script|storage"
    "|webExtension"
)
NAME = re.compile(rf"({_MODULES})\.[a-z][A-Za-z]*")
"""A BiDi command or event name (W3C WebDriver BiDi §7: ``module.camelCase``)."""
_FILES = frozenset({"css", "html", "js", "json", "lock", "py", "sqlite", "toml", "txt"})
"""Suffixes that make a ``module.word`` string a file name (``session.html``)."""

TAB = "ctx-1"
SHAPES: list[tuple[wire.Command[Any], str, dict[str, Any]]] = [
    (wire.session_subscribe(["browsingContext.load"]), "session.subscribe",
     {"events": ["browsingContext.load"]}),
    (wire.session_subscribe(["network"], [TAB]), "session.subscribe",
     {"events": ["network"], "contexts": [TAB]}),
    (wire.session_unsubscribe(["sub-1"]), "session.unsubscribe", {"subscriptions": ["sub-1"]}),
    (wire.browser_get_user_contexts(), "browser.getUserContexts", {}),
    (wire.browsing_context_get_tree(), "browsingContext.getTree", {}),
    (wire.browsing_context_get_tree(max_depth=0), "browsingContext.getTree", {"maxDepth": 0}),
    (wire.browsing_context_get_tree(root=TAB), "browsingContext.getTree", {"root": TAB}),
    (wire.browsing_context_create(), "browsingContext.create", {"type": "tab"}),
    (wire.browsing_context_create(background=True), "browsingContext.create",
     {"type": "tab", "background": True}),
    (wire.browsing_context_close(TAB), "browsingContext.close", {"context": TAB}),
    (wire.browsing_context_navigate(TAB, "http://a.test/", wait="complete"),
     "browsingContext.navigate", {"context": TAB, "url": "http://a.test/", "wait": "complete"}),
    (wire.browsing_context_reload(TAB, ignore_cache=True, wait="complete"),
     "browsingContext.reload", {"context": TAB, "ignoreCache": True, "wait": "complete"}),
    (wire.browsing_context_traverse_history(TAB, -1), "browsingContext.traverseHistory",
     {"context": TAB, "delta": -1}),
    (wire.browsing_context_locate_nodes(TAB, wire.css_locator("#a"), max_node_count=1),
     "browsingContext.locateNodes",
     {"context": TAB, "locator": {"type": "css", "value": "#a"}, "maxNodeCount": 1}),
    (wire.browsing_context_capture_screenshot(TAB), "browsingContext.captureScreenshot",
     {"context": TAB, "origin": "viewport"}),
    (wire.browsing_context_capture_screenshot(TAB, image_format={"type": "image/jpeg"}),
     "browsingContext.captureScreenshot",
     {"context": TAB, "format": {"type": "image/jpeg"}, "origin": "viewport"}),
    (wire.browsing_context_set_viewport(TAB, 800, 600, device_pixel_ratio=1),
     "browsingContext.setViewport",
     {"context": TAB, "viewport": {"width": 800, "height": 600}, "devicePixelRatio": 1}),
    (wire.script_evaluate("1", wire.context_target(TAB), await_promise=True), "script.evaluate",
     {"expression": "1", "target": {"context": TAB}, "awaitPromise": True,
      "resultOwnership": "none"}),
    (wire.script_call_function("(a) => a", wire.realm_target("r-1"), await_promise=False,
                               arguments=[wire.local_value("x")]),
     "script.callFunction",
     {"functionDeclaration": "(a) => a", "arguments": [{"type": "string", "value": "x"}],
      "target": {"realm": "r-1"}, "awaitPromise": False, "resultOwnership": "none"}),
    (wire.script_call_function("() => 1", wire.context_target(TAB, sandbox="s"),
                               await_promise=False, result_ownership=None,
                               serialization_options={"maxDomDepth": 0}),
     "script.callFunction",
     {"functionDeclaration": "() => 1", "target": {"context": TAB, "sandbox": "s"},
      "awaitPromise": False, "serializationOptions": {"maxDomDepth": 0}}),
    (wire.script_get_realms(kind="window"), "script.getRealms", {"type": "window"}),
    (wire.script_add_preload_script("() => {}", arguments=[wire.channel_value("ch")]),
     "script.addPreloadScript",
     {"functionDeclaration": "() => {}",
      "arguments": [{"type": "channel", "value": {"channel": "ch"}}]}),
    (wire.script_add_preload_script("() => {}", contexts=[TAB]), "script.addPreloadScript",
     {"functionDeclaration": "() => {}", "contexts": [TAB]}),
    (wire.script_remove_preload_script("p-1"), "script.removePreloadScript", {"script": "p-1"}),
    (wire.storage_get_cookies(), "storage.getCookies", {}),
    (wire.storage_get_cookies(user_context="default"), "storage.getCookies",
     {"partition": {"type": "storageKey", "userContext": "default"}}),
    (wire.storage_set_cookie({"name": "n", "domain": "a.test"}), "storage.setCookie",
     {"cookie": {"name": "n", "domain": "a.test"}}),
    (wire.storage_delete_cookies({"name": "n", "domain": ".a.test", "path": "/"}),
     "storage.deleteCookies", {"filter": {"name": "n", "domain": ".a.test", "path": "/"}}),
    (wire.network_add_intercept(["authRequired"]), "network.addIntercept",
     {"phases": ["authRequired"]}),
    (wire.network_add_intercept(["beforeRequestSent"], contexts=[TAB],
                                url_patterns=[{"type": "pattern", "pathname": "/p"}]),
     "network.addIntercept",
     {"phases": ["beforeRequestSent"], "contexts": [TAB],
      "urlPatterns": [{"type": "pattern", "pathname": "/p"}]}),
    (wire.network_remove_intercept("i-1"), "network.removeIntercept", {"intercept": "i-1"}),
    (wire.network_continue_request("q-1"), "network.continueRequest", {"request": "q-1"}),
    (wire.network_fail_request("q-1"), "network.failRequest", {"request": "q-1"}),
    (wire.network_continue_with_auth("q-1", {"action": "cancel"}), "network.continueWithAuth",
     {"request": "q-1", "action": "cancel"}),
    (wire.network_provide_response("q-1", status_code=200, reason_phrase="OK",
                                   headers=[wire.header("Cache-Control", "no-store")],
                                   body="<p>"),
     "network.provideResponse",
     {"request": "q-1", "statusCode": 200, "reasonPhrase": "OK",
      "headers": [{"name": "Cache-Control", "value": {"type": "string", "value": "no-store"}}],
      "body": {"type": "string", "value": "<p>"}}),
    (wire.input_perform_actions(TAB, [{"type": "none", "id": "n", "actions": []}]),
     "input.performActions",
     {"context": TAB, "actions": [{"type": "none", "id": "n", "actions": []}]}),
    (wire.input_release_actions(TAB), "input.releaseActions", {"context": TAB}),
    (wire.emulation_set_user_agent_override("UA/1"), "emulation.setUserAgentOverride",
     {"userAgent": "UA/1"}),
]  # fmt: skip


@pytest.mark.parametrize(("command", "method", "params"), SHAPES, ids=[s[1] for s in SHAPES])
def test_each_command_goes_on_the_wire_as_the_spec_spells_it(
    command: wire.Command[Any], method: str, params: dict[str, Any]
) -> None:
    assert command.method == method
    assert dict(command.params) == params


def _snake(name: str) -> str:
    """``browsingContext.getTree`` → ``browsing_context_get_tree``."""
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), name.replace(".", "_"))


def test_every_command_the_wire_builds_has_its_shape_pinned() -> None:
    prefixes = tuple(_snake(module) + "_" for module in _MODULES.split("|"))
    builders = {n for n in wire.__all__ if n.startswith(prefixes) and callable(getattr(wire, n))}
    assert builders == {_snake(method) for _, method, _ in SHAPES}


def test_local_values_are_typed_primitives_and_nothing_else() -> None:
    assert wire.local_value(True) == {"type": "boolean", "value": True}
    assert wire.local_value(3) == {"type": "number", "value": 3}
    assert wire.local_value(None) == {"type": "null"}
    assert wire.shared_reference("s-1") == {"sharedId": "s-1"}
    with pytest.raises(TypeError):
        wire.local_value({"a": 1})


class FakeConn:
    """The BiDi boundary: records each command, answers from ``results``."""

    def __init__(self, results: Mapping[str, dict[str, Any]]) -> None:
        self.results = results
        self.sent: list[tuple[str, Mapping[str, Any] | None, float | None]] = []

    async def send(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        self.sent.append((method, params, timeout))
        return self.results[method]


@pytest.mark.anyio
async def test_a_command_is_sent_through_the_connection_with_its_timeout() -> None:
    conn = FakeConn({"browsingContext.create": {"context": "tab-2"}})
    created = await wire.call(conn, wire.browsing_context_create(background=True), timeout=2.5)
    assert created["context"] == "tab-2"
    assert conn.sent == [("browsingContext.create", {"type": "tab", "background": True}, 2.5)]


def test_an_event_is_its_name() -> None:
    listeners = {"browsingContext.load": "on_load"}
    assert listeners[wire.BROWSING_CONTEXT_LOAD] == "on_load"
    assert wire.SCRIPT_MESSAGE == "script.message"
    assert wire.NETWORK_BEFORE_REQUEST_SENT in {"network.beforeRequestSent"}


def _spelled_names(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each string in ``path`` that is a BiDi command or event name
    (docstrings and other bare string statements aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bare = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        text = node.value
        if id(node) in bare or not NAME.fullmatch(text) or text.rsplit(".", 1)[1] in _FILES:
            continue
        found.append((node.lineno, text))
    return found


def test_no_module_but_the_wire_spells_a_command_or_event_name() -> None:
    spelled = {
        f"{path.relative_to(SRC)}:{line} {text}"
        for path in SRC.rglob("*.py")
        if "node_modules" not in path.parts and WIRE not in path.parents
        for line, text in _spelled_names(path)
    }
    assert spelled == set()


def test_the_name_rule_knows_every_name_the_wire_declares() -> None:
    names = [v for n in wire.__all__ if n.isupper() and isinstance(v := getattr(wire, n), str)]
    assert len(names) > 40
    assert all(NAME.fullmatch(v) and v.rsplit(".", 1)[1] not in _FILES for v in names)
    assert len(set(names)) == len(names)  # no name declared twice
