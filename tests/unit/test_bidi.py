"""``sitekeep.browser.bidi.BidiConnection`` against a real local WebSocket peer.

The peer is a ``websockets`` server on 127.0.0.1 that records every command and replies only
when a test tells it to (the BiDi connection boundary is the one allowed fake). Event delivery
is awaited with a round trip: the reader handles messages in order, so once a command sent
after some events has its result, those events have reached their listeners.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import random
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from websockets.asyncio.server import ServerConnection, serve

from sitekeep.browser import bidi
from sitekeep.browser.bidi import BidiConnection
from sitekeep.errors import BidiError, BidiTimeout, BrowserUnavailable

pytestmark = pytest.mark.anyio

WAIT = 5.0
"""Seconds any single step may take before the test fails instead of hanging."""


class Peer:
    """The browser end of a BiDi socket, driven by the test."""

    def __init__(self) -> None:
        self.url = ""
        self.commands: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._ws: ServerConnection | None = None
        self._connected = asyncio.Event()

    async def handler(self, ws: ServerConnection) -> None:
        self._ws = ws
        self._connected.set()
        async for raw in ws:
            await self.commands.put(json.loads(raw))

    async def ws(self) -> ServerConnection:
        with anyio.fail_after(WAIT):
            await self._connected.wait()
        assert self._ws is not None
        return self._ws

    async def next_command(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            return await self.commands.get()

    async def send_raw(self, message: Any) -> None:
        await (await self.ws()).send(message if isinstance(message, str) else json.dumps(message))

    async def reply(self, command: dict[str, Any], result: dict[str, Any]) -> None:
        await self.send_raw({"type": "success", "id": command["id"], "result": result})

    async def error(self, command: dict[str, Any], code: str, message: str) -> None:
        await self.send_raw(
            {"type": "error", "id": command["id"], "error": code, "message": message}
        )

    async def event(self, method: str, params: dict[str, Any]) -> None:
        await self.send_raw({"type": "event", "method": method, "params": params})

    async def close(self) -> None:
        await (await self.ws()).close()


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    peer = Peer()
    async with serve(peer.handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        peer.url = f"ws://127.0.0.1:{port}/session/s1"
        yield peer


@pytest.fixture
async def conn(peer: Peer) -> AsyncIterator[BidiConnection]:
    connection = await BidiConnection.connect(peer.url, timeout=WAIT)
    yield connection
    await connection.close()


async def call(
    conn: BidiConnection, peer: Peer, method: str, result: dict[str, Any]
) -> dict[str, Any]:
    """Send ``method`` and have the peer answer it with ``result``."""
    async with anyio.create_task_group() as tg:
        got: dict[str, Any] = {}

        async def send() -> None:
            got.update(await conn.send(method))

        tg.start_soon(send)
        command = await peer.next_command()
        assert command["method"] == method
        await peer.reply(command, result)
    return got


async def test_a_result_resolves_its_command(conn: BidiConnection, peer: Peer) -> None:
    async with anyio.create_task_group() as tg:
        results: list[dict[str, Any]] = []

        async def send() -> None:
            results.append(
                await conn.send("browsingContext.navigate", {"context": "c1", "url": "about:blank"})
            )

        tg.start_soon(send)
        command = await peer.next_command()
        assert command == {
            "id": command["id"],
            "method": "browsingContext.navigate",
            "params": {"context": "c1", "url": "about:blank"},
        }
        await peer.reply(command, {"navigation": "n1", "url": "about:blank"})
    assert results == [{"navigation": "n1", "url": "about:blank"}]


async def test_a_command_without_params_sends_an_empty_object(
    conn: BidiConnection, peer: Peer
) -> None:
    assert await call(conn, peer, "session.status", {"ready": True}) == {"ready": True}


async def test_an_error_reply_raises_bidi_error_with_code_and_command_fields(
    conn: BidiConnection, peer: Peer
) -> None:
    async with anyio.create_task_group() as tg:
        caught: list[BidiError] = []

        async def send() -> None:
            try:
                await conn.send("browsingContext.close", {"context": "gone"})
            except BidiError as exc:
                caught.append(exc)

        tg.start_soon(send)
        await peer.error(await peer.next_command(), "no such frame", "Frame gone not found")
    (exc,) = caught
    assert type(exc) is BidiError
    assert exc.code == "no such frame"
    assert exc.command == "browsingContext.close"
    assert exc.detail == "Frame gone not found"


async def test_an_unanswered_command_times_out_and_its_late_reply_is_dropped(
    conn: BidiConnection, peer: Peer
) -> None:
    with pytest.raises(BidiTimeout) as caught:
        await conn.send("script.evaluate", {"expression": "1"}, timeout=0.05)
    assert caught.value.command == "script.evaluate"
    assert caught.value.timeout == 0.05
    late = await peer.next_command()
    await peer.reply(late, {"late": True})
    assert await call(conn, peer, "session.status", {"ready": True}) == {"ready": True}
    assert not conn.closed


async def test_fifty_commands_in_flight_resolve_when_answered_out_of_order(
    conn: BidiConnection, peer: Peer
) -> None:
    results: dict[int, dict[str, Any]] = {}

    async def send(n: int) -> None:
        results[n] = await conn.send("storage.setCookie", {"n": n})

    async with anyio.create_task_group() as tg:
        for n in range(50):
            tg.start_soon(send, n)
        commands = [await peer.next_command() for _ in range(50)]
        assert len({c["id"] for c in commands}) == 50
        random.Random(7).shuffle(commands)
        for command in commands:
            await peer.reply(command, {"echo": command["params"]["n"]})
    assert results == {n: {"echo": n} for n in range(50)}


async def test_events_reach_listeners_by_method_name(conn: BidiConnection, peer: Peer) -> None:
    logs: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    conn.add_listener("log.entryAdded", logs.append)
    conn.add_listener("script.message", messages.append)
    await peer.event("log.entryAdded", {"text": "one"})
    await peer.event("script.message", {"channel": "c"})
    await peer.event("network.beforeRequestSent", {"request": {}})
    await peer.event("log.entryAdded", {"text": "two"})
    await call(conn, peer, "session.status", {})
    assert logs == [{"text": "one"}, {"text": "two"}]
    assert messages == [{"channel": "c"}]


async def test_a_removed_listener_gets_nothing(conn: BidiConnection, peer: Peer) -> None:
    kept: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    conn.add_listener("log.entryAdded", kept.append)
    remove = conn.add_listener("log.entryAdded", removed.append)
    remove()
    remove()  # removing twice is harmless
    await peer.event("log.entryAdded", {"text": "one"})
    await call(conn, peer, "session.status", {})
    assert kept == [{"text": "one"}]
    assert removed == []


async def test_a_listener_that_raises_does_not_stop_the_others_nor_log_the_params(
    conn: BidiConnection, peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(_: dict[str, Any]) -> None:
        raise RuntimeError("listener bug")

    later: list[dict[str, Any]] = []
    conn.add_listener("script.message", broken)
    conn.add_listener("script.message", later.append)
    with caplog.at_level(logging.DEBUG, logger="sitekeep.browser.bidi"):
        await peer.event("script.message", {"data": "dummy-storage-value"})
        await peer.event("script.message", {"data": "second"})
        assert await call(conn, peer, "session.status", {"ok": 1}) == {"ok": 1}
    assert later == [{"data": "dummy-storage-value"}, {"data": "second"}]
    assert "script.message" in caplog.text
    assert "dummy-storage-value" not in caplog.text


async def test_a_message_that_is_not_json_is_dropped_without_killing_the_reader(
    conn: BidiConnection, peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="sitekeep.browser.bidi"):
        await peer.send_raw("{not json")
        assert await call(conn, peer, "session.status", {"ok": 1}) == {"ok": 1}
    assert "not JSON" in caplog.text


async def test_a_json_message_that_is_not_an_object_is_dropped_without_killing_the_reader(
    peer: Peer,
) -> None:
    conn = await BidiConnection.connect(peer.url, timeout=WAIT)
    try:
        await peer.send_raw("[1]")
        assert await call(conn, peer, "session.status", {"ok": 1}) == {"ok": 1}
    finally:
        await conn.close()


async def test_the_peer_closing_fails_pending_commands_and_calls_on_close(
    conn: BidiConnection, peer: Peer
) -> None:
    closed = asyncio.Event()
    conn.on_close(closed.set)
    async with anyio.create_task_group() as tg:
        caught: list[BaseException] = []

        async def send() -> None:
            try:
                await conn.send("script.evaluate", {"expression": "1"})
            except BrowserUnavailable as exc:
                caught.append(exc)

        tg.start_soon(send)
        await peer.next_command()
        await peer.close()
    with anyio.fail_after(WAIT):
        await closed.wait()
    (exc,) = caught
    assert type(exc) is BrowserUnavailable
    assert conn.closed
    with pytest.raises(BrowserUnavailable):
        await conn.send("session.status")


async def test_closing_the_connection_calls_on_close_once(peer: Peer) -> None:
    conn = await BidiConnection.connect(peer.url, timeout=WAIT)
    calls: list[str] = []
    conn.on_close(lambda: calls.append("closed"))
    await conn.close()
    assert conn.closed
    assert calls == ["closed"]


async def test_connecting_to_a_closed_port_is_browser_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(BrowserUnavailable) as caught:
        await BidiConnection.connect(f"ws://127.0.0.1:{port}/session/s1", timeout=WAIT)
    assert type(caught.value) is BrowserUnavailable


async def test_subscribe_returns_the_subscription_id_and_unsubscribe_sends_it(
    conn: BidiConnection, peer: Peer
) -> None:
    async with anyio.create_task_group() as tg:
        ids: list[str] = []

        async def subscribe() -> None:
            ids.append(await conn.subscribe(["network.beforeRequestSent"], contexts=["c1"]))

        tg.start_soon(subscribe)
        command = await peer.next_command()
        assert command["method"] == "session.subscribe"
        assert command["params"] == {"events": ["network.beforeRequestSent"], "contexts": ["c1"]}
        await peer.reply(command, {"subscription": "sub-1"})
    assert ids == ["sub-1"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(conn.unsubscribe, "sub-1")
        command = await peer.next_command()
        assert command["method"] == "session.unsubscribe"
        assert command["params"] == {"subscriptions": ["sub-1"]}
        await peer.reply(command, {})


async def test_unsubscribe_soon_returns_at_once_and_a_refusal_or_a_close_leaks_nothing(
    conn: BidiConnection, peer: Peer
) -> None:
    leaked: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: leaked.append(ctx))
    conn.unsubscribe_soon("sub-1")  # not awaited: nothing may wait on the answer
    conn.unsubscribe_soon("sub-2")
    first, second = await peer.next_command(), await peer.next_command()
    assert [first["params"], second["params"]] == [
        {"subscriptions": ["sub-1"]},
        {"subscriptions": ["sub-2"]},
    ]
    assert first["method"] == second["method"] == "session.unsubscribe"
    await peer.error(first, "invalid argument", "no such subscription")
    await call(conn, peer, "session.status", {"ready": True})  # the refusal was read
    await peer.close()  # the second is never answered
    with anyio.fail_after(WAIT):
        while not conn.closed or conn._background:
            await asyncio.sleep(0.01)
    conn.unsubscribe_soon("sub-3")  # on a closed socket: nothing sent, nothing raised
    assert leaked == []


async def test_subscribe_without_contexts_is_global(conn: BidiConnection, peer: Peer) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(conn.subscribe, ["script.message"])
        command = await peer.next_command()
        assert command["params"] == {"events": ["script.message"]}
        await peer.reply(command, {"subscription": "sub-2"})


# --- a relay that outlives its browser (issue #8 item 9) ----------------------------------


async def test_a_gone_browser_fails_every_pending_command_at_once_on_a_silent_socket(
    peer: Peer,
) -> None:
    """The peer never answers and never closes (a Grid relay after its browser died); the
    probe says the session is gone: all pending commands fail together, long before
    their timeouts, and the connection counts as closed."""
    conn = await BidiConnection.connect(peer.url, timeout=60.0)
    probes: list[float] = []

    async def gone() -> bool:
        probes.append(anyio.current_time())
        return len(probes) >= 2  # alive at the first look, gone at the second

    conn.watch(gone, every=0.05)
    errors: list[BaseException] = []

    async def send(method: str) -> None:
        try:
            await conn.send(method, timeout=60.0)
        except BrowserUnavailable as exc:
            errors.append(exc)

    start = anyio.current_time()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for method in ("browsingContext.navigate", "script.evaluate", "storage.getCookies"):
                tg.start_soon(send, method)
    assert len(errors) == 3 and all(type(e) is BrowserUnavailable for e in errors)
    assert anyio.current_time() - start < 2.0
    assert conn.closed
    with pytest.raises(BrowserUnavailable):
        await conn.send("script.evaluate")
    await conn.close()


async def test_the_probe_only_runs_while_commands_wait_and_a_live_answer_changes_nothing(
    conn: BidiConnection, peer: Peer
) -> None:
    probes = 0

    async def gone() -> bool:
        nonlocal probes
        probes += 1
        return False

    conn.watch(gone, every=0.05)
    assert await call(conn, peer, "session.status", {"ready": True}) == {"ready": True}
    with pytest.raises(BidiTimeout):
        await conn.send("script.evaluate", timeout=0.3)
    seen = probes
    assert seen >= 1 and not conn.closed
    await anyio.sleep(0.2)  # nothing pending: no more probes
    assert probes <= seen + 1


async def test_an_event_wait_fails_the_moment_the_socket_closes(
    conn: BidiConnection, peer: Peer
) -> None:
    """A load awaited as an event (no command pending) must not outlive the browser."""
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.close)
            with pytest.raises(BrowserUnavailable):
                await conn.wait_event(never, timeout=60.0, what="browsingContext.load")
    with pytest.raises(BrowserUnavailable):
        await conn.wait_event(never, timeout=60.0, what="browsingContext.load")


async def test_an_event_wait_returns_what_the_event_brought_or_times_out(
    conn: BidiConnection,
) -> None:
    loop = asyncio.get_running_loop()
    brought: asyncio.Future[str] = loop.create_future()
    loop.call_soon(brought.set_result, "loaded")
    assert await conn.wait_event(brought, timeout=WAIT, what="x") == "loaded"
    with pytest.raises(BidiTimeout):
        await conn.wait_event(loop.create_future(), timeout=0.05, what="browsingContext.load")


class _Deaf:
    """A WebSocket peer that completes the opening handshake (RFC 6455 §4.2.2) and then
    never reads again: its receive buffer fills, the client's writes stall, and a closing
    handshake never completes — a browser wedged beyond its socket."""

    def __init__(self) -> None:
        self.url = ""
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> _Deaf:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/session/deaf"
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        key = next(
            line.split(b":", 1)[1].strip()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        accept = base64.b64encode(
            hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()
        )
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self._writers.append(writer)  # kept open, never read

    async def __aexit__(self, *exc: object) -> None:
        for writer in self._writers:
            writer.transport.abort()
        assert self._server is not None
        self._server.close()


async def test_a_command_to_a_peer_that_never_reads_times_out_and_close_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hang hunt of the proxy test (a Firefox that stopped answering): a write that
    waits on a full socket buffer is bounded by the command's timeout, and closing a
    socket whose peer never finishes the closing handshake aborts it."""
    monkeypatch.setattr(bidi, "_CLOSE_SECONDS", 0.2)
    async with _Deaf() as deaf:
        conn = await BidiConnection.connect(deaf.url, timeout=WAIT)
        big = {"blob": "x" * 20_000_000}  # far beyond both sockets' buffers
        with anyio.fail_after(WAIT), pytest.raises(BidiTimeout):
            await conn.send("script.evaluate", big, timeout=0.3)
        with anyio.fail_after(WAIT):
            await conn.close()
        assert conn.closed
