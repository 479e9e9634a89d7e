"""How fast text gets into a field: sitekeep's typing engine vs the one-command key path it
replaced (issue #8 item 4), side by side in one run, on the same browser and page.

* **keys (before)** — the path as of main 2f161b7: focus, then one ``input.performActions``
  holding a keyDown/keyUp pair for every character. Sizes up to 500 characters (8,192
  would take most of a minute on this machine, and blew the 5 s BiDi timeout).
* **keys (fallback)** — ``browser.keys`` on an element ``insertText`` cannot edit (a
  ``div`` that types what its keydown listener sees): chunks of ``CHUNK_KEYS`` keys, each
  after the in-page check. Its rate sizes ``MAX_KEY_CHARS``.
* **insert (engine)** — ``browser.keys.type_text`` into a textarea: chunks of
  ``CHUNK_CHARS`` inserted by one checked script call each. Sizes up to ``MAX_TEXT_CHARS``,
  the largest value ``PUT /v1/secrets`` accepts.

Every run checks the field holds exactly the text typed. Prints chars/s per size (median of
``RUNS``), the ratio engine / before, and the largest accepted value's time against
``TYPE_BUDGET``. Run::

    .venv/bin/python bench/type_speed.py [--firefox] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from fixtures.sites import start_sites  # noqa: E402
from sitekeep.args import OpenBody  # noqa: E402
from sitekeep.browser import keys, page  # noqa: E402
from sitekeep.browser.live import LiveBrowser  # noqa: E402
from sitekeep.config import Settings  # noqa: E402
from sitekeep.model import Principal  # noqa: E402
from sitekeep.service import Service  # noqa: E402

WHO = Principal("bench", "bench")
HOST_RULES = '--host-resolver-rules="MAP *.example.test 127.0.0.1"'
PAGE = """<textarea id="t"></textarea>
<div id="k" tabindex="0"></div>
<script>
const k = document.getElementById("k");
k.addEventListener("keydown", (e) => {
  if (e.key.length === 1) k.textContent += e.key;
  else if (e.key === "Delete") k.textContent = "";
  e.preventDefault();
});
</script>"""
BEFORE_SIZES = (100, 500)
FALLBACK_SIZES = (100, 500)
ENGINE_SIZES = (100, 500, 1000, keys.MAX_TEXT_CHARS)

console = Console(width=120)


def text_of(n: int) -> str:
    return ("dummy typing speed 0123456789 " * (n // 30 + 1))[:n]


async def held(browser: LiveBrowser, selector: str) -> str:
    got = await browser.evaluate_json(
        "(s) => { const e = document.querySelector(s);"
        " return JSON.stringify(e.value !== undefined ? e.value : e.textContent); }",
        selector,
    )
    return str(got)


async def before(browser: LiveBrowser, shared_id: str, text: str) -> None:
    """The replaced path: focus and select, then one performActions of every key."""
    await page.call_on(
        browser, shared_id, "(el) => { el.focus(); el.select(); return JSON.stringify(1); }"
    )
    actions: list[dict[str, Any]] = []
    for ch in text:
        actions += [{"type": "keyDown", "value": ch}, {"type": "keyUp", "value": ch}]
    await browser.conn.send(
        "input.performActions",
        {"context": browser.context, "actions": [{"type": "key", "id": "kb", "actions": actions}]},
        timeout=120,
    )


async def rate(browser: LiveBrowser, how: str, selector: str, n: int, runs: int) -> float:
    text = text_of(n)
    shared_id = await page.locate(browser, selector)
    seconds = []
    for _ in range(runs):
        # A widget holds what its keys made: it starts empty, as a field is replaced.
        await browser.evaluate_json(
            "() => JSON.stringify(document.getElementById('k').textContent = '')"
        )
        start = time.perf_counter()
        if how == "before":
            await before(browser, shared_id, text)
        else:
            await keys.type_text(browser, shared_id, text)
        seconds.append(time.perf_counter() - start)
        assert await held(browser, selector) == text, f"{how}: the field holds other text"
    return n / statistics.median(seconds)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--firefox", action="store_true")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    kind = "firefox" if options.firefox else "chromium"
    with start_sites() as sites, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            browser_args=HOST_RULES,
            session_store="memory://",
            warm_browsers=0,
            browser=kind,
            firefox_prefs={"network.dns.forceResolve": "127.0.0.1"},
        )
        service = Service.from_settings(settings)
        try:
            url = sites.url("bench.example.test", "/__fixture/html?body=" + quote(PAGE))
            await service.sessions.open(WHO, OpenBody(key="speed", url=url))
            browser = await service.views.live_browser(WHO, "speed")
            assert browser is not None
            rows: dict[str, dict[int, float]] = {"before": {}, "fallback": {}, "engine": {}}
            for n in BEFORE_SIZES:
                rows["before"][n] = await rate(browser, "before", "#t", n, options.runs)
            for n in FALLBACK_SIZES:
                rows["fallback"][n] = await rate(browser, "engine", "#k", n, options.runs)
            for n in ENGINE_SIZES:
                rows["engine"][n] = await rate(browser, "engine", "#t", n, options.runs)
        finally:
            await service.parts.browsers.close_all()
            service.parts.browsers.stop_local_drivers()
            await service.aclose()
    report(kind, rows, options.runs)


def report(kind: str, rows: dict[str, dict[int, float]], runs: int) -> None:
    table = Table(title=f"Typing into a field, {kind}, chars/s (median of {runs})")
    table.add_column("path")
    sizes = sorted({n for row in rows.values() for n in row})
    for n in sizes:
        table.add_column(f"{n} chars", justify="right")
    labels = {
        "before": "keys, one command (before)",
        "fallback": f"keys, chunks of {keys.CHUNK_KEYS} (fallback)",
        "engine": f"insert, chunks of {keys.CHUNK_CHARS} (engine)",
    }
    for name, row in rows.items():
        table.add_row(labels[name], *(f"{row[n]:,.0f}" if n in row else "–" for n in sizes))
    console.print(table)
    base = statistics.median(rows["before"].values())
    engine = rows["engine"][keys.MAX_TEXT_CHARS]
    fallback = min(rows["fallback"].values())
    console.print(f"engine / before: {engine / base:,.1f}× (8,192 chars vs the before median)")
    console.print(
        f"{keys.MAX_TEXT_CHARS:,} chars (largest accepted value) typed in "
        f"{keys.MAX_TEXT_CHARS / engine:.2f} s; bound {keys.TYPE_BUDGET:g} s"
    )
    console.print(
        f"key fallback: {fallback:,.0f} chars/s (floor assumed {keys.MIN_KEY_RATE}); "
        f"{keys.MAX_KEY_CHARS:,} chars in {keys.MAX_KEY_CHARS / fallback:.1f} s"
    )
    print(json.dumps({"kind": kind, "rows": rows}))


if __name__ == "__main__":
    asyncio.run(main())
