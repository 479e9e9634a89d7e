"""The mapper engine (``browser.mapper``) against an attacker, on a real Chromium and its
real Node mapper: a web page in any browser on the machine (an ``Origin``), a page that
rebinds its name to 127.0.0.1 (a foreign ``Host``), another local user reading
``/proc`` and files, a second socket sending garbage, a Node process killed mid-life.

What launch hands Node (environment, bound socket, file modes) without a browser is in
``tests/unit/test_mapper_launch.py``.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import signal
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
import websockets

from processes import browser_pids
from sitekeep.browser.mapper import LocalMapper
from sitekeep.browser.processes import group_running
from sitekeep.config import Settings
from sitekeep.model import BrowserRef
from support import Api

from .test_mapper_engine import _group_cmdlines

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.e2e,
    pytest.mark.parametrize("browser", ["chromium"]),
    pytest.mark.parametrize("via", ["mapper"]),
]


@pytest.fixture
def launched(settings: Settings, tmp_path: Path) -> Iterator[tuple[LocalMapper, BrowserRef]]:
    """One browser of the engine, straight from ``LocalMapper`` (no app)."""
    mapper = LocalMapper(tmp_path / "data")
    ref = mapper.launch(settings.chromium, args=settings.browser_args)
    yield mapper, ref
    mapper.stop(ref.endpoint, ref.session_id)


def _state(mapper_dir: Path, ref: BrowserRef) -> Path:
    return mapper_dir / f"{ref.endpoint.rsplit(':', 1)[1]}.json"


async def _tree(url: str, **headers: str) -> str:
    async with websockets.connect(url, additional_headers=headers, open_timeout=5) as ws:
        await ws.send(json.dumps({"id": 1, "method": "browsingContext.getTree", "params": {}}))
        reply = json.loads(await ws.recv())
        return str(reply["type"])


def _raw_upgrade(ref: BrowserRef, host: str) -> bytes:
    """A WebSocket handshake with ``host`` as its only Host header (what a page whose
    name was rebound to 127.0.0.1 sends); the status line of the answer."""
    port = int(ref.endpoint.rsplit(":", 1)[1])
    path = ref.ws_url.split(f":{port}", 1)[1]
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(request.encode())
        return conn.recv(4096).split(b"\r\n", 1)[0]


async def test_a_web_page_or_a_rebound_name_cannot_reach_the_bidi_socket(
    launched: tuple[LocalMapper, BrowserRef],
) -> None:
    """Every socket a page opens carries an Origin; a rebound name keeps its own Host.
    Both are refused even with the right session path (chromedriver refuses both)."""
    _, ref = launched
    assert await _tree(ref.ws_url) == "success"
    with pytest.raises(websockets.InvalidStatus, match="403"):
        await _tree(ref.ws_url, Origin="https://evil.example")
    port = ref.endpoint.rsplit(":", 1)[1]
    assert _raw_upgrade(ref, f"127.0.0.1:{port}") == b"HTTP/1.1 101 Switching Protocols"
    assert _raw_upgrade(ref, f"rebound.example:{port}").startswith(b"HTTP/1.1 403")
    async with httpx.AsyncClient() as client:
        status = f"{ref.endpoint}/status"
        assert (await client.get(status, headers={"Host": "rebound.example"})).status_code == 403
        assert (await client.get(status, headers={"Origin": "null"})).status_code == 403
        assert (await client.get(status)).json()["value"]["ready"] is True


async def test_other_local_users_find_the_session_id_in_no_command_line_and_no_file(
    launched: tuple[LocalMapper, BrowserRef], tmp_path: Path
) -> None:
    _, ref = launched
    folder = tmp_path / "data" / "mapper"
    state = _state(folder, ref)
    recorded = json.loads(state.read_text(encoding="utf-8"))
    pid = int(recorded["pid"])
    cmdlines = _group_cmdlines(pid)
    assert b"--remote-debugging-pipe" in cmdlines  # Chromium's own command line is in
    assert ref.session_id.encode() not in cmdlines
    (chromium,) = browser_pids(ref.endpoint, "node")
    environ = Path(f"/proc/{chromium}/environ").read_bytes()  # Chromium's own: not inherited
    assert b"BIDI_MAPPER_CONFIG" not in environ and ref.session_id.encode() not in environ
    modes = {
        p.name: stat.S_IMODE(p.stat().st_mode) for p in (folder, state, Path(recorded["profile"]))
    }
    assert sorted(modes.values()) == [0o600, 0o700, 0o700], modes


async def test_garbage_on_one_socket_reaches_no_other_and_ends_nothing(
    launched: tuple[LocalMapper, BrowserRef],
) -> None:
    """A second socket (another process on the data dir) sends malformed, foreign-channel
    and 32 MiB messages: the first socket gets none of their replies and keeps working."""
    _, ref = launched
    async with websockets.connect(ref.ws_url) as mine, websockets.connect(ref.ws_url) as other:
        for bad in (
            {"id": 1},
            {"method": "session.status"},
            {"id": 1, "method": 5},
            {"id": 1, "method": "browsingContext.getTree", "params": 3},
            {"id": 1, "method": "session.status", "params": {}, "goog:channel": "sitekeep:1"},
        ):
            await other.send(json.dumps(bad))
        await other.send("x" * (32 << 20))
        await mine.send(json.dumps({"id": 1, "method": "session.status", "params": {}}))
        with anyio.fail_after(5):
            reply = json.loads(await mine.recv())
        assert reply["type"] == "success" and reply["id"] == 1
        with pytest.raises(TimeoutError):
            with anyio.fail_after(1):
                await mine.recv()  # nothing of the other socket's
    assert await _tree(ref.ws_url) == "success"


async def test_a_killed_mapper_takes_its_chromium_and_the_next_call_its_profile(
    api: Api, settings: Settings
) -> None:
    """Node SIGKILLed (a crash, the OOM killer): Chromium sees its CDP pipe close and
    quits; the next call opens a new browser and the dead one's profile and state go."""
    opened = await api.open(key="k", url="about:blank")
    assert opened
    ref = (await api.browser("k")).ref
    state = _state(settings.data_dir / "mapper", ref)
    recorded = json.loads(state.read_text(encoding="utf-8"))
    pid, profile = int(recorded["pid"]), Path(recorded["profile"])
    (chromium,) = browser_pids(ref.endpoint, "node")
    os.kill(pid, signal.SIGKILL)
    with anyio.fail_after(10):
        while group_running(pid) or _alive(chromium):
            await anyio.sleep(0.05)
    assert (await api.go("k", "about:blank")) is not None
    assert (await api.browser("k")).ref.endpoint != ref.endpoint
    assert not profile.exists() and not state.exists(), "the dead browser's profile stayed"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0] != "Z"


