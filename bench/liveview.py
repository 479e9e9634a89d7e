"""The live view (SPEC §10): frames per second and input-to-frame latency at 1280×800.

What is measured, end to end through a real ``sitekeep serve`` (the e2e tests' server
helper: its own data dir, no warm pool) and its WebSocket, the way the admin UI's canvas
uses it (every frame acknowledged once received, as the canvas does once drawn), on three
pages, each browser:

* ``rAF`` — a counter and a moving block repainted every animation frame
  (``requestAnimationFrame``);
* ``30 Hz`` — the same picture changed by a 33 ms timer (no 60 Hz software repaint of the
  page competing with the captures for the CPU);
* ``still`` — a page that shows nothing new until a key arrives.

Per page: **fps** — *distinct* frames received per second over ``--seconds`` after a
one-second warm-up (each JPEG is hashed; a frame equal to the one before is not counted —
the relay skips unchanged frames anyway; this checks it); and **input → frame**, median
and p90 over ``--samples`` keys: each ``{"type": "key", "key": "x"}`` toggles a
full-page checkerboard on the page (on, then off), and the clock runs from sending the
key until the first frame that shows the change. A checkerboard JPEG is several times the
size of the plain page's, so the change is seen from the frame's byte count alone (no
image decoding): "on" is the first frame larger than the midpoint between the plain and
the checkered sizes, "off" the first smaller one. The row also gives the two medians
apart (``on/off``): a checkered frame is the larger one to encode and carry, so "on" is
the slower side.

Every frame must be 1280×800 (read from the JPEG's header): a run with any other size
says ``INVALID`` — the viewport was not what the live session asked for.

Targets: ≥ 20 fps on Chromium (rAF and 30 Hz pages), input → frame median ≤ 100 ms on
both browsers; each row prints its verdict, and the load average is printed before and
after.

Run::

    .venv/bin/python bench/liveview.py [--seconds 5] [--samples 10] [--browsers chromium,firefox]
        [--ab="--disable-gpu-vsync" [--ab="SITEKEEP_LIVE_CAPTURES=4" …]]

``--ab ARGS`` runs Chromium twice, one after the other in one run — with the product's
arguments (A) and with ``ARGS`` added to them (B, through ``SITEKEEP_BROWSER_ARGS``) — and
prints B/A. A word of ``ARGS`` shaped ``NAME=value`` with an upper-case ``NAME`` is a
setting for the server instead (``SITEKEEP_LIVE_CAPTURES=4``: four overlapping capture
loops). ``--ab`` may be given several times: each is a B against the one A.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e.test_server_restart import SITEKEEP, Server  # noqa: E402
from fixtures.sites import start_sites  # noqa: E402
from sitekeep.browser.screencast import jpeg_size  # noqa: E402

WIDTH, HEIGHT = 1280, 800
FPS_TARGET = 20.0
LATENCY_TARGET_MS = 100.0

_TOGGLE = """<style>body.k { background: repeating-conic-gradient(#000 0 25%, #fff 0 50%)
0 0 / 8px 8px; }</style><script>addEventListener("keydown",
() => document.body.classList.toggle("k"));</script>"""
"""A key toggles a full-page checkerboard: a frame that shows it is several times larger."""

_PICTURE = """<div id="n" style="font:64px monospace">0</div>
<div id="b" style="position:absolute;top:200px;width:80px;height:80px;background:#c33"></div>
<script>let i = 0; const n = document.getElementById("n"), b = document.getElementById("b");
function step() { i++; n.textContent = i; b.style.left = (i * 7 % 1100) + "px"; }</script>"""

PAGES = {
    "rAF": _PICTURE
    + "<script>function f() { step(); requestAnimationFrame(f); } requestAnimationFrame(f);"
    + "</script>"
    + _TOGGLE,
    "30 Hz": _PICTURE + "<script>setInterval(step, 33);</script>" + _TOGGLE,
    "still": '<p style="font:48px monospace">still</p>' + _TOGGLE,
}


class Socket:
    """One live socket: distinct frames timed and acknowledged, JSON messages kept."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.frames: asyncio.Queue[tuple[float, int]] = asyncio.Queue()
        self.messages: list[dict[str, Any]] = []
        self.last = b""
        self.last_bytes = 0
        self.repeats = 0
        self.sizes: set[tuple[int, int]] = set()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.ws:
            if isinstance(message, bytes):
                digest = hashlib.sha1(message).digest()
                if digest == self.last:
                    self.repeats += 1
                else:
                    self.last = digest
                    self.last_bytes = len(message)
                    self.sizes.add(jpeg_size(message))
                    self.frames.put_nowait((time.perf_counter(), len(message)))
                await self.ws.send('{"type":"ack"}')
            else:
                self.messages.append(json.loads(message))

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    def drain(self) -> list[int]:
        """The byte counts of the frames received since the last drain."""
        got = []
        while not self.frames.empty():
            got.append(self.frames.get_nowait()[1])
        return got

    async def quiet(self, gap: float = 0.4) -> None:
        """Until no frame has come for ``gap`` seconds."""
        while True:
            try:
                await asyncio.wait_for(self.frames.get(), gap)
            except TimeoutError:
                return


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Row:
    """One browser on one page."""

    browser: str
    page: str
    fps: float = 0.0
    latencies: list[float] = field(default_factory=list)
    on: list[float] = field(default_factory=list)
    """The latencies of the keys that turned the checkerboard on (its frames are larger)."""
    off: list[float] = field(default_factory=list)
    missed: int = 0
    sizes: list[tuple[int, int]] = field(default_factory=list)
    errors: int = 0
    repeats: int = 0
    note: str = ""

    @property
    def valid(self) -> bool:
        return self.sizes == [(WIDTH, HEIGHT)]

    def p(self, q: float) -> float:
        ordered = sorted(self.latencies) or [float("nan")]
        return ordered[int(q * (len(ordered) - 1))]

    def verdict(self) -> str:
        if not self.valid:
            return f"INVALID: frames {self.sizes}, not {WIDTH}×{HEIGHT}"
        misses = []
        if self.browser == "chromium" and self.page != "still" and self.fps < FPS_TARGET:
            misses.append(f"fps < {FPS_TARGET:g}")
        if self.missed or statistics.median(self.latencies or [1e9]) > LATENCY_TARGET_MS:
            misses.append(f"input→frame > {LATENCY_TARGET_MS:g} ms")
        return "MISS: " + ", ".join(misses) if misses else "meets target"

    def line(self) -> str:
        fps = "     —  " if self.page == "still" else f"{self.fps:5.1f} fps"
        return (
            f"{self.browser:9} {self.page:6} {fps} · input→frame p50 {self.p(0.5):5.1f} ms,"
            f" p90 {self.p(0.9):5.1f} ms (on/off p50 {_median(self.on):3.0f}/"
            f"{_median(self.off):3.0f};"
            f" {len(self.latencies)} changes"
            f"{f', {self.missed} unseen' if self.missed else ''}; {self.errors} errors;"
            f" {self.repeats} repeated frames{'; ' + self.note if self.note else ''})"
            f" — {self.verdict()}"
        )


async def _open(server: Server, browser: str, url: str, key: str) -> Socket:
    body = {"key": key, "browser": browser, "url": url}
    reply = server.http.post("/v1/live-sessions", json=body)
    reply.raise_for_status()
    live = reply.json()
    ws = await websockets.connect(f"ws://127.0.0.1:{server.port}{live['socket']}", max_size=None)
    await ws.send(json.dumps({"ticket": live["ticket"]}))
    sock = Socket(ws)
    await sock.send({"type": "resize", "width": WIDTH, "height": HEIGHT})
    return sock


async def _fps(sock: Socket, seconds: float) -> tuple[float, list[int]]:
    """Distinct frames per second over ``seconds`` after a one-second warm-up, and their
    byte counts."""
    await asyncio.sleep(1.0)  # warm-up
    sock.drain()
    sock.sizes.clear()
    start = time.perf_counter()
    await asyncio.sleep(seconds)
    got = sock.drain()
    return len(got) / (time.perf_counter() - start), got


async def _changed(sock: Socket, checkered: bool, threshold: float, sent: float) -> float | None:
    """Milliseconds from ``sent`` to the first frame on the asked side of ``threshold``."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            arrived, size = await asyncio.wait_for(sock.frames.get(), deadline - time.monotonic())
        except TimeoutError:
            return None
        if (size > threshold) == checkered:
            return (arrived - sent) * 1000
    return None


async def _latencies(sock: Socket, row: Row, samples: int, plain: float) -> None:
    """``samples`` keys, alternately turning the checkerboard on and off."""
    # One key shows how large a checkered frame is; the midpoint tells the two apart.
    await sock.send({"type": "key", "key": "x"})
    await asyncio.sleep(1.0)
    checkered = statistics.median(sock.drain() or [0])
    await sock.send({"type": "key", "key": "x"})
    await asyncio.sleep(0.5)
    if checkered < 2 * plain:
        # One run of an A/B must not end the others: the row says so and misses.
        row.note = f"checkered {checkered:.0f} B not told from plain {plain:.0f} B"
        row.missed = samples
        return
    threshold = (plain + checkered) / 2
    on = True
    for _ in range(samples):
        await asyncio.sleep(0.3)  # the pipeline settles, as between a person's keys
        sock.drain()
        sent = time.perf_counter()
        await sock.send({"type": "key", "key": "x"})
        took = await _changed(sock, on, threshold, sent)
        if took is None:
            row.missed += 1
        else:
            row.latencies.append(took)
            (row.on if on else row.off).append(took)
        on = not on
    if not on:  # leave it plain
        await sock.send({"type": "key", "key": "x"})


async def measure(
    server: Server, browser: str, seconds: float, samples: int, sites: Any, tag: str = ""
) -> list[Row]:
    """Every page's row for one browser."""
    rows = []
    sock: Socket | None = None
    for name, html in PAGES.items():
        url = sites.url("live.example.test", "/__fixture/html?body=" + quote(html))
        if sock is None:
            sock = await _open(server, browser, url, f"bench-{browser}{tag}")
        else:
            await sock.send({"type": "navigate", "url": url})
        await sock.send({"type": "pointer", "action": "click", "x": 5, "y": 5})  # focus
        row = Row(browser, name)
        if name == "still":
            await sock.quiet()
            plain = float(sock.last_bytes)
        else:
            row.fps, got = await _fps(sock, seconds)
            plain = float(statistics.median(got or [0]))
        await _latencies(sock, row, samples, plain)
        row.sizes = sorted(sock.sizes)
        row.errors = sum(1 for m in sock.messages if m.get("type") == "error")
        row.repeats = sock.repeats
        sock.messages.clear()
        sock.repeats = 0
        sock.sizes.clear()
        rows.append(row)
    if sock is not None:
        await sock.ws.close()
    return rows


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


def _split(extra: str) -> tuple[list[str], dict[str, str]]:
    """``--ab`` words: Chromium switches, and ``NAME=value`` server settings."""
    switches, settings = [], {}
    for word in shlex.split(extra):
        name, equals, value = word.partition("=")
        if equals and name.isupper() and not name.startswith("-"):
            settings[name] = value
        else:
            switches.append(word)
    return switches, settings


async def _run(args: argparse.Namespace, extra: str, browsers: list[str]) -> list[Row]:
    sites = start_sites()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            server = Server(Path(tmp) / "data", Path(tmp) / "cache", "chromium")
            switches, settings = _split(extra)
            if switches:
                server.env["SITEKEEP_BROWSER_ARGS"] += " " + shlex.join(switches)
            server.env.update(settings)
            server.start()
            try:
                rows = []
                for browser in browsers:
                    rows += await measure(server, browser, args.seconds, args.samples, sites)
                return rows
            finally:
                server.kill()
                subprocess.run([SITEKEEP, "stop"], env=server.env, capture_output=True, timeout=120)
                server.http.close()
    finally:
        sites.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--browsers", default="chromium,firefox")
    parser.add_argument(
        "--ab",
        action="append",
        default=[],
        help="Chromium switches or NAME=value settings to compare (B) with none (A); repeatable",
    )
    args = parser.parse_args()
    print(
        f"live view at {WIDTH}×{HEIGHT}; targets ≥ {FPS_TARGET:g} fps (Chromium), "
        f"input→frame median ≤ {LATENCY_TARGET_MS:g} ms · {_load()}"
    )
    if args.ab:
        for extra in args.ab:
            _split(extra)  # fails early on bad quoting
        a = await _run(args, "", ["chromium"])
        bs = [await _run(args, extra, ["chromium"]) for extra in args.ab]
        for number, (extra, b) in enumerate(zip(args.ab, bs, strict=True), 1):
            name = f"B{number}" if len(bs) > 1 else "B"
            print(f"{name} = A + {extra}")
            for row_a, row_b in zip(a, b, strict=True):
                print("A  " + row_a.line())
                print(f"{name:3}" + row_b.line())
                fps = f"fps {name}/A {row_b.fps / row_a.fps:4.2f}, " if row_a.fps else ""
                p50 = row_b.p(0.5) / row_a.p(0.5)
                print(f"  {row_a.page}: {fps}input→frame p50 {name}/A {p50:4.2f}")
        print(_load())
        return
    rows = await _run(args, "", args.browsers.split(","))
    for row in rows:
        print(row.line())
    ok = all(row.valid for row in rows)
    print(("" if ok else "INVALID run (frames not 1280×800) · ") + _load())


if __name__ == "__main__":
    asyncio.run(main())
