"""What a save at one origin is made of, command by command, on Firefox (or Chromium).

One sitekeep session on a fixture page (3 cookies, 10 localStorage keys, as
``save_restore.py`` sets up N = 1), then, alternating call by call for ``--rounds``
rounds so machine noise hits every variant alike, the median time of each:

* ``evaluate "1"`` — ``script.evaluate("1")``: the socket, the driver, the browser;
* ``getCookies`` — ``storage.getCookies`` (3 cookies);
* ``READ`` — the save's read of the main tab as sent today (``LiveBrowser.evaluate_json``:
  one ``script.evaluate`` of ``(READ)(true)``, ``awaitPromise``);
* ``READ, callFunction`` — the same function as ``script.callFunction`` with an argument;
* ``READ without idb`` — READ minus its ``indexedDB.databases()`` (not a variant to ship:
  what that call costs);
* ``indexedDB.databases()`` — that call alone;
* ``getCookies + READ`` — both in flight together, as a save sends them;
* ``save_site_data`` — the whole save (``Sessions.save_site_data``; memory store, the
  journal in files with fsync).

Run under the heavy lock::

    .venv/bin/python bench/save_floor.py [--browser firefox] [--rounds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from fixtures.sites import start_sites  # noqa: E402
from save_restore import FIREFOX, WHO, bench_settings, setup_pages  # noqa: E402
from singles import end_service  # noqa: E402
from sitekeep.args import OpenBody, SaveBody  # noqa: E402
from sitekeep.browser.scripts import READ  # noqa: E402
from sitekeep.service import Service  # noqa: E402

console = Console(width=120)

_NO_IDB = READ.replace(
    "try { res.idb = (await indexedDB.databases()).length > 0; } catch (e) { res.idb = false; }",
    "",
)
assert _NO_IDB != READ, "READ changed: update the variant without indexedDB.databases()"


async def measure(browser: str, rounds: int) -> dict[str, list[float]]:
    sites = start_sites()
    tmp = tempfile.TemporaryDirectory(prefix="sitekeep-bench-")
    settings = bench_settings(Path(tmp.name), **{**FIREFOX, "browser": browser})
    service = Service.from_settings(settings)
    times: dict[str, list[float]] = {}
    try:
        await service.sessions.open(WHO, OpenBody(key="floor"))
        for url in setup_pages(sites, 1):
            await service.sessions.navigate(WHO, "floor", url)
        record = await service.views.record(WHO, "floor")
        assert record.browser is not None
        live = await service.parts.seam.browsers.attach(record.browser)
        assert live is not None
        conn, target = live.conn, {"context": live.context}

        def evaluate(expression: str, await_promise: bool = False) -> Awaitable[Any]:
            return conn.send(
                "script.evaluate",
                {
                    "expression": expression,
                    "target": target,
                    "awaitPromise": await_promise,
                    "resultOwnership": "none",
                },
            )

        async def both() -> None:
            await asyncio.gather(
                conn.send("storage.getCookies", {}),
                live.evaluate_json(READ, True, await_promise=True),
            )

        variants: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ('evaluate "1"', lambda: evaluate("1")),
            ("getCookies", lambda: conn.send("storage.getCookies", {})),
            ("READ", lambda: live.evaluate_json(READ, True, await_promise=True)),
            (
                "READ, callFunction",
                lambda: conn.send(
                    "script.callFunction",
                    {
                        "functionDeclaration": READ,
                        "arguments": [{"type": "boolean", "value": True}],
                        "target": target,
                        "awaitPromise": True,
                        "resultOwnership": "none",
                    },
                ),
            ),
            ("READ without idb", lambda: evaluate(f"({_NO_IDB})(true)", True)),
            ("indexedDB.databases()", lambda: evaluate("indexedDB.databases()", True)),
            ("getCookies + READ", both),
            ("save_site_data", lambda: service.sessions.save_site_data(WHO, "floor", SaveBody())),
        ]
        await asyncio.sleep(1.0)  # the last page's load settles
        for _, run in variants:
            await run()  # warm-up
        for r in range(rounds):
            for name, run in variants if r % 2 == 0 else reversed(variants):
                start = time.perf_counter()
                await run()
                times.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    finally:
        await end_service(service)
        sites.stop()
        tmp.cleanup()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", choices=("firefox", "chromium"), default="firefox")
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    times = asyncio.run(measure(args.browser, args.rounds))
    table = Table(
        title=f"{args.browser}: a save at one origin, piece by piece "
        f"(n = {args.rounds} each, alternating; load {load:.2f} → {os.getloadavg()[0]:.2f})"
    )
    for column in ("variant", "p50 ms", "p10 ms", "p90 ms"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for name, values in times.items():
        deciles = statistics.quantiles(values, n=10)
        table.add_row(
            name, f"{statistics.median(values):.2f}", f"{deciles[0]:.2f}", f"{deciles[-1]:.2f}"
        )
    console.print(table)


if __name__ == "__main__":
    main()
