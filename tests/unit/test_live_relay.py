"""The live relay's flow control (SPEC §10) against a fake browser at the BiDi boundary:
frames never queue past the high-water mark, the newest wins, unchanged frames are
skipped, input runs under the session's lock in order, and error messages always pass."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from sitekeep.browser.inputs import InputGate
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.screencast import jpeg_size
from sitekeep.errors import SessionBusy
from sitekeep.model import Principal
from sitekeep.service.live import LiveSession
from sitekeep.service.relay import HIGH_WATER, SIZE, Relay, RelayPort

pytestmark = pytest.mark.anyio

WHO = Principal("t1", "person", "member")
LIVE = LiveSession("0123456789abcdef", "s1", "t1", "person", 0.0, 1e12)


def picture(tag: bytes, size: tuple[int, int] = SIZE) -> bytes:
    """A JPEG's start (SOI, then a baseline SOF0 of ``size``) followed by ``tag``."""
    width, height = size
    sof = b"\xff\xc0\x00\x11\x08" + height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return b"\xff\xd8" + sof + b"\x03" + bytes(9) + tag


def tag(frame: bytes) -> bytes:
    """What :func:`picture` was given."""
    return frame[len(picture(b"")) :]


@dataclass
class FakeConn:
    """Answers captureScreenshot with a new picture per call (or the same one when
    ``still``); records every other command."""

    still: bool = False
    shots: int = 0
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    size: tuple[int, int] = (1280, 657)
    """The viewport: the window's until ``setViewport`` sets it."""
    viewport_at: list[int] = field(default_factory=list)
    """Captures taken before each ``setViewport``."""

    async def send(self, method: str, params: dict[str, Any] | None = None, **_: Any) -> Any:
        await asyncio.sleep(0)
        if method == "browsingContext.captureScreenshot":
            self.shots += 1
            return self.shot(self.shots)
        if method == "browsingContext.setViewport":
            assert params is not None
            self.size = (params["viewport"]["width"], params["viewport"]["height"])
            self.viewport_at.append(self.shots)
        self.sent.append((method, params or {}))
        return {}

    def shot(self, number: int) -> dict[str, Any]:
        frame = picture(b"same" if self.still else f"frame-{number}".encode(), self.size)
        return {"data": base64.b64encode(frame).decode()}

    def inputs(self) -> list[tuple[str, dict[str, Any]]]:
        """What was sent but the viewport."""
        return [(m, p) for m, p in self.sent if m != "browsingContext.setViewport"]


@dataclass
class FakeBrowser:
    conn: FakeConn
    context: str = "ctx"
    ref: Any = field(default_factory=lambda: type("Ref", (), {"kind": "chromium"})())
    input: InputGate = field(default_factory=InputGate)

    async def evaluate_json(self, *_: Any, **__: Any) -> Any:
        return [1280, 800]

    async def page_info(self, context: str | None = None) -> PageInfo:
        return PageInfo("http://app.example.test/", "App")


@dataclass
class FakeService:
    held: list[str] = field(default_factory=list)
    inside: bool = False
    busy: int = 0
    """Holds that fail (SessionBusy) before one succeeds."""
    settings: Any = field(default_factory=lambda: type("Settings", (), {"live_captures": 1})())
    typed: bool = False
    """Whether a secret was typed in the session (``Records.secret_typed``)."""

    async def secret_typed(self, tenant: str, key: str) -> bool:
        assert self.inside, "read under the session's lock"
        return self.typed

    async def shown(self, tenant: str, key: str, page: PageInfo) -> dict[str, Any]:
        return {"url": page.url, "title": page.title}

    own_address = None

    @property
    def captures(self) -> int | None:
        captures: int | None = self.settings.live_captures
        return captures

    @contextlib.asynccontextmanager
    async def _hold(self, key: str) -> AsyncIterator[None]:
        if self.busy:
            self.busy -= 1
            raise SessionBusy(0.1)
        self.held.append(key)
        self.inside = True
        try:
            yield
        finally:
            self.inside = False

    def session_held(self, tenant: str, key: str) -> Any:
        return self._hold(f"{tenant}/{key}")

    def own_origins(self) -> list[str]:
        return ["http://127.0.0.1:8700"]

    async def why_over(self, live: LiveSession, grant: object = None) -> str | None:
        return None


