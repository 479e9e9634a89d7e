"""An operation that fails because of one of its arguments names it in ``field`` (SPEC §5,
§17): an unknown selector, a stale ref, an unknown secret, an unreachable URL. The browser
is faked at the BiDi boundary only; secrets come from a real vault on an in-memory store."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sitekeep.args import parse_args
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.errors import (
    AssertionFailed,
    BidiError,
    InvalidInput,
    NavigationFailed,
    NotFound,
    SecretNotAllowed,
    SitekeepError,
    StaleRef,
    error_json,
)
from sitekeep.model import BrowserRef
from sitekeep.seam.operations import HANDLERS, Context
from sitekeep.seam.session import _Secrets
from sitekeep.stores import open_database
from sitekeep.stores.cipher import Cipher
from sitekeep.stores.secrets import SqlSecretStore
from sitekeep.vault import Vault

pytestmark = pytest.mark.anyio

Reply = Callable[[dict[str, Any]], dict[str, Any]]
PAGE = "https://app.example.test/login"


def _value(value: Any) -> dict[str, Any]:
    return {"type": "success", "result": {"type": "string", "value": json.dumps(value)}}


class Conn:
    """The BiDi boundary: each method answers as ``replies`` says (the page's URL and
    title by default), and every command is recorded."""

    timeout = 5.0

    def __init__(self, **replies: Reply) -> None:
        self.replies = replies
        self.sent: list[str] = []

    def add_listener(self, event: str, listener: Callable[[dict[str, Any]], None]) -> Any:
        return lambda: None

    async def subscribe(self, events: list[str], contexts: Any = None) -> str:
        return "sub1"

    async def unsubscribe(self, subscription: str) -> None:
        pass

    async def send(self, method: str, params: Any = None, **_: Any) -> dict[str, Any]:
        self.sent.append(method)
        reply = self.replies.get(method.replace(".", "_"))
        if reply is not None:
            return reply(params)
        if method == "script.evaluate" and "location.href" in params["expression"]:
            return _value([PAGE, "Sign in"])
        raise AssertionError(f"unexpected {method}")


@pytest.fixture
def vault() -> Iterator[Vault]:
    database = open_database("memory://")
    yield Vault(SqlSecretStore(database), Cipher(bytes(range(32))))
    database.dispose()


def context(conn: Conn, vault: Vault) -> Context:
    ref = BrowserRef("chromium", "http://127.0.0.1:1", "s", "ws://127.0.0.1:1", 1.0)
    browser = LiveBrowser(ref, conn, LeaveTracker.at_birth(), "main")  # type: ignore[arg-type]

    class NoSave:
        async def read(self, *_: Any, **__: Any) -> Any:
            raise AssertionError("no save here")

    return Context(browser, None, (), _Secrets(vault, "t1"), NoSave())


async def run(conn: Conn, vault: Vault, op: str, **args: Any) -> SitekeepError:
    with pytest.raises(SitekeepError) as caught:
        await HANDLERS[op](context(conn, vault), parse_args(op, args))
    return caught.value


def no_nodes(_: dict[str, Any]) -> dict[str, Any]:
    return {"nodes": []}


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("click", {}),
        ("type", {"text": "dummy text"}),
        ("select", {"value": "de"}),
        ("type_secret", {"secret": "login", "field": "password"}),
    ],
)
async def test_an_unknown_selector_is_not_found_naming_the_selector(
    vault: Vault, op: str, args: dict[str, Any]
) -> None:
    await vault.put("t1", "login", "", ["app.example.test"], {"password": "dummy-pass-7f3a"})
    error = await run(Conn(browsingContext_locateNodes=no_nodes), vault, op, selector="#x", **args)
    assert isinstance(error, NotFound)
    assert error.field == "selector"
    assert error.message == "no element matches the selector '#x'"
    assert "dummy-pass-7f3a" not in json.dumps(error_json(error))


async def test_a_message_quotes_only_a_bounded_prefix_of_a_long_selector(vault: Vault) -> None:
    selector = "#x" + ".y" * 600
    error = await run(Conn(browsingContext_locateNodes=no_nodes), vault, "click", selector=selector)
    assert error.field == "selector" and len(error.message) < 140


async def test_read_of_an_unknown_selector_is_not_found_naming_the_selector(vault: Vault) -> None:
    error = await run(
        Conn(script_callFunction=lambda _: _value(None)), vault, "read", selector="#x"
    )
    assert isinstance(error, NotFound) and error.field == "selector"
    assert error.message == "no element matches the selector '#x'"


@pytest.mark.parametrize("op", ["click", "type", "select"])
async def test_a_ref_without_a_snapshot_is_stale_naming_the_ref(vault: Vault, op: str) -> None:
    extra = {"type": {"text": "t"}, "select": {"value": "v"}}.get(op, {})
    error = await run(Conn(), vault, op, ref="e3", **extra)
    assert isinstance(error, StaleRef)
    assert (error.field, error.ref) == ("ref", "e3")


async def test_an_element_gone_under_a_selector_is_stale_naming_the_selector(vault: Vault) -> None:
    def gone(_: dict[str, Any]) -> dict[str, Any]:
        raise BidiError("no such node", "script.callFunction")

    conn = Conn(
        browsingContext_locateNodes=lambda _: {"nodes": [{"sharedId": "n1"}]},
        script_callFunction=gone,
    )
    error = await run(conn, vault, "click", selector="#go")
    assert isinstance(error, StaleRef)
    assert error.field == "selector" and error.ref is None
    assert "'#go'" in error.message and "ref '" not in error.message


async def test_a_select_on_an_element_that_is_no_select_blames_the_selector(vault: Vault) -> None:
    conn = Conn(
        browsingContext_locateNodes=lambda _: {"nodes": [{"sharedId": "n1"}]},
        script_callFunction=lambda _: _value({"error": "not a select element"}),
    )
    error = await run(conn, vault, "select", selector="#name", value="de")
    assert isinstance(error, InvalidInput) and error.field == "selector"


async def test_a_select_error_quotes_no_unbounded_page_text(vault: Vault) -> None:
    """The page runs the select script in its own realm (it may replace JSON.stringify):
    its answer is the page's to choose; an error quotes at most a bounded cut of it."""
    huge = "L" * 100_000
    for answer in ({"error": huge}, {"error": huge, "options": [huge] * 50}):
        conn = Conn(
            browsingContext_locateNodes=lambda _: {"nodes": [{"sharedId": "n1"}]},
            script_callFunction=lambda _, answer=answer: _value(answer),
        )
        error = await run(conn, vault, "select", selector="#name", value="de")
        assert isinstance(error, InvalidInput) and len(error.message) < 5000