async def test_a_process_that_takes_a_dead_mappers_port_is_sent_nothing(
    api: Api, settings: Settings
) -> None:
    """Node crashed; another local process listens on its port at once and answers like
    a mapper (status ready, window 200). The next call must not send it a request — the
    session id, then every cookie of the restore — but open a new browser."""
    await api.open(key="k", url="about:blank")
    ref = (await api.browser("k")).ref
    pid = int(json.loads(_state(settings.data_dir / "mapper", ref).read_text("utf-8"))["pid"])
    os.kill(pid, signal.SIGKILL)
    with anyio.fail_after(10):
        while group_running(pid):
            await anyio.sleep(0.05)
    with _squatter(int(ref.endpoint.rsplit(":", 1)[1])) as heard:
        assert (await api.go("k", "about:blank")) is not None
        assert (await api.browser("k")).ref.endpoint != ref.endpoint
    assert heard == [], "a request went to whoever took the dead mapper's port"


@contextlib.contextmanager
def _squatter(port: int) -> Iterator[list[str]]:
    """An HTTP server on 127.0.0.1:``port`` that answers every GET 200 ready, and lists
    the paths it was asked."""
    heard: list[str] = []

    class Mimic(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            heard.append(self.path)
            body = b'{"value": {"ready": true}}'
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Mimic)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield heard
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