@dataclass
class Client:
    """The socket's far end: what was sent, and what it will send."""

    frames: list[bytes] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    inbox: asyncio.Queue[str] = field(default_factory=asyncio.Queue)

    async def send(self, text: str) -> None:
        self.messages.append(json.loads(text))

    async def send_bytes(self, data: bytes) -> None:
        self.frames.append(data)

    async def receive(self) -> str:
        return await self.inbox.get()


async def until(condition: Any, limit: float = 5.0) -> None:
    """Until ``condition()``: a deadline, never a fixed pause."""
    async with asyncio.timeout(limit):
        while not condition():
            await asyncio.sleep(0.001)


async def run_relay(
    still: bool = False,
    *,
    conn: FakeConn | None = None,
    kind: str = "chromium",
    captures: int | None = 1,
    busy: int = 0,
    typed: bool = False,
) -> tuple[Client, FakeConn, FakeService, asyncio.Task[None]]:
    """A relay on a fake socket of ``kind``; ``captures`` is ``live_captures`` (None: per
    browser kind); the session's lock is not had ``busy`` times first; ``typed``: a
    secret was typed in the session."""
    client, svc = Client(), FakeService(busy=busy, typed=typed)
    conn = conn if conn is not None else FakeConn(still=still)
    svc.settings = type("Settings", (), {"live_captures": captures})()
    browser = FakeBrowser(conn, ref=type("Ref", (), {"kind": kind})())
    relay = Relay(
        cast(RelayPort, svc),
        WHO,
        LIVE,
        cast(LiveBrowser, browser),
        send=client.send,
        send_bytes=client.send_bytes,
        receive=client.receive,
    )
    return client, conn, svc, asyncio.create_task(relay.run())


async def test_frames_stop_at_the_high_water_mark_until_acked_then_the_newest_comes() -> None:
    client, conn, _, task = await run_relay()
    await until(lambda: len(client.frames) == HIGH_WATER)
    shots = conn.shots
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(client.frames) == HIGH_WATER  # no ack: nothing more is sent...
    assert conn.shots <= shots + 1  # ...and nothing more captured than the one slot
    await client.inbox.put('{"type": "ack"}')
    await until(lambda: len(client.frames) == HIGH_WATER + 1)
    newest = int(tag(client.frames[-1]).removeprefix(b"frame-"))
    assert newest > HIGH_WATER  # a frame captured after the ack, not an old queued one
    assert client.messages[0]["type"] == "ready" and client.messages[0]["width"] == 1280
    task.cancel()


async def test_an_unchanged_page_sends_one_frame() -> None:
    client, conn, _, task = await run_relay(still=True)
    await until(lambda: conn.shots >= 5)
    assert [tag(f) for f in client.frames] == [b"same"]
    task.cancel()


async def test_input_runs_in_order_under_the_session_lock_and_errors_pass_when_frames_cannot() -> (
    None
):
    client, conn, svc, task = await run_relay()
    await until(lambda: len(client.frames) == HIGH_WATER)  # the frame window is full
    for message in (
        {"type": "pointer", "action": "click", "x": 5, "y": 6},
        {"type": "resize", "width": 100, "height": 800},  # out of bounds: an error
        {"type": "navigate", "url": "http://127.0.0.1:8700/admin"},  # the server itself
        {"type": "text", "text": "hi"},
    ):
        await client.inbox.put(json.dumps(message))
    await client.inbox.put("not json")
    await until(lambda: len([m for m in client.messages if m["type"] == "error"]) == 3)
    errors = [m["error"] for m in client.messages if m["type"] == "error"]
    assert sorted(e.get("field") for e in errors) == ["type", "url", "width"]
    await until(lambda: len(conn.inputs()) == 2)
    sent = conn.inputs()
    assert [m for m, _ in sent] == ["input.performActions", "input.performActions"]
    assert sent[0][1]["actions"][0]["id"] == "live-mouse"
    assert [a["value"] for a in sent[1][1]["actions"][0]["actions"]] == ["h", "h", "i", "i"]
    assert svc.held and set(svc.held) == {"t1/s1"}
    task.cancel()


