"""The Selenium Grid fixture (``fixtures.grid``): sessions through a real Grid 4.20 get a
``webSocketUrl`` on the Grid, and sitekeep's own BiDi client works through it — commands,
reattach after closing the socket, two sockets at once — for Chromium and Firefox."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from fixtures.grid import CHROMIUM, FIREFOX, Grid, start_grid
from sitekeep.browser.bidi import BidiConnection

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
)
WAIT = 10.0
"""Seconds any single BiDi command may take through the Grid."""


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grid]:
    running = start_grid(tmp_path_factory.mktemp("grid"))
    try:
        yield running
    finally:
        forced = running.stop()
    assert forced == [], "drivers or browsers outlived the Grid and had to be killed"
    assert running.processes() == []


def only_the_server_left(grid: Grid, timeout: float = 15.0) -> bool:
    """Wait until every driver and browser of the Grid has exited."""
    deadline = time.monotonic() + timeout
    while grid.processes() != [grid.pid]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def options(kind: str) -> Any:
    from selenium.webdriver.chrome.options import Options as ChromeOptions
    from selenium.webdriver.firefox.options import Options as FirefoxOptions

    result: Any
    if kind == "chromium":
        result = ChromeOptions()
        result.binary_location = str(CHROMIUM)
        for arg in CHROMIUM_ARGS:
            result.add_argument(arg)
    else:
        result = FirefoxOptions()
        result.binary_location = str(FIREFOX)
        result.add_argument("-headless")
    result.set_capability("webSocketUrl", True)
    return result


def new_session(grid: Grid, kind: str) -> Any:
    """A WebDriver session through the Grid (blocking)."""
    from selenium import webdriver

    return webdriver.Remote(command_executor=grid.url, options=options(kind))


async def open_session(grid: Grid, kind: str) -> Any:
    return await anyio.to_thread.run_sync(new_session, grid, kind)


async def quit_session(driver: Any) -> None:
    await anyio.to_thread.run_sync(driver.quit)


def bidi_url(driver: Any) -> str:
    ws_url = driver.caps.get("webSocketUrl")
    assert isinstance(ws_url, str), driver.caps
    return ws_url


async def evaluate(conn: BidiConnection, context: str, expression: str) -> Any:
    result = await conn.send(
        "script.evaluate",
        {"expression": expression, "target": {"context": context}, "awaitPromise": False},
        timeout=WAIT,
    )
    assert result.get("type") == "success", result
    return result["result"].get("value")


async def top_context(conn: BidiConnection) -> str:
    tree = await conn.send("browsingContext.getTree", {}, timeout=WAIT)
    contexts = tree["contexts"]
    assert contexts, tree
    return str(contexts[0]["context"])


async def navigate(conn: BidiConnection, context: str, title: str) -> None:
    await conn.send(
        "browsingContext.navigate",
        {"context": context, "url": f"data:text/html,<title>{title}</title>", "wait": "complete"},
        timeout=WAIT,
    )


async def connect(stack: AsyncExitStack, ws_url: str) -> BidiConnection:
    """A BiDi socket closed when ``stack`` unwinds (closing twice is harmless)."""
    conn = await BidiConnection.connect(ws_url, timeout=WAIT)
    stack.push_async_callback(conn.close)
    return conn


@pytest.mark.parametrize("kind", ["chromium", "firefox"])
async def test_sitekeep_bidi_client_works_through_the_grid(grid: Grid, kind: str) -> None:
    driver = await open_session(grid, kind)
    try:
        ws_url = bidi_url(driver)
        port = grid.url.rsplit(":", 1)[1]
        assert ws_url == f"ws://127.0.0.1:{port}/session/{driver.session_id}/se/bidi"

        async with AsyncExitStack() as stack:
            conn = await connect(stack, ws_url)
            context = await top_context(conn)
            await navigate(conn, context, "ok")
            assert await evaluate(conn, context, "document.title") == "ok"
            await conn.close()
            assert conn.closed

            # Reattach: a new socket to the same URL reaches the same browser.
            again = await connect(stack, ws_url)
            assert await top_context(again) == context
            assert await evaluate(again, context, "document.title") == "ok"

            # Two sockets at once, both answering.
            other = await connect(stack, ws_url)
            both = await asyncio.gather(
                evaluate(again, context, "1 + 1"), evaluate(other, context, "document.title")
            )
            assert list(both) == [2, "ok"]
    finally:
        await quit_session(driver)
    assert driver.session_id not in grid.session_ids()
    assert await anyio.to_thread.run_sync(only_the_server_left, grid)


async def test_two_firefox_sessions_at_once(grid: Grid) -> None:
    started = await asyncio.gather(
        open_session(grid, "firefox"), open_session(grid, "firefox"), return_exceptions=True
    )
    drivers = [d for d in started if not isinstance(d, BaseException)]
    try:
        for result in started:
            if isinstance(result, BaseException):
                raise result
        assert drivers[0].session_id != drivers[1].session_id
        # Each geckodriver got a Firefox remote-agent port of its own.
        assert len(set(websocket_ports(grid))) == 2

        async with AsyncExitStack() as stack:
            conns = [await connect(stack, bidi_url(d)) for d in drivers]
            contexts = [await top_context(c) for c in conns]
            pairs = list(zip(conns, contexts, strict=True))
            await asyncio.gather(
                *(navigate(c, ctx, t) for (c, ctx), t in zip(pairs, ("one", "two"), strict=True))
            )
            titles = [await evaluate(c, ctx, "document.title") for c, ctx in pairs]
            assert titles == ["one", "two"]
    finally:
        for driver in drivers:
            await quit_session(driver)
    assert await anyio.to_thread.run_sync(only_the_server_left, grid)


def websocket_ports(grid: Grid) -> list[int]:
    """The ``--websocket-port`` of every geckodriver the Grid runs now."""
    ports = []
    for pid in grid.processes():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv[0].endswith((b"geckodriver_linux64", b"geckodriver_aarch64")):
            continue
        for arg in argv:
            match = re.fullmatch(rb"--websocket-port=(\d+)", arg)
            if match:
                ports.append(int(match.group(1)))
    return ports
