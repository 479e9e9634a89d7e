"""What checkpoints cost an agent (issue #26 item 2; SPEC §16): a navigate-heavy run with
checkpoints on (a short interval) beside the same run with them off, side by side.

Two services on the same machine, one browser each: ``SITEKEEP_CHECKPOINT=0`` and
``--interval`` seconds (default 2: the default is 300, so this is a checkpoint far more
often than a session sees one). Each block navigates ``--navigations`` times around five
sites — four writing localStorage, one the fixture form app's page — so every checkpoint
has real site data to save. Blocks alternate off, on, off, on… (``--runs`` of each), so
the shared machine's noise falls on both sides alike. A checkpoint takes the session's
lock: an agent call that comes meanwhile waits for it, and that wait is what the wall
time of the "on" blocks carries.

Prints per block the wall time and navigations/s, the median ratio on / off (the bar:
at most 1.05), and how many checkpoints ran, how long each took (from the journal) and
their share of the on blocks' time: the most the agent's calls can have waited for them,
a figure the machine's noise moves far less than the ratio of two wall times.
Run::

    .venv/bin/python bench/checkpoint.py [--firefox] [--runs 3] [--navigations 150] [--interval 2]
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from fixtures.sites import Sites, start_sites  # noqa: E402
from sitekeep.args import OpenBody  # noqa: E402
from sitekeep.config import Settings  # noqa: E402
from sitekeep.model import Principal  # noqa: E402
from sitekeep.service import Service  # noqa: E402

WHO = Principal("bench", "bench")
ADMIN = Principal("bench", "boss", "admin")
HOST_RULES = '--host-resolver-rules="MAP *.example.test 127.0.0.1"'
BAR = 1.05
"""Checkpoints may cost the agent at most 5 % on a navigate-heavy run (issue #26)."""

console = Console(width=120)


def pages(sites: Sites) -> list[str]:
    """Five sites: four keep localStorage, one is the form app's page."""
    hosts = ("a", "b", "c", "d")
    local = [sites.url(f"{h}.bench.example.test", f"/__fixture/ls?k{h}=dummy-{h}") for h in hosts]
    return [*local, sites.url("form.example.test", "/")]


async def block(service: Service, key: str, urls: list[str], navigations: int) -> float:
    """Seconds ``navigations`` navigations take, one after another, as an agent makes them."""
    started = time.perf_counter()
    for i in range(navigations):
        await service.sessions.navigate(WHO, key, urls[i % len(urls)])
    return time.perf_counter() - started


def settings_of(tmp: Path, kind: str, checkpoint: float) -> Settings:
    return Settings(
        data_dir=tmp / f"checkpoint-{checkpoint:g}",
        browser_args=HOST_RULES,
        session_store="memory://",
        warm_browsers=0,
        browser=kind,
        firefox_prefs={"network.dns.forceResolve": "127.0.0.1"},
        checkpoint=checkpoint,
    )


async def checkpoints(service: Service, key: str) -> list[float]:
    """The duration of each checkpoint the session's journal shows, seconds."""
    timeline = await service.admin.journal(ADMIN, key, limit=1000)
    rows = timeline["rows"]
    while timeline["next"] is not None:
        timeline = await service.admin.journal(ADMIN, key, after=timeline["next"], limit=1000)
        rows += timeline["rows"]
    return [
        float(r["duration"])
        for r in rows
        if r.get("op") == "autosave" and r.get("args", {}).get("reason") == "checkpoint"
    ]


async def run(options: argparse.Namespace) -> dict[str, Any]:
    kind = "firefox" if options.firefox else "chromium"
    times: dict[str, list[float]] = {"off": [], "on": []}
    with start_sites() as sites, tempfile.TemporaryDirectory() as tmp:
        services = {
            "off": Service.from_settings(settings_of(Path(tmp), kind, 0.0)),
            "on": Service.from_settings(settings_of(Path(tmp), kind, options.interval)),
        }
        urls = pages(sites)
        try:
            for side, service in services.items():
                await service.sessions.open(WHO, OpenBody(key=side, url=urls[0]))
                await block(service, side, urls, len(urls))  # warm: every site once
            for _ in range(options.runs):
                for side, service in services.items():
                    times[side].append(await block(service, side, urls, options.navigations))
            durations = await checkpoints(services["on"], "on")
            assert not await checkpoints(services["off"], "off"), "checkpoints were off"
        finally:
            for service in services.values():
                await service.parts.browsers.close_all()
                service.parts.browsers.stop_local_drivers()
                await service.aclose()
    return {"kind": kind, "times": times, "checkpoints": durations}


def report(options: argparse.Namespace, result: dict[str, Any]) -> None:
    times, durations = result["times"], result["checkpoints"]
    n = options.navigations
    table = Table(title=f"{n} navigations a block, {result['kind']}, checkpoints every "
                  f"{options.interval:g} s vs off")  # fmt: skip
    table.add_column("block")
    table.add_column("off: s", justify="right")
    table.add_column("off: nav/s", justify="right")
    table.add_column("on: s", justify="right")
    table.add_column("on: nav/s", justify="right")
    table.add_column("on / off", justify="right")
    for i, (off, on) in enumerate(zip(times["off"], times["on"], strict=True), 1):
        table.add_row(str(i), f"{off:.2f}", f"{n / off:.1f}", f"{on:.2f}", f"{n / on:.1f}",
                      f"{on / off:.3f}")  # fmt: skip
    console.print(table)
    ratio = statistics.median(times["on"]) / statistics.median(times["off"])
    verdict = "met" if ratio <= BAR else "MISSED"
    console.print(f"median on / off: {ratio:.3f} (bar ≤ {BAR:.2f}: {verdict})")
    if durations:
        share = sum(durations) / sum(times["on"])
        console.print(
            f"{len(durations)} checkpoints, each {statistics.median(durations) * 1000:.0f} ms "
            f"(median; max {max(durations) * 1000:.0f} ms): {share:.1%} of the on blocks' "
            "time — the most an agent's calls can have waited for them"
        )
    print(json.dumps({**result, "ratio": ratio, "interval": options.interval}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--firefox", action="store_true")
    parser.add_argument("--runs", type=int, default=3, help="blocks of each side")
    parser.add_argument("--navigations", type=int, default=150, help="navigations a block")
    parser.add_argument("--interval", type=float, default=2.0, help="checkpoint, seconds")
    options = parser.parse_args()
    report(options, asyncio.run(run(options)))


if __name__ == "__main__":
    main()
