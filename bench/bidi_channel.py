"""Why sitekeep does not use Selenium's BiDi socket: the same commands on three channels.

One run, two Chromium browsers started by selenium (the installed 4.51) through
``/usr/bin/chromedriver``, ``webSocketUrl: true``, the same flags as ``save_restore.py``:

* **(a)** selenium's own BiDi connection on browser 1, default ``websocket_interval``
  (0.1 s: selenium ≤ 4.51 polls for each reply in steps of that interval);
* **(b)** selenium's own connection on browser 2, with
  ``driver.command_executor.client_config.websocket_interval = 0.001`` set before the first
  BiDi use (the interval is read once, when the socket opens);
* **(c)** sitekeep's ``BidiConnection`` on a second socket to browser 1's session.

Measured, interleaved channel by channel so machine noise hits all three:

* ``script.evaluate("1")`` round trip, n=50 per channel (median per call);
* 50 sequential ``storage.setCookie`` (median per call, and the 50 in all), n=50;
* 50 concurrent ``storage.setCookie`` (wall time of the batch; selenium: 50 threads on
  its connection, sitekeep: ``asyncio.gather`` on one socket), median of 5 batches.

Selenium's calls are its public module methods (``driver.script.evaluate``,
``driver.storage.set_cookie``). Run::

    .venv/bin/python bench/bidi_channel.py

It takes well under a minute; raw values go to ``bench/results/`` (gitignored).
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import time
import warnings
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as ChromeService

from sitekeep.browser.bidi import BidiConnection
from sitekeep.browser.webdriver import CHROMIUM_ARGS

warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"selenium(\.|$)")

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--no-sandbox", *CHROMIUM_ARGS, "--host-resolver-rules=MAP *.example.test 127.0.0.1"]
CALLS = 50
BATCHES = 5

console = Console(width=160)


def start_driver(interval: float | None) -> Any:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("webSocketUrl", True)
    driver = webdriver.Chrome(service=ChromeService(executable_path=CHROMEDRIVER), options=options)
    if interval is not None:
        # Read when the socket opens: set before the first BiDi property access.
        driver.command_executor.client_config.websocket_interval = interval
    return driver


def cookie(channel: str, i: int) -> dict[str, Any]:
    return {
        "name": f"{channel}{i}",
        "value": {"type": "string", "value": f"dummy-{i}"},
        "domain": "bench.example.test",
        "path": "/",
    }


class SeleniumChannel:
    def __init__(self, name: str, driver: Any) -> None:
        self.name = name
        self.driver = driver
        started = time.perf_counter()
        self.script = driver.script  # opens selenium's socket
        self.connect_ms = (time.perf_counter() - started) * 1000
        self.storage = driver.storage
        self.target = {"context": driver.current_window_handle}
        self.pool = ThreadPoolExecutor(max_workers=CALLS)
        self.batch = 0

    async def evaluate(self) -> None:
        result = self.script.evaluate(expression="1", target=self.target, await_promise=False)
        assert result, result

    async def set_cookie(self, i: int) -> None:
        self.storage.set_cookie(cookie=cookie(self.name, i))

    async def set_cookies_concurrently(self) -> None:
        self.batch += 1
        futures = [
            self.pool.submit(
                self.storage.set_cookie, cookie=cookie(f"{self.name}b{self.batch}-", i)
            )
            for i in range(CALLS)
        ]
        for future in futures:
            future.result()


class SitekeepChannel:
    def __init__(self, name: str, conn: BidiConnection, context: str, connect_ms: float) -> None:
        self.name = name
        self.conn = conn
        self.target = {"context": context}
        self.connect_ms = connect_ms
        self.batch = 0

    async def evaluate(self) -> None:
        result = await self.conn.send(
            "script.evaluate", {"expression": "1", "target": self.target, "awaitPromise": False}
        )
        assert result.get("type") == "success", result

    async def set_cookie(self, i: int) -> None:
        await self.conn.send("storage.setCookie", {"cookie": cookie(self.name, i)})

    async def set_cookies_concurrently(self) -> None:
        self.batch += 1
        await asyncio.gather(
            *(
                self.conn.send(
                    "storage.setCookie", {"cookie": cookie(f"{self.name}b{self.batch}-", i)}
                )
                for i in range(CALLS)
            )
        )


Channel = SeleniumChannel | SitekeepChannel


async def timed(fn: Callable[[], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await fn()
    return (time.perf_counter() - started) * 1000


async def measure(channels: list[Channel]) -> dict[str, dict[str, list[float]]]:
    raw: dict[str, dict[str, list[float]]] = {
        c.name: {"evaluate": [], "set_cookie": [], "set_cookie_seq_total": [], "concurrent": []}
        for c in channels
    }
    for ch in channels:  # one untimed call each: connections warm
        await ch.evaluate()
    for _ in range(CALLS):
        for ch in channels:
            raw[ch.name]["evaluate"].append(await timed(ch.evaluate))
    totals = {c.name: 0.0 for c in channels}
    for i in range(CALLS):
        for ch in channels:
            took = await timed(lambda ch=ch, i=i: ch.set_cookie(i))  # type: ignore[misc]
            raw[ch.name]["set_cookie"].append(took)
            totals[ch.name] += took
    for ch in channels:
        raw[ch.name]["set_cookie_seq_total"].append(totals[ch.name])
    for _ in range(BATCHES):
        for ch in channels:
            raw[ch.name]["concurrent"].append(await timed(ch.set_cookies_concurrently))
    return raw


def report(channels: list[Channel], raw: dict[str, dict[str, list[float]]]) -> None:
    labels = {
        "a": "(a) selenium, interval 0.1 s (default)",
        "b": "(b) selenium, interval 0.001 s",
        "c": "(c) sitekeep BidiConnection",
    }
    columns = [
        ("evaluate", 'script.evaluate("1") ms/call', CALLS),
        ("set_cookie", "setCookie sequential ms/call", CALLS),
        ("set_cookie_seq_total", "50 sequential setCookie ms", 1),
        ("concurrent", "50 concurrent setCookie ms", BATCHES),
    ]
    med = {c.name: {k: statistics.median(v) for k, v in raw[c.name].items()} for c in channels}
    table = Table(title="Selenium 4.51 BiDi socket vs sitekeep's, same Chromium (medians)")
    table.add_column("channel")
    table.add_column("socket open ms", justify="right")
    for _, title, n in columns:
        table.add_column(f"{title} (n={n})", justify="right")
    for ch in channels:
        row = [labels[ch.name], f"{ch.connect_ms:.0f}"]
        for key, _, _ in columns:
            value = med[ch.name][key]
            ratio = value / med["c"][key]
            row.append(f"{value:.1f}" if ch.name == "c" else f"{value:.1f} (×{ratio:.1f})")
        table.add_row(*row)
    console.print(table)
    console.print("(×k) = the channel's median divided by sitekeep's (c).")


async def main() -> None:
    logging.getLogger("selenium").setLevel(logging.WARNING)
    started = time.perf_counter()
    drivers = []
    try:
        drivers.append(start_driver(None))
        drivers.append(start_driver(0.001))
        a = SeleniumChannel("a", drivers[0])
        b = SeleniumChannel("b", drivers[1])
        t0 = time.perf_counter()
        conn = await BidiConnection.connect(drivers[0].caps["webSocketUrl"])
        c = SitekeepChannel(
            "c", conn, drivers[0].current_window_handle, (time.perf_counter() - t0) * 1000
        )
        channels: list[Channel] = [a, b, c]
        raw = await measure(channels)
        await conn.close()
        for ch in (a, b):
            ch.pool.shutdown()
    finally:
        for driver in drivers:
            driver.quit()
    report(channels, raw)
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"bidi_channel-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {
                "selenium": webdriver.__version__,
                "connect_ms": {ch.name: ch.connect_ms for ch in channels},
                "raw_ms": raw,
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    console.print(
        f"raw values: {path.relative_to(ROOT)}; took {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    asyncio.run(main())
