"""Firefox variants of "restore + land into a browser started just before", side by side.

Each variant is a set of Firefox preferences (on top of the bench's ``FIREFOX`` settings)
and/or a way to wait on the first navigation; each has its own ``Service`` (its own
geckodriver per browser, the shared profile template). One snapshot of N origins (the
workload of ``save_restore.py``) is made once per size; then, run by run, the variants
take turns (the order rotates each run): ``service.parts.browsers.start("firefox")`` (not
timed), optionally ``--settle`` seconds of sleep, then ``restore()`` to the landing page
(timed, checked after: title, localStorage, jar). Beside the total, the first
``browsingContext.navigate`` of each restore is timed on its own.

Run under the shared lock::

    flock /tmp/sitekeep-heavy.lock timeout 420 .venv/bin/python bench/ff_cold.py \\
        --runs 7 --sizes 1,20 --variant base: \\
        --variant 'pre0:dom.ipc.processPrelaunch.delayMs=0'

A variant is ``NAME:pref=value,pref=value`` (values are JSON when they parse, else
strings). Among them, ``@wait=interactive`` changes the ``wait`` of the first
navigation; ``@settle=S`` sleeps S seconds between start and restore (a reference: a
browser no longer just started); ``@template=nocache|warm`` runs in a copy of the
profile template without its startupCache, or with one rewritten by a run that restored
into it; ``@sub=none`` leaves out restore()'s ``browsingContext.load`` subscription
(N = 1 only: nothing there waits on it). Per variant it prints the p50 of the restore,
of its first navigate and of the (untimed) start, and the p50 time summed per BiDi
method.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import save_restore as sr  # noqa: E402
from fixtures.sites import start_sites  # noqa: E402
from singles import end_service  # noqa: E402
from sitekeep.args import OpenBody, SaveBody  # noqa: E402
from sitekeep.browser import restore as restore_mod  # noqa: E402
from sitekeep.browser.bidi import BidiConnection  # noqa: E402
from sitekeep.browser.live import LiveBrowser, Loads  # noqa: E402
from sitekeep.service import Service  # noqa: E402


@dataclass
class Variant:
    name: str
    prefs: dict[str, Any]
    wait: str = "complete"
    settle: float = 0.0
    template: str = ""
    """``nocache``: the template without its startupCache; ``warm``: its startupCache
    rewritten by one run that restored into it (see :func:`warm_template`)."""
    sub: str = ""
    """``none``: restore() without its browsingContext.load subscription (N=1 only)."""
    service: Service | None = None
    total: dict[int, list[float]] = field(default_factory=dict)
    first_nav: dict[int, list[float]] = field(default_factory=dict)
    calls: dict[int, list[dict[str, float]]] = field(default_factory=dict)
    start: dict[int, list[float]] = field(default_factory=dict)


def parse_variant(text: str) -> Variant:
    name, _, rest = text.partition(":")
    prefs: dict[str, Any] = {}
    wait = "complete"
    settle = 0.0
    template = ""
    sub = ""
    for item in filter(None, rest.split(",")):
        key, _, raw = item.partition("=")
        if key == "@wait":
            wait = raw
            continue
        if key == "@sub":
            sub = raw
            continue
        if key == "@template":
            template = raw
            continue
        if key == "@settle":
            settle = float(raw)
            continue
        try:
            prefs[key] = json.loads(raw)
        except ValueError:
            prefs[key] = raw
    return Variant(name, prefs, wait, settle, template, sub)


_FIRST: list[float] = []
"""The first ``browsingContext.navigate`` of the restore being timed (ms)."""
_WAIT = {"mode": "complete"}
_orig_send = BidiConnection.send
_CALLS: list[tuple[str, float]] = []


async def _timed_send(self: BidiConnection, method: str, params: Any = None, **kw: Any) -> Any:
    if method != "browsingContext.navigate" or _FIRST:
        began = time.perf_counter()
        try:
            return await _orig_send(self, method, params, **kw)
        finally:
            _CALLS.append((method, (time.perf_counter() - began) * 1000))
    started = time.perf_counter()
    if isinstance(params, dict):
        params = {**params, "wait": _WAIT["mode"]}
    result = await _orig_send(self, method, params, **kw)
    _FIRST.append((time.perf_counter() - started) * 1000)
    return result


BidiConnection.send = _timed_send  # type: ignore[method-assign]


@contextlib.asynccontextmanager
async def _no_loads(self: LiveBrowser) -> AsyncIterator[Loads]:
    yield Loads(self.context)


async def one(variant: Variant, n: int, snapshot: Any, land: str, settle: float) -> None:
    assert variant.service is not None
    browsers = variant.service.parts.browsers
    t0 = time.perf_counter()
    live = await browsers.start("firefox")
    started = (time.perf_counter() - t0) * 1000
    try:
        if settle or variant.settle:
            await asyncio.sleep(settle or variant.settle)
        _FIRST.clear()
        _CALLS.clear()
        _WAIT["mode"] = variant.wait
        if variant.sub == "none":
            live.loads = _no_loads.__get__(live)  # type: ignore[method-assign]
        t1 = time.perf_counter()
        report = await restore_mod.restore(live, snapshot, land, now=time.time())
        took = (time.perf_counter() - t1) * 1000
        per: dict[str, float] = {}
        for method, spent in _CALLS:
            per[method] = per.get(method, 0.0) + spent
        variant.calls.setdefault(n, []).append(per)
        sr.check(not report.skipped, f"restore skipped {report.skipped}")
        await sr.Bench.verify_sitekeep(live, n)
    finally:
        _WAIT["mode"] = "complete"
        await browsers.close(live.ref)
    variant.total.setdefault(n, []).append(took)
    variant.first_nav.setdefault(n, []).append(_FIRST[0] if _FIRST else float("nan"))
    variant.start.setdefault(n, []).append(started)


async def warm_template(variant: Variant, snapshot: Any, land: str, cache: Path) -> None:
    """One restore into a browser whose profile copy has no startupCache, then Firefox
    quits cleanly (Delete Session) and the startupCache it wrote goes into the template."""
    assert variant.service is not None
    browsers = variant.service.parts.browsers
    live = await browsers.start("firefox")
    profile = browsers._gecko.profile(live.ref.endpoint)
    assert profile is not None
    await restore_mod.restore(live, snapshot, land, now=time.time())
    await asyncio.sleep(3)
    async with httpx.AsyncClient(timeout=30) as client:
        await client.delete(f"{live.ref.endpoint}/session/{live.ref.session_id}")
    (template,) = [t for t in (cache / "firefox-templates").iterdir() if "." not in t.name]
    shutil.copytree(profile / "startupCache", template / "startupCache")
    print(f"warmed {variant.name}: {sorted(p.name for p in (template / 'startupCache').iterdir())}")
    await browsers.close(live.ref)


TIMELINE_EVENTS = [
    "browsingContext.navigationStarted",
    "network.beforeRequestSent",
    "network.responseStarted",
    "network.responseCompleted",
    "browsingContext.navigationCommitted",
    "browsingContext.domContentLoaded",
    "browsingContext.load",
]


def _first_seen(seen: dict[str, float], event: str) -> Callable[[Any], None]:
    def note(_params: Any) -> None:
        seen.setdefault(event, time.perf_counter())

    return note


async def timeline(runs: int) -> None:
    """The first navigation of a just-started Firefox (and of one 2 s later) to the
    landing page, event by event: ms after the command was sent, as received (the first
    of each event kind), beside the navigate's own reply."""
    sites = start_sites()
    tmp = tempfile.TemporaryDirectory(prefix="sitekeep-ffcold-")
    service = Service.from_settings(sr.bench_settings(Path(tmp.name), **sr.FIREFOX))
    url = sr.land_url(sites)
    try:
        for r in range(2 * runs):
            settle = 2.0 if r % 2 else 0.0
            live = await service.parts.browsers.start("firefox")
            try:
                await asyncio.sleep(settle)
                seen: dict[str, float] = {}
                for event in TIMELINE_EVENTS:
                    live.conn.add_listener(event, _first_seen(seen, event))
                await live.conn.subscribe(TIMELINE_EVENTS, [live.context])
                sent = time.perf_counter()
                await live.conn.send(
                    "browsingContext.navigate",
                    {"context": live.context, "url": url, "wait": "complete"},
                )
                took = (time.perf_counter() - sent) * 1000
            finally:
                await service.parts.browsers.close(live.ref)
            steps = ", ".join(
                f"{e.split('.')[1]} {(seen[e] - sent) * 1000:.0f}"
                for e in TIMELINE_EVENTS
                if e in seen
            )
            print(f"settle {settle:.0f} s: navigate {took:.0f} ms — {steps}", flush=True)
    finally:
        await end_service(service)
        sites.stop()
        tmp.cleanup()