async def test_a_refused_input_is_an_error_message_the_socket_goes_on_and_sends_none_of_it() -> (
    None
):
    client, conn, _, task = await run_relay(typed=True)
    for message in (
        {"type": "key", "key": "Control", "action": "down"},
        {"type": "key", "key": "c"},  # Control+C across two messages
        {"type": "key", "key": "v", "modifiers": ["Meta"]},
        {"type": "pointer", "action": "click", "x": 5, "y": 6, "button": 1},
        {"type": "text", "text": "\ue009x"},
        {"type": "key", "key": "a", "modifiers": ["Control"]},  # select all: allowed
    ):
        await client.inbox.put(json.dumps(message))
    await until(lambda: len([m for m in client.messages if m["type"] == "error"]) == 4)
    errors = [m for m in client.messages if m["type"] == "error"]
    assert [(e["error"]["type"], e["error"]["field"]) for e in errors] == [
        ("clipboard_not_allowed", "key"),
        ("clipboard_not_allowed", "key"),
        ("clipboard_not_allowed", "button"),
        ("clipboard_not_allowed", "text"),
    ]
    assert "'Control+C' copies, cuts or pastes" in errors[0]["error"]["message"]
    await until(lambda: len(conn.inputs()) == 4)
    sent = [(m, p.get("actions", [{}])[0].get("actions")) for m, p in conn.inputs()]
    down, a = [{"type": "keyDown", "value": v} for v in ("\ue009", "a")]
    up_a, up = [{"type": "keyUp", "value": v} for v in ("a", "\ue009")]
    assert sent == [
        ("input.releaseActions", None),  # what the relay knew nothing of: let go first
        ("input.performActions", [down]),
        ("input.releaseActions", None),  # the refused "c": the held Control let go
        ("input.performActions", [down, a, up_a, up]),
    ]
    assert not task.done()
    task.cancel()


async def test_a_message_that_is_no_text_or_number_or_too_deep_is_refused_naming_the_field() -> (
    None
):
    client, conn, _, task = await run_relay()
    await until(lambda: len(client.frames) >= 1)
    for raw in (
        '{"type": "text", "text": "a\\ud800"}',  # a lone surrogate: no encoder takes it
        '{"type": "pointer", "action": "click", "x": ' + "9" * 5000 + ', "y": 6}',
        "[" * 100_000 + "]" * 100_000,  # past the interpreter's stack
        '{"type": "text", "text": "ok"}',
    ):
        await client.inbox.put(raw)
    await until(lambda: len(conn.inputs()) == 1)
    errors = [m["error"] for m in client.messages if m["type"] == "error"]
    assert [e.get("field") for e in errors] == ["text", "x", "type"]
    assert [a["value"] for a in conn.inputs()[0][1]["actions"][0]["actions"]][::2] == ["o", "k"]
    assert not task.done(), "the socket is still served"
    task.cancel()


@dataclass
class SlowOddConn(FakeConn):
    """Odd captures answer late (after the next one started): answers out of order."""

    in_flight: int = 0
    most: int = 0
    slow: float = 0.004

    async def send(self, method: str, params: dict[str, Any] | None = None, **_: Any) -> Any:
        if method != "browsingContext.captureScreenshot":
            return await super().send(method, params)
        self.shots += 1
        number = self.shots
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(self.slow if number % 2 else 0.001)
        finally:
            self.in_flight -= 1
        return self.shot(number)


@pytest.mark.parametrize(("kind", "loops"), [("chromium", 3), ("firefox", 1)])
async def test_captures_overlap_per_browser_and_a_late_older_answer_never_shows(
    kind: str, loops: int
) -> None:
    client, conn, _, task = await run_relay(conn=SlowOddConn(), kind=kind, captures=None)
    try:
        for _ in range(6):
            await until(lambda: len(client.frames) >= HIGH_WATER)
            for _ in range(HIGH_WATER):
                await client.inbox.put('{"type": "ack"}')
            await until(lambda: conn.shots > 3 * loops)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    numbers = [int(tag(f).removeprefix(b"frame-")) for f in client.frames]
    assert numbers == sorted(set(numbers))  # in order, each once: no older answer after a newer
    assert conn.most == loops


