"""The single figures of ``save_restore.py`` (issue #15's table, beside the sizes):
open latency from the pool with no site data, the BiDi round trip, the journal's overhead
on a navigate. Each returns its figures as plain JSON (ms, p50 = median)."""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import websockets

from sitekeep.browser.live import LiveBrowser
from sitekeep.config import Settings
from sitekeep.journal import Journal, JournalKey, open_backend, records
from sitekeep.model import Principal
from sitekeep.service import Service

ROUND_TRIPS = 50
JOURNAL_SWITCH = "journal"
"""The ``Settings`` field (``SITEKEEP_JOURNAL``) that turns the service's journal on or off,
once the service journals (issue #11 part 2); until then the overhead is estimated."""


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def figures(values: list[float], **extra: Any) -> dict[str, Any]:
    return {"p50_ms": statistics.median(values), "n": len(values), "values_ms": values, **extra}


async def open_empty(service: Service, who: Principal, kind: str, runs: int, idle: float) -> dict:
    """``open_session`` of a new session (no snapshot, no URL) taking a pooled browser that
    idled ``idle`` seconds; the first run is a warm-up."""
    took: list[float] = []
    for run in range(runs + 1):
        await service.browsers.pool_ready()
        await asyncio.sleep(idle)
        key = f"empty-{kind}-{run}"
        start = time.perf_counter()
        await service.open_session(who, key=key, browser=kind)
        elapsed = ms(start)
        await service.delete_session(who, key)
        if run:
            took.append(elapsed)
    return figures(took)


async def round_trips(live: LiveBrowser, calls: int = ROUND_TRIPS) -> dict:
    """``script.evaluate("1")`` in the main tab, one at a time; the first 5 warm up.

    ``p50_ms`` is sitekeep's ``BidiConnection``. Beside it, alternating call by call on a
    second socket to the same session, the floor under it: a bare ``websockets`` client
    doing the same call (``bare_p50_ms``: what the browser side costs, so
    ``p50_ms - bare_p50_ms`` is the client's own overhead), and ``session.status``
    (``relay_p50_ms``: the socket and the driver alone, no browser behind them)."""
    params = {"expression": "1", "target": {"context": live.context}, "awaitPromise": False}
    bare = await websockets.connect(
        live.conn.url, max_size=None, compression=None, ping_interval=None
    )
    ids = itertools.count(1)

    async def ours() -> None:
        await live.conn.send("script.evaluate", params)

    async def bare_call(method: str, body: dict[str, Any]) -> None:
        ident = next(ids)
        await bare.send(json.dumps({"id": ident, "method": method, "params": body}))
        while json.loads(await bare.recv()).get("id") != ident:
            pass  # an event: the bare socket subscribes to none, but be safe

    calls_by_name: dict[str, Callable[[], Awaitable[None]]] = {
        "ours": ours,
        "bare": lambda: bare_call("script.evaluate", params),
        "relay": lambda: bare_call("session.status", {}),
    }
    took: dict[str, list[float]] = {name: [] for name in calls_by_name}
    try:
        for call in range(calls + 5):
            order = list(calls_by_name.items())
            for name, fn in order if call % 2 else reversed(order):
                start = time.perf_counter()
                await fn()
                if call >= 5:
                    took[name].append(ms(start))
    finally:
        await bare.close()
    return figures(
        took["ours"],
        bare_p50_ms=statistics.median(took["bare"]),
        relay_p50_ms=statistics.median(took["relay"]),
    )


async def journal_overhead(
    make_service: Callable[..., Service],
    who: Principal,
    pages: tuple[str, str],
    runs: int,
    data_dir: Path,
) -> dict:
    """The journal's cost on ``Service.navigate``: on vs off when the service has the
    switch, else estimated from the records a navigate would write (see module doc)."""
    samples = max(4 * runs, 20)
    if JOURNAL_SWITCH in Settings.model_fields:
        return await _switched(make_service, who, pages, samples)
    return await _estimated(make_service(), who, pages, samples, data_dir)


async def _switched(
    make_service: Callable[..., Service], who: Principal, pages: tuple[str, str], samples: int
) -> dict:
    on, off = make_service(**{JOURNAL_SWITCH: True}), make_service(**{JOURNAL_SWITCH: False})
    times: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for service in (on, off):
            await service.open_session(who, key="journal")
        for i in range(samples + 2):
            order = [("on", on), ("off", off)]
            for name, service in order if i % 2 == 0 else reversed(order):
                start = time.perf_counter()
                await service.navigate(who, "journal", pages[i % 2])
                if i >= 2:
                    times[name].append(ms(start))
    finally:
        for service in (on, off):
            await end_service(service)
    p_on, p_off = statistics.median(times["on"]), statistics.median(times["off"])
    return {
        "how": "switched",
        "navigate_on_p50_ms": p_on,
        "navigate_off_p50_ms": p_off,
        "overhead": (p_on - p_off) / p_off,
        "n": samples,
    }


async def _estimated(
    service: Service, who: Principal, pages: tuple[str, str], samples: int, data_dir: Path
) -> dict:
    journal = Journal(open_backend(f"file://{data_dir / 'journal-bench'}"))
    key = JournalKey(who.tenant, "journal")
    nav: list[float] = []
    writes: list[float] = []
    head: str | None = None
    try:
        await service.open_session(who, key="journal")
        for i in range(samples + 2):
            start = time.perf_counter()
            begin = records.begin(
                "navigate", {"url": pages[i % 2]}, parent=head, call=secrets.token_hex(16)
            )
            await journal.write(key, begin)
            done = records.finish(begin, "ok", parent=begin.id, pages=[pages[i % 2]])
            await journal.write(key, done)
            head = done.id
            wrote = ms(start)
            start = time.perf_counter()
            await service.navigate(who, "journal", pages[i % 2])
            if i >= 2:
                nav.append(ms(start))
                writes.append(wrote)
        await service.delete_session(who, "journal")
    finally:
        await journal.aclose()
        await end_service(service)
    p_nav, p_writes = statistics.median(nav), statistics.median(writes)
    return {
        "how": "estimated: the service does not journal yet (no SITEKEEP_JOURNAL switch); "
        "begin + finish Journal.write (file, fsync) beside Service.navigate",
        "navigate_p50_ms": p_nav,
        "journal_writes_p50_ms": p_writes,
        "overhead": p_writes / p_nav,
        "n": samples,
    }


async def end_service(service: Service) -> None:
    """Close the service's browsers and its embedded driver."""
    await service.browsers.close_all()
    await service.aclose()
    service.browsers.stop_local_drivers()