async def test_read_returns_at_most_max_chars_whatever_the_page_answers(vault: Vault) -> None:
    conn = Conn(script_callFunction=lambda _: _value({"text": "x" * 50_000, "length": 10}))
    done = await HANDLERS["read"](context(conn, vault), parse_args("read", {"max_chars": 100}))
    assert len(done.result["text"]) < 200 and done.result["length"] >= 50_000


async def test_an_unknown_secret_is_not_found_naming_the_secret(vault: Vault) -> None:
    conn = Conn()
    error = await run(conn, vault, "type_secret", ref="e1", secret="nope", field="password")
    assert isinstance(error, NotFound)
    assert (error.field, error.kind) == ("secret", "secret")
    assert conn.sent == []  # refused before the browser was asked anything


async def test_a_secret_not_allowed_on_the_page_names_the_secret(vault: Vault) -> None:
    await vault.put("t1", "login", "", ["other.example.test"], {"password": "dummy-pass-7f3a"})
    error = await run(Conn(), vault, "type_secret", ref="e1", secret="login", field="password")
    assert isinstance(error, SecretNotAllowed)
    assert (error.field, error.secret, error.host) == ("secret", "login", "app.example.test")


async def test_an_unreachable_url_is_navigation_failed_naming_the_url(vault: Vault) -> None:
    def unreachable(_: dict[str, Any]) -> dict[str, Any]:
        raise BidiError("unknown error", "browsingContext.navigate", "net::ERR_NAME_NOT_RESOLVED")

    conn = Conn(browsingContext_navigate=unreachable)
    error = await run(conn, vault, "navigate", url="https://nowhere.example.test/")
    assert isinstance(error, NavigationFailed)
    assert error_json(error) == {
        "type": "navigation_failed",
        "message": "the page could not be loaded: net::ERR_NAME_NOT_RESOLVED",
        "field": "url",
        "reason": "net::ERR_NAME_NOT_RESOLVED",
    }


@pytest.mark.parametrize(
    ("args", "field"), [({"text": "Welcome"}, "text"), ({"selector": "#done"}, "selector")]
)
async def test_wait_for_that_times_out_names_what_it_waited_for(
    vault: Vault, args: dict[str, Any], field: str
) -> None:
    conn = Conn(script_callFunction=lambda _: _value(False))
    error = await run(conn, vault, "wait_for", timeout=0.05, **args)
    assert isinstance(error, AssertionFailed) and error.field == field


async def test_a_disabled_element_named_by_a_selector_blames_the_selector(vault: Vault) -> None:
    conn = Conn(
        browsingContext_locateNodes=lambda _: {"nodes": [{"sharedId": "n1"}]},
        script_callFunction=lambda _: _value({"disabled": True, "connected": True}),
    )
    error = await run(conn, vault, "click", selector="#send")
    assert isinstance(error, InvalidInput) and error.field == "selector"
