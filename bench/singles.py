"""The single figures of ``save_restore.py`` (issue #15's table, beside the sizes):
open latency from the pool with no site data, the BiDi round trip, the journal's overhead
on a navigate. Each returns its figures as plain JSON (ms, p50 = median)."""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import websockets

from sitekeep.args import OpenBody
from sitekeep.browser.live import LiveBrowser
from sitekeep.config import Settings
from sitekeep.journal import Entry, Journal, JournalBackend, JournalKey, open_journal
from sitekeep.journal.records import MAX_RECORD
from sitekeep.model import Principal
from sitekeep.service import Service

ROUND_TRIPS = 50


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def figures(values: list[float], **extra: Any) -> dict[str, Any]:
    return {"p50_ms": statistics.median(values), "n": len(values), "values_ms": values, **extra}


async def open_empty(service: Service, who: Principal, kind: str, runs: int, idle: float) -> dict:
    """``open_session`` of a new session (no snapshot, no URL) taking a pooled browser that
    idled ``idle`` seconds; the first run is a warm-up."""
    took: list[float] = []
    for run in range(runs + 1):
        await service.parts.browsers.pool_ready()
        await asyncio.sleep(idle)
        key = f"empty-{kind}-{run}"
        start = time.perf_counter()
        await service.sessions.open(who, OpenBody(key=key, browser=kind))
        elapsed = ms(start)
        await service.sessions.delete(who, key)
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


class NoJournal:
    """A journal backend that keeps nothing: the "journal off" side of the overhead figure.

    Benchmark only — it is no backend a service may run on (no record survives, no
    compare-and-append): what it takes away is exactly what the real backend adds to a
    call (its worker-thread hops, file lock, head check, write and fsync); encoding and
    folding the records stay on both sides."""

    max_record = MAX_RECORD
    durability = "none (benchmark only)"

    def __init__(self) -> None:
        self._appended = 0

    async def append(self, key: JournalKey, line: bytes, *, record: str, parent: str | None) -> str:
        self._appended += 1
        return str(self._appended)

    async def head(self, key: JournalKey) -> str | None:
        return None

    async def entries(self, key: JournalKey, *, after: str | None, limit: int) -> list[Entry]:
        return []

    async def last(self, key: JournalKey, limit: int) -> list[Entry]:
        return []

    def source(self, key: JournalKey) -> None:
        return None

    async def keys(self, tenant: str | None = None) -> list[JournalKey]:
        return []

    async def remove(self, key: JournalKey) -> bool:
        return False

    async def aclose(self) -> None:
        return None


class Switched:
    """A journal backend that writes every stream through ``real`` except those of the
    keys in ``off``, which go to :class:`NoJournal` (benchmark only)."""

    def __init__(self, real: JournalBackend) -> None:
        self.real, self.none = real, NoJournal()
        self.off: set[str] = set()
        self.max_record, self.durability = real.max_record, real.durability

    def _to(self, key: JournalKey) -> Any:
        return self.none if key.key in self.off else self.real

    async def append(self, key: JournalKey, line: bytes, *, record: str, parent: str | None) -> str:
        return str(await self._to(key).append(key, line, record=record, parent=parent))

    async def head(self, key: JournalKey) -> str | None:
        return await self._to(key).head(key)  # type: ignore[no-any-return]

    async def entries(self, key: JournalKey, *, after: str | None, limit: int) -> list[Entry]:
        return await self._to(key).entries(key, after=after, limit=limit)  # type: ignore[no-any-return]

    async def last(self, key: JournalKey, limit: int) -> list[Entry]:
        return await self._to(key).last(key, limit)  # type: ignore[no-any-return]

    def source(self, key: JournalKey) -> Any:
        return self._to(key).source(key)

    async def keys(self, tenant: str | None = None) -> list[JournalKey]:
        return await self.real.keys(tenant)

    async def remove(self, key: JournalKey) -> bool:
        return await self.real.remove(key)

    async def aclose(self) -> None:
        await self.real.aclose()


async def journal_overhead(
    settings: Settings, who: Principal, pages: tuple[str, str], runs: int
) -> dict[str, Any]:
    """The journal's cost on ``Sessions.navigate``. One service, its journal (files, fsync,
    in ``settings.data_dir``) behind :class:`Switched`; two sessions, each in its own
    browser, one journaled and one not (:class:`NoJournal`); their navigates alternate
    (which goes first swaps each round). Halfway the two swap roles, so neither browser's
    own speed counts as journal cost; after the swap the newly journaled session's first
    call replays its journal (a conflict: its records went nowhere), so 2 rounds are
    dropped there as at the start. ``max(20·runs, 100)`` navigates each; the overhead is
    (p50 on − p50 off) / p50 off."""
    samples = max(20 * runs, 100)
    backend = Switched(open_journal(settings).backend)
    service = Service.from_settings(
        settings.model_copy(update={"warm_browsers": {}}), journal=Journal(backend)
    )
    times: dict[str, list[float]] = {"on": [], "off": []}
    keys = ("journal-a", "journal-b")
    try:
        for key in keys:
            await service.sessions.open(who, OpenBody(key=key))
        for half in range(2):
            on_key, off_key = keys if half == 0 else keys[::-1]
            backend.off = {off_key}
            for i in range(samples // 2 + 2):
                order = [("on", on_key), ("off", off_key)]
                for name, key in order if i % 2 == 0 else reversed(order):
                    start = time.perf_counter()
                    await service.sessions.navigate(who, key, pages[i % 2])
                    if i >= 2:
                        times[name].append(ms(start))
    finally:
        await end_service(service)
    p_on, p_off = statistics.median(times["on"]), statistics.median(times["off"])
    return {
        "how": f"navigate with the journal ({backend.durability}) vs without, alternating",
        "navigate_on_p50_ms": p_on,
        "navigate_off_p50_ms": p_off,
        "overhead": (p_on - p_off) / p_off,
        "n": len(times["on"]),
    }


async def end_service(service: Service) -> None:
    """Close the service's browsers and its embedded driver."""
    await service.parts.browsers.close_all()
    await service.aclose()
    service.parts.browsers.stop_local_drivers()


async def _journal_only(runs: int) -> None:
    import sys
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fixtures.sites import start_sites

    sites = start_sites()
    base = f"http://127.0.0.1:{sites.port}/__fixture/page"
    try:
        with tempfile.TemporaryDirectory(prefix="sitekeep-bench-") as tmp:
            settings = Settings(data_dir=Path(tmp), session_store="memory://")
            pages = (f"{base}?title=landed", f"{base}?title=other")
            got = await journal_overhead(settings, Principal("bench", "bench"), pages, runs)
    finally:
        sites.stop()
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in got.items()})


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="the journal overhead on a navigate, alone")
    parser.add_argument("--runs", type=int, default=10, help="navigates each: max(4·runs, 20)")
    asyncio.run(_journal_only(parser.parse_args().runs))
