"""The floor under a restore of N origins: what N - 1 same-site frames cost Chromium itself.

A restore writes each origin's storage from a document of that origin (there is no BiDi
command that writes localStorage): one spare page on the site's first origin with a frame
per other origin (``browser.spare``). This prints, side by side in one run (issue #15):

* **Chromium alone** — ``chromium --headless --dump-dom`` of a file page holding N - 1
  hidden ``srcdoc`` frames (no network, no script in them), timed by the page's own clock
  from its first script to its ``load``: no automation at all, nothing of sitekeep.
* **sitekeep spare page** — the restore's spare page with N - 1 hidden frames, every
  request answered over BiDi (``network.provideResponse``), in a browser from the warm
  pool: the navigation, nothing written.
* **Playwright restore + land** — ``new_context(storage_state)`` of N origins with 10
  keys each, ``new_page``, ``goto`` of the landing page: what ``save_restore.py`` compares
  with.

and the ratios each leaves: a pooled restore cannot beat ``alone / Playwright`` however
little else it does (target ≤ 0.33×). Run:

    .venv/bin/python bench/frame_floor.py --runs 5 --sizes 5,20,50
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from playwright.async_api import async_playwright  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from fixtures.sites import start_sites  # noqa: E402
from save_restore import (  # noqa: E402
    CHROMIUM,
    FLAGS,
    KEYS_PER_ORIGIN,
    POOL_IDLE,
    bench_settings,
    dummy,
    land_url,
    origin,
)
from singles import end_service  # noqa: E402
from sitekeep.browser.spare import SpareResponder  # noqa: E402
from sitekeep.service import Service  # noqa: E402

console = Console(width=140)

PAGE = (
    "<!doctype html><html><head><script>const t0 = performance.now();"
    "addEventListener('load', () => document.documentElement.setAttribute("
    "'data-took', String(performance.now() - t0)));</script></head><body>%s</body></html>"
)
TOOK = re.compile(r'data-took="([0-9.]+)"')


def alone(frames: int, folder: Path) -> float:
    """ms from the page's first script to its load, ``frames`` hidden srcdoc frames, in a
    headless Chromium no automation is attached to."""
    page = folder / f"frames-{frames}.html"
    page.write_text(PAGE % ('<iframe hidden srcdoc="x"></iframe>' * frames), encoding="utf-8")
    profile = tempfile.mkdtemp(prefix="frame-floor-", dir=folder)
    args = [CHROMIUM, *FLAGS, "--headless", f"--user-data-dir={profile}", "--dump-dom"]
    out = subprocess.run(
        [*args, page.as_uri()], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    found = TOOK.search(out)
    if found is None:
        raise RuntimeError(f"no timing in the dumped page of {frames} frames")
    return float(found.group(1))


async def spare_page(service: Service, origins: list[str]) -> float:
    """ms of the spare page's navigation with a hidden frame per origin after the first."""
    live = await service.parts.browsers.start("chromium", pooled=True)
    try:
        async with SpareResponder(live.conn, [live.context]) as spare:
            url = spare.url(origins[0], origins[1:])
            start = time.perf_counter()
            await live.replace(url)
            return (time.perf_counter() - start) * 1000
    finally:
        await service.parts.browsers.close(live.ref)
        service.parts.browsers.replenish()
        await service.parts.browsers.pool_ready()
        await asyncio.sleep(POOL_IDLE)


async def playwright_restore(browser: Any, state: dict[str, Any], land: str) -> float:
    start = time.perf_counter()
    ctx = await browser.new_context(storage_state=state)
    page = await ctx.new_page()
    await page.goto(land)
    took = (time.perf_counter() - start) * 1000
    await ctx.close()
    return took


async def main(runs: int, sizes: list[int], engine: str = "chromedriver") -> None:
    sites = start_sites()
    tmp = tempfile.TemporaryDirectory(prefix="sitekeep-frame-floor-")
    folder = Path(tmp.name)
    service = Service.from_settings(bench_settings(folder / "data", chromium_bidi=engine))
    await service.parts.browsers.warm_up()
    await service.parts.browsers.pool_ready()
    rows: dict[int, dict[str, list[float]]] = {}
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            for n in sizes:
                origins = [origin(sites, i) for i in range(n)]
                state = {
                    "cookies": [],
                    "origins": [
                        {
                            "origin": o,
                            "localStorage": [
                                {"name": f"k{k}", "value": dummy(f"{i}-{k}")}
                                for k in range(KEYS_PER_ORIGIN)
                            ],
                        }
                        for i, o in enumerate(origins)
                    ],
                }
                got: dict[str, list[float]] = {"alone": [], "spare": [], "pw": []}
                await playwright_restore(browser, state, land_url(sites))  # warm-up
                for _ in range(runs):
                    got["alone"].append(await asyncio.to_thread(alone, n - 1, folder))
                    got["spare"].append(await spare_page(service, origins))
                    got["pw"].append(await playwright_restore(browser, state, land_url(sites)))
                rows[n] = got
                console.print(f"[dim]N={n} done (load {os.getloadavg()[0]:.1f})[/dim]")
            await browser.close()
    finally:
        await end_service(service)
        sites.stop()
        tmp.cleanup()
    table = Table(title=f"the floor under a restore of N origins (medians, ms; engine {engine})")
    for column in (
        "N",
        "frames",
        "Chromium alone",
        "per frame",
        "sitekeep spare page",
        "Playwright restore + land",
        "alone / PW",
        "spare / PW",
    ):
        table.add_column(column, justify="right")
    for n, got in rows.items():
        a, s, p = (statistics.median(got[k]) for k in ("alone", "spare", "pw"))
        table.add_row(
            str(n),
            str(n - 1),
            f"{a:.0f}",
            f"{a / max(n - 1, 1):.1f}",
            f"{s:.0f}",
            f"{p:.0f}",
            f"{a / p:.2f}",
            f"{s / p:.2f}",
        )
    console.print(table)
    console.print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="5,20,50")
    parser.add_argument(
        "--engine",
        default="chromedriver",
        choices=("chromedriver", "mapper"),
        help="the local Chromium engine of the spare page (SITEKEEP_CHROMIUM_BIDI)",
    )
    args = parser.parse_args()
    asyncio.run(main(args.runs, [int(s) for s in args.sizes.split(",")], args.engine))


if __name__ == "__main__":
    cli()