async def main(args: argparse.Namespace) -> None:
    if args.timeline:
        await timeline(args.runs)
        return
    variants = [parse_variant(v) for v in args.variant] or [parse_variant("base:")]
    sites = start_sites()
    tmp = tempfile.TemporaryDirectory(prefix="sitekeep-ffcold-")
    root = Path(tmp.name)
    base_prefs: dict[str, Any] = dict(cast(dict[str, Any], sr.FIREFOX["firefox_prefs"]))
    shared = Path.home() / ".cache" / "sitekeep" / "firefox-templates"
    for v in variants:
        extra: dict[str, Any] = {}
        if v.template:
            extra["cache_dir"] = root / v.name / "cache"
            for built in shared.iterdir():
                if "." in built.name:
                    continue
                dest = root / v.name / "cache" / "firefox-templates" / built.name
                shutil.copytree(built, dest)
                shutil.rmtree(dest / "startupCache", ignore_errors=True)
        settings = sr.bench_settings(
            root / v.name, **{**sr.FIREFOX, "firefox_prefs": {**base_prefs, **v.prefs}}, **extra
        )
        v.service = Service.from_settings(settings)
    maker = Service.from_settings(sr.bench_settings(root / "maker", **sr.FIREFOX))
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    try:
        for n in args.sizes:
            key = f"ff{n}"
            await maker.sessions.open(sr.WHO, OpenBody(key=key))
            for url in sr.setup_pages(sites, n):
                await maker.sessions.navigate(sr.WHO, key, url)
            await maker.sessions.save_site_data(sr.WHO, key, SaveBody())
            await maker.sessions.close(sr.WHO, key)
            snapshot = await maker.parts.seam.records.load_snapshot(sr.WHO.tenant, key)
            assert snapshot is not None
            land = sr.land_url(sites)
            for v in variants:
                if v.template == "warm" and n == args.sizes[0]:
                    await warm_template(v, snapshot, land, root / v.name / "cache")
            for v in variants:  # warm-up, not kept
                await one(v, n, snapshot, land, args.settle)
                v.total[n].clear()
                v.first_nav[n].clear()
                v.start[n].clear()
                v.calls[n].clear()
            for r in range(args.runs):
                k = r % len(variants)
                for v in variants[k:] + variants[:k]:
                    await one(v, n, snapshot, land, args.settle)
            print(f"N={n} (load {os.getloadavg()[0]:.2f}):")
            base = statistics.median(variants[0].total[n])
            for v in variants:
                med = statistics.median(v.total[n])
                print(
                    f"  {v.name:14s} restore p50 {med:6.0f} ms ({med / base:4.2f}x)"
                    f"  first navigate p50 {statistics.median(v.first_nav[n]):6.0f} ms"
                    f"  start p50 {statistics.median(v.start[n]):6.0f} ms"
                    f"  all {[round(x) for x in v.total[n]]}",
                    flush=True,
                )
                methods = sorted({m for per in v.calls[n] for m in per})
                print(
                    "      "
                    + ", ".join(
                        f"{m} {statistics.median(per.get(m, 0.0) for per in v.calls[n]):.1f}"
                        for m in methods
                    )
                )
    finally:
        for svc in [*(v.service for v in variants if v.service is not None), maker]:
            await end_service(svc)
        sites.stop()
        tmp.cleanup()


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sizes", default="1", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument(
        "--timeline", action="store_true", help="events of the first navigation instead"
    )
    parser.add_argument(
        "--settle", type=float, default=0.0, help="seconds between start and restore"
    )
    asyncio.run(main(parser.parse_args()))


if __name__ == "__main__":
    cli()
