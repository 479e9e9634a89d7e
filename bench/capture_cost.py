"""What one ``browsingContext.captureScreenshot`` costs, and what changes it (issue #13).

The live view (``bench/liveview.py``) is bounded by this command: how long one takes, and
how many the browser answers per second when one, two, three or four are kept in flight.
One browser per kind, started by selenium through its driver (``webSocketUrl: true``, the
product's Chromium flags), driven over sitekeep's own ``BidiConnection``; the main tab
shows an animated page (a counter and a block moved every animation frame) pinned to
1280×800 at a device pixel ratio of 1, as a live socket pins it. Per variant, over
``--seconds``: **ms/capture** (median time from sending one command to its reply),
**captures/s**, and **distinct/s** (replies unlike any before: new pictures). Variants:

* ``jpeg q75 ×N`` — the product's format (``image/jpeg``, quality 0.75), N in flight;
* ``paced ×N`` — N in flight, but each started no sooner than a capture's median time
  over N after the one before (the loops above start together and drift apart only by
  chance);
* ``jpeg q50`` / ``jpeg q90`` / ``png`` — the format's part;
* ``document`` — ``origin: "document"`` instead of ``"viewport"``;
* ``clip box`` — a ``clip`` of the whole viewport;
* ``still page`` — the same capture of a page that never changes;
* ``evaluate`` — a ``script.evaluate("1")`` round trip: the channel's own floor (Chromium's
  mapper runs one hidden-sandbox ``callFunction`` per capture before the CDP screenshot);
* ``key press`` — an ``input.performActions`` of one key, down and up: the first leg of a
  live view's input → frame.

``--keys N`` then times **key → frame** on the animated page with a key that toggles a
full-page checkerboard (as ``liveview.py`` does, without the server): N keys 0.3 s apart,
each timed from sending its ``input.performActions`` to the first capture reply on the
key's side of the size midpoint, with the key's own ack time, and how many of those
first replies came from a capture *started before the key was acknowledged*. Schedules:
``paced ×3`` (the relay's Chromium loops), ``paced ×3 + one at the ack`` (a capture
started as soon as the key is acknowledged, beside the loops), ``paced ×3, held for the
key`` (that capture, and the loops start nothing from the key's send until it answers),
``one at the ack`` (that capture alone: the floor of key → frame).

Variants are interleaved round by round (``--rounds``) so machine noise hits them all.
Run under the heavy lock::

    .venv/bin/python bench/capture_cost.py [--seconds 3] [--rounds 2] [--keys 12]
        [--browsers chromium,firefox] [--args "--extra-chromium-switch"]

(``--seconds 0 --keys 12``: key → frame alone.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from selenium import webdriver

from sitekeep.browser.bidi import BidiConnection
from sitekeep.browser.geckodriver import find_geckodriver
from sitekeep.browser.webdriver import CHROMIUM_ARGS, FIREFOX_PREFS

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"selenium(\.|$)")

WIDTH, HEIGHT = 1280, 800
ANIMATED = """<div id="n" style="font:64px monospace">0</div>
<div id="b" style="position:absolute;top:200px;width:80px;height:80px;background:#c33"></div>
<script>let i = 0; const n = document.getElementById("n"), b = document.getElementById("b");
function f() { i++; n.textContent = i; b.style.left = (i * 7 % 1100) + "px";
requestAnimationFrame(f); } requestAnimationFrame(f);</script>"""
KEY = {
    "type": "key",
    "id": "bench-keys",
    "actions": [{"type": "keyDown", "value": "x"}, {"type": "keyUp", "value": "x"}],
}
STILL = '<p style="font:48px monospace">still</p>'
TOGGLE = """<style>body.k { background: repeating-conic-gradient(#000 0 25%, #fff 0 50%)
0 0 / 8px 8px; }</style><script>addEventListener("keydown",
() => document.body.classList.toggle("k"));</script>"""
Q75 = {"format": {"type": "image/jpeg", "quality": 0.75}, "origin": "viewport"}


@dataclass
class Variant:
    name: str
    params: dict[str, Any]
    in_flight: int = 1
    page: str = "animated"
    method: str = "browsingContext.captureScreenshot"
    paced: bool = False
    took: list[float] = field(default_factory=list)
    replies: int = 0
    distinct: int = 0
    seconds: float = 0.0


def variants() -> list[Variant]:
    q75 = {"format": {"type": "image/jpeg", "quality": 0.75}, "origin": "viewport"}
    return [
        Variant("jpeg q75 ×1", q75),
        Variant("jpeg q75 ×2", q75, 2),
        Variant("jpeg q75 ×3", q75, 3),
        Variant("jpeg q75 ×4", q75, 4),
        Variant("paced ×2", q75, 2, paced=True),
        Variant("paced ×3", q75, 3, paced=True),
        Variant("jpeg q50", {**q75, "format": {"type": "image/jpeg", "quality": 0.5}}),
        Variant("jpeg q90", {**q75, "format": {"type": "image/jpeg", "quality": 0.9}}),
        Variant("png", {"format": {"type": "image/png"}, "origin": "viewport"}),
        Variant("document", {**q75, "origin": "document"}),
        Variant(
            "clip box",
            {**q75, "clip": {"type": "box", "x": 0, "y": 0, "width": WIDTH, "height": HEIGHT}},
        ),
        Variant("still page", q75, page="still"),
        Variant("still page ×3", q75, 3, page="still"),
        Variant("evaluate", {}, method="script.evaluate"),
        Variant("key press", {"actions": [KEY]}, method="input.performActions"),
    ]


async def run_variant(conn: BidiConnection, context: str, v: Variant, seconds: float) -> None:
    if v.method == "script.evaluate":
        params = {"expression": "1", "target": {"context": context}, "awaitPromise": False}
    else:
        params = {"context": context, **v.params}
    seen: set[int] = set()
    stop = time.perf_counter() + seconds

    async def one() -> None:
        sent = time.perf_counter()
        result = await conn.send(v.method, params, timeout=30)
        v.took.append((time.perf_counter() - sent) * 1000)
        v.replies += 1
        data = str(result.get("data", ""))
        if data and hash(data) not in seen:
            v.distinct += 1
            seen.add(hash(data))

    async def loop() -> None:
        while time.perf_counter() < stop:
            await one()

    async def paced() -> None:
        """N in flight, their starts spaced by a capture's time over N."""
        flying: set[asyncio.Task[None]] = set()
        spacing, last = 0.0, 0.0
        while time.perf_counter() < stop:
            if len(flying) >= v.in_flight:
                _, flying = await asyncio.wait(flying, return_when=asyncio.FIRST_COMPLETED)
                spacing = statistics.median(v.took[-5:]) / 1000 / v.in_flight
                continue
            await asyncio.sleep(max(0.0, last + spacing - time.perf_counter()))
            last = time.perf_counter()
            flying.add(asyncio.create_task(one()))
        await asyncio.gather(*flying)

    started = time.perf_counter()
    if v.paced:
        await paced()
    else:
        await asyncio.gather(*(loop() for _ in range(v.in_flight)))
    v.seconds += time.perf_counter() - started


@dataclass
class KeyRun:
    """Key → frame under one capture schedule."""

    name: str
    loops: int
    at_ack: bool
    hold: bool = False
    """The loops start nothing from a key's send until the capture at its ack answers."""
    latencies: list[float] = field(default_factory=list)
    acks: list[float] = field(default_factory=list)
    before_ack: int = 0


async def key_to_frame(conn: BidiConnection, context: str, run: KeyRun, keys: int) -> None:
    """``keys`` keys under ``run``'s schedule (the page toggles a checkerboard per key)."""
    caps: list[tuple[float, float, int]] = []  # start, reply, bytes
    took, next_start, stop = [0.085], [0.0], [False]
    calm = asyncio.Event()
    calm.set()
    params = {"context": context, **Q75}

    async def one() -> None:
        sent = time.perf_counter()
        result = await conn.send("browsingContext.captureScreenshot", params, timeout=30)
        done = time.perf_counter()
        took[0] = 0.75 * took[0] + 0.25 * (done - sent)
        caps.append((sent, done, len(result["data"])))

    async def loop() -> None:
        while not stop[0]:
            now = time.perf_counter()
            slot = max(now, next_start[0])
            next_start[0] = slot + took[0] / run.loops
            await asyncio.sleep(slot - now)
            await calm.wait()
            await one()

    async def at_ack() -> None:
        await one()
        calm.set()

    loops = [asyncio.create_task(loop()) for _ in range(run.loops)]
    extra: list[asyncio.Task[None]] = []
    sent_acked = []
    await asyncio.sleep(1.0)
    for _ in range(keys + keys % 2):  # even: the page ends plain
        await asyncio.sleep(0.3)
        sent = time.perf_counter()
        if run.hold:
            calm.clear()
        await conn.send("input.performActions", {"context": context, "actions": [KEY]})
        sent_acked.append((sent, time.perf_counter()))
        if run.at_ack:
            extra.append(asyncio.create_task(at_ack()))
    await asyncio.sleep(0.6)
    stop[0] = True
    await asyncio.gather(*loops, *extra)
    sizes = sorted(size for _, _, size in caps)
    threshold = (sizes[0] + sizes[-1]) / 2
    for number, (sent, acked) in enumerate(sent_acked[:keys]):
        on = number % 2 == 0
        shown = [c for c in caps if c[1] > sent and (c[2] > threshold) == on]
        run.acks.append((acked - sent) * 1000)
        if shown:
            first = min(shown, key=lambda c: c[1])
            run.latencies.append((first[1] - sent) * 1000)
            run.before_ack += first[0] < acked


def key_runs() -> list[KeyRun]:
    return [
        KeyRun("paced ×3", 3, False),
        KeyRun("paced ×3 + one at the ack", 3, True),
        KeyRun("paced ×3, held for the key", 3, True, hold=True),
        KeyRun("one at the ack", 0, True),
    ]


def start(kind: str, extra: list[str]) -> Any:
    if kind == "chromium":
        options: Any = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for arg in ["--no-sandbox", *CHROMIUM_ARGS, *extra]:
            options.add_argument(arg)
        options.set_capability("webSocketUrl", True)
        service: Any = webdriver.ChromeService(executable_path="/usr/bin/chromedriver")
        return webdriver.Chrome(service=service, options=options)
    options = webdriver.FirefoxOptions()
    options.add_argument("-headless")
    for name, value in FIREFOX_PREFS.items():
        options.set_preference(name, value)
    options.set_capability("webSocketUrl", True)
    service = webdriver.FirefoxService(executable_path=str(find_geckodriver()))
    return webdriver.Firefox(service=service, options=options)


async def measure(
    kind: str, extra: list[str], seconds: float, rounds: int, keys: int = 0
) -> tuple[list[Variant], list[KeyRun]]:
    driver = await asyncio.to_thread(start, kind, extra)
    try:
        conn = await BidiConnection.connect(driver.caps["webSocketUrl"], timeout=30)
        tree = await conn.send("browsingContext.getTree", {})
        context = tree["contexts"][0]["context"]
        await conn.send(
            "browsingContext.setViewport",
            {
                "context": context,
                "viewport": {"width": WIDTH, "height": HEIGHT},
                "devicePixelRatio": 1,
            },
        )
        pages = {"animated": ANIMATED, "still": STILL}
        found = variants() if seconds > 0 else []
        showing = ""
        for _ in range(rounds):
            for v in found:
                if v.page != showing:
                    url = "data:text/html," + quote(pages[v.page])
                    await conn.send(
                        "browsingContext.navigate",
                        {"context": context, "url": url, "wait": "complete"},
                    )
                    showing = v.page
                    await asyncio.sleep(0.3)
                await run_variant(conn, context, v, seconds)
        runs = key_runs() if keys else []
        if runs:
            url = "data:text/html," + quote(ANIMATED + TOGGLE)
            params = {"context": context, "url": url, "wait": "complete"}
            await conn.send("browsingContext.navigate", params)
            for _ in range(rounds):
                for run in runs:
                    await key_to_frame(conn, context, run, keys)
        await conn.close()
        return found, runs
    finally:
        await asyncio.to_thread(driver.quit)


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


def table(kind: str, found: list[Variant], label: Callable[[str], str]) -> None:
    print(
        f"{kind}: {'variant':16} {'ms/capture p50':>15} {'p90':>7} {'captures/s':>11}"
        f" {'distinct/s':>11}"
    )
    for v in found:
        ordered = sorted(v.took) or [float("nan")]
        p50 = statistics.median(ordered)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        per_s = v.replies / v.seconds if v.seconds else 0.0
        distinct = v.distinct / v.seconds if v.seconds else 0.0
        print(f"{label(kind)}: {v.name:16} {p50:15.1f} {p90:7.1f} {per_s:11.1f} {distinct:11.1f}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--browsers", default="chromium,firefox")
    parser.add_argument("--args", default="", help="extra Chromium switches")
    parser.add_argument("--keys", type=int, default=0, help="key → frame samples (0: none)")
    args = parser.parse_args()
    extra = shlex.split(args.args)
    print(f"captureScreenshot at {WIDTH}×{HEIGHT}, DPR 1 · {_load()}")
    for kind in args.browsers.split(","):
        switches = extra if kind == "chromium" else []
        found, runs = await measure(kind, switches, args.seconds, args.rounds, args.keys)
        table(kind, found, lambda k: k)
        for run in runs:
            ordered = sorted(run.latencies) or [float("nan")]
            print(
                f"{kind}: key → frame, {run.name:26} p50 {statistics.median(ordered):5.1f}"
                f" p90 {ordered[int(0.9 * (len(ordered) - 1))]:5.1f} ms · key ack p50"
                f" {statistics.median(run.acks):4.1f} ms · first shown by a capture started"
                f" before the ack {run.before_ack}/{len(run.latencies)}"
            )
    if extra:
        print(f"Chromium with {args.args}")
    print(_load())


if __name__ == "__main__":
    asyncio.run(main())