async def test_a_still_page_is_captured_by_one_loop_only() -> None:
    client, conn, _, task = await run_relay(conn=SlowOddConn(still=True, slow=0.05), captures=None)
    try:
        await until(lambda: conn.shots >= 10)  # the first frame is new: every loop joins once
        conn.most = 0
        await until(lambda: conn.shots >= 20)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert len(client.frames) == 1 and conn.most == 1


async def test_the_viewport_is_set_before_the_first_frame_and_every_frame_has_its_size() -> None:
    client, conn, _, task = await run_relay()
    await until(lambda: len(client.frames) == HIGH_WATER)
    assert conn.sent[0] == (
        "browsingContext.setViewport",
        {"context": "ctx", "viewport": {"width": 1280, "height": 800}, "devicePixelRatio": 1},
    )
    assert conn.viewport_at == [0]  # before any capture
    ready = client.messages[0]
    assert (ready["type"], ready["width"], ready["height"]) == ("ready", 1280, 800)
    conn.size = (1280, 657)  # the browser lost the viewport (started again, say)
    for _ in range(HIGH_WATER):
        await client.inbox.put('{"type": "ack"}')
    await until(lambda: len(client.frames) == 2 * HIGH_WATER)
    task.cancel()
    assert {jpeg_size(f) for f in client.frames} == {SIZE}  # none of 1280×657 was sent
    assert [m for m, _ in conn.sent].count("browsingContext.setViewport") == 2


async def test_after_a_resize_frames_have_the_new_size() -> None:
    client, conn, _, task = await run_relay()
    await until(lambda: len(client.frames) == HIGH_WATER)
    await client.inbox.put('{"type": "resize", "width": 640, "height": 480}')
    for _ in range(HIGH_WATER):
        await client.inbox.put('{"type": "ack"}')
    await until(lambda: any(m["type"] == "viewport" for m in client.messages))
    sent = len(client.frames)
    for _ in range(HIGH_WATER):
        await client.inbox.put('{"type": "ack"}')
    await until(lambda: len(client.frames) >= sent + HIGH_WATER)
    task.cancel()
    assert {jpeg_size(f) for f in client.frames[sent:]} == {(640, 480)}
    assert [m for m, _ in conn.sent].count("browsingContext.setViewport") == 2


def test_jpeg_size_reads_the_frame_header() -> None:
    assert jpeg_size(picture(b"x", (2560, 1600))) == (2560, 1600)
    assert jpeg_size(b"not a jpeg at all") == (0, 0)


async def test_a_session_busy_at_the_start_still_shows_only_frames_of_the_size_asked() -> None:
    client, conn, _, task = await run_relay(busy=1)
    await until(lambda: len(client.frames) == HIGH_WATER)
    task.cancel()
    assert conn.viewport_at and conn.viewport_at[0] > 0  # set once a frame was the window's
    assert {jpeg_size(f) for f in client.frames} == {SIZE}
    assert client.messages[0]["type"] == "ready"


@dataclass
class TimedConn(FakeConn):
    """Every capture takes ``slow`` seconds and is a new picture; records when each
    started (the loop's clock)."""

    slow: float = 0.03
    starts: list[float] = field(default_factory=list)

    async def send(self, method: str, params: dict[str, Any] | None = None, **_: Any) -> Any:
        if method != "browsingContext.captureScreenshot":
            return await super().send(method, params)
        self.starts.append(asyncio.get_running_loop().time())
        self.shots += 1
        number = self.shots
        await asyncio.sleep(self.slow)
        return self.shot(number)


async def test_overlapping_captures_start_spread_over_a_capture_s_time() -> None:
    client, conn, _, task = await run_relay(conn=TimedConn(), kind="chromium", captures=None)
    acked = 0
    try:
        async with asyncio.timeout(5):
            while conn.shots < 30:
                await asyncio.sleep(0.001)
                while acked < len(client.frames):  # the canvas draws every frame
                    acked += 1
                    await client.inbox.put('{"type": "ack"}')
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    gaps = sorted(b - a for a, b in itertools.pairwise(conn.starts[6:]))
    # Three loops on a 30 ms capture: a start every ~10 ms, not three at once each 30 ms.
    assert gaps[len(gaps) // 4] > 0.005, gaps
