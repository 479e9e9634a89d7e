"""sitekeep vs Playwright: saving and restoring site data on the same Chromium.

What is measured (medians of ``--runs`` runs per size, after one discarded warm-up run;
sitekeep and Playwright alternate run by run in one process, so machine noise hits both):

* **save** — N origins ``http://o{i}.example.test:<port>`` (i < N), each holding 10
  localStorage keys (30-character dummy values) and 3 cookies set by the fixture server:
  ``h{i}`` httpOnly, ``p{i}`` persistent (Max-Age), and from o0 ``shared``
  (``Domain=example.test``; the other origins set a host-only session cookie ``s{i}``
  instead), so the jar holds 3·N cookies. Both tools visit the same pages in the same
  order (every origin's three ``/__fixture/cookie`` pages, then its ``/__fixture/ls``
  page; the last origin's page stays open). sitekeep: ``Sessions.save_site_data`` on that
  session's browser (reads, composes, seals and stores the snapshot). Playwright:
  ``context.storage_state()`` on one context with one page.
* **save full=True** — ``save_site_data(..., full=True)``: every origin read through the
  spare tab, ignoring the copies captured on leave. Same Playwright column.
* **restore + land** — sitekeep: a browser from the warm pool (``service.parts.browsers.start``,
  not timed; the pool holds one started, never-used browser, as ``sitekeep serve`` keeps
  by default; after each sitekeep run, untimed, the pool refills and its new browser
  idles for ``POOL_IDLE`` = 1 s, as between a user's opens), then ``restore(live,
  snapshot, o0/__fixture/page?title=landed)``. Playwright: on an already-launched browser,
  ``new_context(storage_state=state)`` + ``new_page()`` + ``goto(land)``. Each run is
  checked after the clock stops: title ``landed``, ``localStorage.length == 10`` on o0,
  3·N cookies in the jar.
* **restore + land, cold browser** — the same into a browser started just before (no
  pool): a Chromium in its first second restores about a third slower.
* **open_session** — the whole reopen. sitekeep: ``open_session`` on a session whose
  browser was closed, with a saved snapshot (a warm browser from the pool + restore +
  land). Playwright: ``chromium.launch`` + ``new_context(storage_state)`` + ``new_page``
  + ``goto``. Same checks.

Both browsers are ``/usr/bin/chromium``, headless, with the same flags and host rules
(sitekeep adds its own defaults, e.g. ``--window-size``); Playwright is never installed
with ``playwright install``. Raw per-run values go to ``bench/results/`` (gitignored).

Run::

    .venv/bin/python bench/save_restore.py [--runs 7] [--sizes 1,5,20,50] [--phases]

``--phases`` adds, per size, one traced sitekeep run of each operation and prints where
the time goes (each engine step and every BiDi command: calls, summed and wall time).

Firefox columns: the same work by sitekeep on Debian's Firefox ESR (through its own
geckodriver; no pool, so restore is into a browser started just before). Playwright cannot
drive Debian's Firefox (it needs its own patched build, and ``playwright install`` is not
available), so those ratios are against Playwright on Chromium.

Single figures, after the sizes (``--runs`` each, medians):

* **open_session, pool, no site data** — ``open_session`` of a new session (nothing to
  restore) with a pooled browser that idled ``POOL_IDLE``; Chromium, and Firefox from a
  Firefox pool of one (``warm_browsers`` firefox:1).
* **BiDi round trip** — ``script.evaluate("1")`` on sitekeep's socket, 50 calls, p50;
  beside it, alternating call by call on a second socket to the same session, a bare
  ``websockets`` client doing the same call (``bare_p50_ms``, the floor: what the driver
  and browser cost) and ``session.status`` (``relay_p50_ms``: the socket and the driver
  alone).
* **journal overhead on a navigate** — ``Sessions.navigate`` on two sessions of one
  service, one journaled (files, fsync) and one through a journal backend that keeps
  nothing (``singles.NoJournal``, bench only), alternating; the sessions swap roles halfway.

``--engines chromedriver,mapper`` runs the whole bench once per local Chromium engine
(``SITEKEEP_CHROMIUM_BIDI``; the second without Firefox columns, which it does not
change), one after the other in one process, then prints every sitekeep Chromium figure
of both side by side with each run's load — consecutive runs, so load still moves them:
repeat with the order swapped.

Every target of issue #15 is printed with its verdict (``bench/targets.py``); the run's
summary goes into the raw JSON and, with ``--baseline``, to
``bench/baseline/<commit>.json`` for ``bench/compare.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from playwright.async_api import Browser, Playwright, async_playwright  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import singles  # noqa: E402
import sitekeep.browser.manager as manager_mod  # noqa: E402
import sitekeep.browser.snapshot as snapshot_mod  # noqa: E402
import sitekeep.seam.browsers as seam_browsers  # noqa: E402
import targets  # noqa: E402
from fixtures.sites import Sites, start_sites  # noqa: E402
from sitekeep import sitedata  # noqa: E402
from sitekeep.args import OpenBody, SaveBody  # noqa: E402
from sitekeep.browser import docs as docs_mod  # noqa: E402
from sitekeep.browser import restore as restore_mod  # noqa: E402
from sitekeep.browser import save as save_mod  # noqa: E402
from sitekeep.browser.bidi import BidiConnection  # noqa: E402
from sitekeep.browser.live import LiveBrowser  # noqa: E402
from sitekeep.browser.manager import BrowserManager  # noqa: E402
from sitekeep.browser.spare import SpareResponder  # noqa: E402
from sitekeep.browser.webdriver import CHROMIUM_ARGS  # noqa: E402
from sitekeep.config import Settings  # noqa: E402
from sitekeep.model import Principal  # noqa: E402
from sitekeep.seam.journaling import CallJournal  # noqa: E402
from sitekeep.seam.records import Records  # noqa: E402
from sitekeep.service import Service  # noqa: E402
from sitekeep.service.sessions import Sessions  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    *(arg for arg in CHROMIUM_ARGS if arg != "--headless"),  # Playwright adds its own
    "--host-resolver-rules=MAP *.example.test 127.0.0.1",
]
WHO = Principal("bench", "bench")
POOL_IDLE = 1.0
"""Seconds a pooled browser idles before it is taken (opens are seconds apart)."""
KEYS_PER_ORIGIN = 10
OPS = frozenset({"save", "restore", "cold", "open"})
"""What ``--only`` can pick: save (both kinds), restore + land pooled, cold, open_session."""

console = Console(width=160)

FIREFOX = {
    "browser": "firefox",
    "firefox_prefs": {"network.dns.forceResolve": "127.0.0.1"},
    "warm_browsers": {},
}
"""Settings that turn :func:`bench_settings` into the Firefox service (test hosts mapped
to loopback by preference, no pool)."""


def bench_settings(data_dir: Path, **overrides: Any) -> Settings:
    """The benches' service settings: local Chromium with :data:`FLAGS`, the memory
    session store, files under ``data_dir``; ``overrides`` (e.g. ``**FIREFOX``) on top."""
    base = {"browser_args": tuple(FLAGS), "session_store": "memory://"}
    return Settings(data_dir=data_dir, **{**base, **overrides})


# -- the workload ---------------------------------------------------------------------------


def origin(sites: Sites, i: int) -> str:
    return f"http://o{i}.example.test:{sites.port}"


def dummy(label: str) -> str:
    return f"dummy-{label}-".ljust(30, "x")


def setup_pages(sites: Sites, n: int) -> list[str]:
    """Every page both tools visit, in order: per origin 3 cookie pages, then its LS page."""
    urls: list[str] = []
    for i in range(n):
        base = origin(sites, i)
        third = (
            ("shared", "Domain=example.test; Path=/; Max-Age=86400")
            if i == 0
            else (f"s{i}", "Path=/")
        )
        for name, attrs in (
            (f"h{i}", "HttpOnly; Path=/"),
            (f"p{i}", "Path=/; Max-Age=86400"),
            third,
        ):
            query = urlencode({"name": name, "value": dummy(f"c{i}-{name}"), "attrs": attrs})
            urls.append(f"{base}/__fixture/cookie?{query}")
        pairs = [(f"k{k}", dummy(f"o{i}-k{k}")) for k in range(KEYS_PER_ORIGIN)]
        urls.append(f"{base}/__fixture/ls?{urlencode(pairs)}")
    return urls


def land_url(sites: Sites) -> str:
    return f"{origin(sites, 0)}/__fixture/page?title=landed"


def check(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(f"verification failed: {what}")


# -- results --------------------------------------------------------------------------------


@dataclass
class Series:
    """Per-run wall times (ms) of one operation at one size, for both tools."""

    sitekeep: list[float] = field(default_factory=list)
    playwright: list[float] = field(default_factory=list)
    firefox: list[float] = field(default_factory=list)
    """sitekeep on Firefox ESR (Playwright cannot drive Debian's Firefox: it needs its own
    patched build), same pages, same checks."""
    warmup: dict[str, float] = field(default_factory=dict)
    detail: dict[str, list[Any]] = field(default_factory=dict)

    def note(self, name: str, value: Any) -> None:
        self.detail.setdefault(name, []).append(value)


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


async def interleave(
    runs: int,
    series: Series,
    sk: Callable[[], Awaitable[float]],
    pw: Callable[[], Awaitable[float]],
) -> None:
    """One warm-up of each, then ``runs`` of each, alternating which goes first."""
    series.warmup = {"sitekeep": await sk(), "playwright": await pw()}
    for r in range(runs):
        pair = ((sk, series.sitekeep), (pw, series.playwright))
        for fn, out in pair if r % 2 == 0 else reversed(pair):
            out.append(await fn())


# -- one size -------------------------------------------------------------------------------


@dataclass
class Bench:
    sites: Sites
    service: Service
    pw: Playwright
    pw_browser: Browser
    runs: int
    firefox: Service | None = None
    tracer: Tracer | None = None
    only: frozenset[str] = OPS
    """The operations timed (``--only``); the others run once, untimed, where needed."""

    def clock(self) -> float:
        """Start of a sitekeep timed part (marks the traced window)."""
        now = time.perf_counter()
        if self.tracer is not None:
            self.tracer.begin = now
        return now

    def lap(self, start: float) -> float:
        """End of a sitekeep timed part: milliseconds since ``start``."""
        now = time.perf_counter()
        if self.tracer is not None:
            self.tracer.end = now
        return (now - start) * 1000

    def pw_launch(self) -> Awaitable[Browser]:
        return self.pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)

    async def settle(self) -> None:
        """Untimed, after each sitekeep run: let the pool refill and its new browser idle
        for a second, as it does between a user's opens, before the next run of either
        tool — so the refill never runs beside a timed Playwright run either."""
        await self.service.parts.browsers.pool_ready()
        await asyncio.sleep(POOL_IDLE)

    async def size(self, n: int, phases: bool) -> dict[str, Series]:
        key = f"n{n}"
        pages = setup_pages(self.sites, n)
        land = land_url(self.sites)
        service = self.service
        settle = self.settle

        # The same pages, in the same order, in both tools.
        await service.sessions.open(WHO, OpenBody(key=key))
        for url in pages:
            await service.sessions.navigate(WHO, key, url)
        context = await self.pw_browser.new_context()
        page = await context.new_page()
        for url in pages:
            await page.goto(url)
        check(await page.title() == f"LS o{n - 1}.example.test {KEYS_PER_ORIGIN}", "setup page")

        out: dict[str, Series] = {}

        async def sk_save(full: bool, series: Series) -> float:
            start = self.clock()
            result = await service.sessions.save_site_data(WHO, key, SaveBody(full=full))
            took = self.lap(start)
            saved = result["saved"]
            check(saved["cookies"] == 3 * n, f"sitekeep saved {saved['cookies']} cookies")
            check(len(saved["sites"]) == n and not saved["skipped"], "sitekeep saved sites")
            series.note("spare_reads", saved.get("spare_reads"))
            return took

        state: dict[str, Any] = {}

        async def pw_save() -> float:
            start = time.perf_counter()
            got = await context.storage_state()
            took = ms(start)
            check(len(got["cookies"]) == 3 * n, f"Playwright saved {len(got['cookies'])} cookies")
            check(
                len(got["origins"]) == n
                and all(len(o["localStorage"]) == KEYS_PER_ORIGIN for o in got["origins"]),
                "Playwright saved origins",
            )
            state.clear()
            state.update(got)
            return took

        if "save" in self.only:
            full = out["save full=True"] = Series()
            await interleave(self.runs, full, lambda: sk_save(True, full), pw_save)
            fast = out["save"] = Series()
            await interleave(self.runs, fast, lambda: sk_save(False, fast), pw_save)
            if any(fast.detail.get("spare_reads") or ()):
                await self.why_spare(key, fast)
        else:  # one untimed save of each, for the snapshot and the state restored
            await sk_save(False, Series())
            await pw_save()
        if phases and "save" in self.only:
            await self.trace(f"save full=True, N={n}", lambda: sk_save(True, Series()))
            await self.trace(f"save, N={n}", lambda: sk_save(False, Series()))
        await context.close()
        await service.sessions.close(WHO, key)
        snapshot = await service.parts.seam.records.load_snapshot(WHO.tenant, key)
        assert snapshot is not None

        async def sk_restore_into(pooled: bool) -> float:
            live = await service.parts.browsers.start("chromium", pooled=pooled)
            try:
                start = self.clock()
                report = await restore_mod.restore(live, snapshot, land, now=time.time())
                took = self.lap(start)
                check(not report.skipped, f"sitekeep restore skipped {report.skipped}")
                await self.verify_sitekeep(live, n)
            finally:
                await service.parts.browsers.close(live.ref)
                service.parts.browsers.replenish()  # as the service does once an open is done
                await settle()
            return took

        async def pw_restore_into(series: Series) -> float:
            start = time.perf_counter()
            ctx = await self.pw_browser.new_context(storage_state=state)  # type: ignore[arg-type]
            t_ctx = ms(start)
            page = await ctx.new_page()
            t_page = ms(start)
            await page.goto(land)
            took = ms(start)
            series.note("pw new_context", t_ctx)
            series.note("pw new_page", t_page - t_ctx)
            series.note("pw goto", took - t_page)
            await self.verify_playwright(ctx, page, n)
            await ctx.close()
            return took

        if "restore" in self.only:
            restore = out["restore + land"] = Series()
            await interleave(
                self.runs, restore, lambda: sk_restore_into(True), lambda: pw_restore_into(restore)
            )
        if "cold" in self.only:
            cold = out["restore + land, cold browser"] = Series()
            await interleave(
                self.runs, cold, lambda: sk_restore_into(False), lambda: pw_restore_into(cold)
            )
        if phases and "restore" in self.only:
            await self.trace(f"restore + land, N={n}", lambda: sk_restore_into(True))
        if phases and "cold" in self.only:
            await self.trace(f"restore + land, cold, N={n}", lambda: sk_restore_into(False))

        opened = out["open_session"] = Series()

        async def sk_open() -> float:
            await service.sessions.close(WHO, key)
            start = self.clock()
            result = await service.sessions.open(WHO, OpenBody(key=key, url=land))
            took = self.lap(start)
            check(result["title"] == "landed", f"sitekeep landed on {result['title']!r}")
            check(not result["site_data"]["skipped"], "sitekeep open_session skipped")
            record = await service.parts.seam.records.load(WHO.tenant, key)
            assert record is not None and record.browser is not None
            live = await service.parts.browsers.attach(record.browser)
            assert live is not None
            await self.verify_sitekeep(live, n)
            await settle()
            return took

        async def pw_open() -> float:
            start = time.perf_counter()
            browser = await self.pw_launch()
            opened.note("pw launch", ms(start))
            try:
                ctx = await browser.new_context(storage_state=state)  # type: ignore[arg-type]
                page = await ctx.new_page()
                await page.goto(land)
                took = ms(start)
                await self.verify_playwright(ctx, page, n)
            finally:
                await browser.close()
            return took

        if "open" in self.only:
            await interleave(self.runs, opened, sk_open, pw_open)
        else:
            del out["open_session"]
        if phases and "open" in self.only:
            await self.trace(f"open_session, N={n}", sk_open)
        await service.sessions.close(WHO, key)
        if self.firefox is not None:
            await self.firefox_runs(n, out, pages, land, phases)
        return out

    async def firefox_runs(
        self, n: int, out: dict[str, Series], pages: list[str], land: str, phases: bool
    ) -> None:
        """The same work by sitekeep on Firefox ESR, into each table's Firefox column."""
        service, key = self.firefox, f"ff{n}"
        assert service is not None
        await service.sessions.open(WHO, OpenBody(key=key))
        for url in pages:
            await service.sessions.navigate(WHO, key, url)

        async def save(full: bool) -> float:
            start = self.clock()
            result = await service.sessions.save_site_data(WHO, key, SaveBody(full=full))
            took = self.lap(start)
            check(result["saved"]["cookies"] == 3 * n, "Firefox saved cookies")
            check(len(result["saved"]["sites"]) == n, "Firefox saved sites")
            return took

        # Firefox is busy for a while after the last setup page loaded (a save in that
        # window took 15-48 ms against 5-7 ms after it): it idles POOL_IDLE first, as the
        # Chromium saves come long after their setup, and the two saves alternate, after
        # a warm-up of each, so neither kind alone pays for what is left of it.
        await asyncio.sleep(POOL_IDLE)
        kinds = (("save", False), ("save full=True", True))
        for _, full in kinds:
            await save(full)  # warm-up (and, without "save" in --only, the snapshot)
        for r in range(self.runs):
            for op, full in kinds if r % 2 == 0 else reversed(kinds):
                took = await save(full)
                if op in out:
                    out[op].firefox.append(took)
        if phases and "save" in out:
            await self.trace(f"Firefox save, N={n}", lambda: save(False))
        await service.sessions.close(WHO, key)
        snapshot = await service.parts.seam.records.load_snapshot(WHO.tenant, key)
        assert snapshot is not None

        async def restore_into() -> float:
            live = await service.parts.browsers.start("firefox")
            try:
                start = self.clock()
                report = await restore_mod.restore(live, snapshot, land, now=time.time())
                took = self.lap(start)
                check(not report.skipped, f"Firefox restore skipped {report.skipped}")
                await self.verify_sitekeep(live, n)
            finally:
                await service.parts.browsers.close(live.ref)
            return took

        async def open_again() -> float:
            await service.sessions.close(WHO, key)
            start = time.perf_counter()
            result = await service.sessions.open(WHO, OpenBody(key=key, url=land))
            took = ms(start)
            check(result["title"] == "landed", "Firefox open_session landed")
            return took

        for op, run in (
            ("restore + land, cold browser", restore_into),
            ("open_session", open_again),
        ):
            if op in out:
                await run()  # warm-up
                out[op].firefox.extend([await run() for _ in range(self.runs)])
        if phases and "restore + land, cold browser" in out:
            await self.trace(f"Firefox restore + land, cold, N={n}", restore_into)
        await service.sessions.close(WHO, key)

    async def why_spare(self, key: str, series: Series) -> None:
        """The fast save still read origins through the spare tab: one more (untimed) save
        with a spy on the spare loop names them, and what the leave tracker held for each."""
        found: list[dict[str, Any]] = []
        original = save_mod._spare_read

        async def spy(browser: LiveBrowser, origins: Any, deadline: float) -> Any:
            tracker = browser.tracker
            for o in origins:
                dead = [c for c, doc in tracker._docs.items() if doc.origin == o]
                found.append(
                    {
                        "origin": o,
                        "tainted": o in tracker._tainted,
                        "has_copy": o in tracker._copies,
                        "live_docs_in_events": len(dead),
                        "tracker_complete": tracker.complete,
                    }
                )
            return await original(browser, origins, deadline)

        save_mod._spare_read = spy  # type: ignore[assignment]
        try:
            await self.service.sessions.save_site_data(WHO, key, SaveBody())
        finally:
            save_mod._spare_read = original  # type: ignore[assignment]
        series.detail["why_spare"] = found
        for row in found:
            console.print(f"[yellow]fast save read through the spare tab:[/yellow] {row}")

    @staticmethod
    async def verify_sitekeep(live: LiveBrowser, n: int) -> None:
        title = (await live.page_info()).title
        length = await live.evaluate_json("() => JSON.stringify(localStorage.length)")
        jar = await docs_mod.read_cookies(live)
        check(title == "landed", f"sitekeep title {title!r}")
        check(length == KEYS_PER_ORIGIN, f"sitekeep localStorage.length {length}")
        check(len(jar) == 3 * n, f"sitekeep jar holds {len(jar)} cookies")

    @staticmethod
    async def verify_playwright(ctx: Any, page: Any, n: int) -> None:
        title = await page.title()
        length = await page.evaluate("localStorage.length")
        jar = await ctx.cookies()
        check(title == "landed", f"Playwright title {title!r}")
        check(length == KEYS_PER_ORIGIN, f"Playwright localStorage.length {length}")
        check(len(jar) == 3 * n, f"Playwright jar holds {len(jar)} cookies")

    async def trace(self, label: str, run: Callable[[], Awaitable[float]]) -> None:
        self.tracer = tracer = Tracer()
        try:
            with tracer.active():
                took = await run()
        finally:
            self.tracer = None
        tracer.print(label, took)


# -- phase tracing (monkeypatched wrappers; src is untouched) -------------------------------


@dataclass
class Tracer:
    """Records every BiDi command and the engine/service steps of one run."""

    events: list[tuple[str, float, float]] = field(default_factory=list)
    """(label, start, duration), perf_counter seconds."""
    origin: float = field(default_factory=time.perf_counter)
    begin: float | None = None
    """Where the timed part starts and ends (set by the run through :meth:`Bench.clock`)."""
    end: float | None = None

    def _record(self, label: str, start: float) -> None:
        self.events.append((label, start, time.perf_counter() - start))

    def _wrap_async(self, fn: Any, label: str) -> Any:
        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self._record(label, start)

        return wrapper

    def _wrap_sync(self, fn: Any, label: str) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._record(label, start)

        return wrapper

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        tracer = self
        orig_send = BidiConnection.send

        async def send(conn: BidiConnection, method: str, params: Any = None, **kw: Any) -> Any:
            start = time.perf_counter()
            try:
                return await orig_send(conn, method, params, **kw)
            finally:
                tracer._record(f"bidi {method}", start)

        steps_async: list[tuple[Any, str, str]] = [
            (restore_mod, "_set_cookies", "restore: cookies (setCookie, pipelined)"),
            (restore_mod, "_check_cookies", "restore: jar check (getCookies)"),
            (restore_mod._Restore, "write_storage", "restore: storage (spare pages in main tab)"),
            (restore_mod._Restore, "write_site", "restore:   one site (spare nav + inline writes)"),
            (restore_mod._Restore, "land", "restore: land"),
            (restore_mod._Restore, "land_with_preload", "restore: land with a one-shot preload"),
            (save_mod, "_read_sites", "save:   spare tab reads by site"),
            (save_mod, "read_cookies", "save: read_cookies (getCookies)"),
            (save_mod, "live_reads", "save: live reads (getTree + READ per context)"),
            (save_mod, "_spare_read", "save: spare tab loop (create..close)"),
            (save_mod, "_visit", "save:   spare visit (nav + getTree + READ)"),
            (snapshot_mod, "save_read", "save: save_read"),
            (seam_browsers, "restore", "open: restore"),
            (LiveBrowser, "replace", "LiveBrowser.replace (location.replace + load)"),
            (LiveBrowser, "page_info", "LiveBrowser.page_info"),
            (SpareResponder, "__aenter__", "spare: enter (subscribe + addIntercept)"),
            (SpareResponder, "_teardown", "spare: exit (removeIntercept + unsubscribe)"),
            (Records, "load", "seam: load record"),
            (CallJournal, "write", "journal: append (fsync)"),
            (Records, "load_snapshot", "seam: load + open snapshot"),
            (Records, "put_snapshot", "seam: seal + store snapshot"),
            (Records, "put", "seam: store record"),
            (Sessions, "_reusable", "service: attach old browser"),
            (Sessions, "close", "service: close_browser"),
            (BrowserManager, "start", "browser start (session + BiDi wiring)"),
            (BrowserManager, "endpoint", "browser start:   chromedriver endpoint"),
            (BrowserManager, "_open_live", "browser start:   BiDi connect + subscribe + preload"),
        ]
        steps_sync: list[tuple[Any, str, str]] = [
            (sitedata, "compose", "service: compose snapshot"),
            (manager_mod, "start_session", "browser start:   WebDriver new session"),
        ]
        saved: list[tuple[Any, str, Any]] = []
        try:
            BidiConnection.send = send  # type: ignore[method-assign]
            for obj, name, label in steps_async:
                saved.append((obj, name, getattr(obj, name)))
                setattr(obj, name, self._wrap_async(getattr(obj, name), label))
            for obj, name, label in steps_sync:
                saved.append((obj, name, getattr(obj, name)))
                setattr(obj, name, self._wrap_sync(getattr(obj, name), label))
            self.origin = time.perf_counter()
            yield
        finally:
            BidiConnection.send = orig_send  # type: ignore[method-assign]
            for obj, name, orig in reversed(saved):
                setattr(obj, name, orig)

    def print(self, label: str, took: float) -> None:
        """A timeline of the timed part: each step nested in the one that encloses it;
        pipelined BiDi commands of one method are one row (×k: wall time, then their sum)."""
        begin, end = self.begin or self.origin, self.end or float("inf")
        events = sorted(
            ((n, s, d) for n, s, d in self.events if begin <= s and s + d <= end),
            key=lambda e: (e[1], -e[2]),
        )
        rows: list[list[Any]] = []  # [name, start, end, count, sum]
        for name, start, dur in events:
            last = rows[-1] if rows else None
            if last and name.startswith("bidi ") and last[0] == name and start < last[2]:
                last[2] = max(last[2], start + dur)
                last[3] += 1
                last[4] += dur
            else:
                rows.append([name, start, start + dur, 1, dur])
        table = Table(title=f"phases: {label} — timed part {took:.0f} ms")
        table.add_column("at ms", justify="right")
        table.add_column("took ms", justify="right")
        table.add_column("step / BiDi command")
        enclosing: list[float] = []  # ends of the steps still open
        for name, start, stop, count, total in rows:
            enclosing = [e for e in enclosing if e > start]
            depth = sum(1 for e in enclosing if e >= stop)  # siblings run side by side
            enclosing.append(stop)
            extra = f" ×{count} (sum {total * 1000:.0f} ms)" if count > 1 else ""
            table.add_row(
                f"{(start - begin) * 1000:.1f}",
                f"{(stop - start) * 1000:.1f}",
                "  " * depth + name + extra,
            )
        console.print(table)


# -- report ---------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_tables(results: dict[int, dict[str, Series]]) -> None:
    operations = list(next(iter(results.values())).keys())
    titles = {
        "save": "save: sitekeep save_site_data vs Playwright context.storage_state()",
        "save full=True": "save full=True (every origin via the spare tab) vs storage_state()",
        "restore + land": "restore + land into a warm browser (from the pool)",
        "restore + land, cold browser": "restore + land into a browser started just before",
        "open_session": "open_session (pooled browser + restore + land) vs launch + restore",
    }
    for op in (
        "save",
        "save full=True",
        "restore + land",
        "restore + land, cold browser",
        "open_session",
    ):
        if op not in operations:
            continue
        table = Table(title=titles[op])
        columns = ("N", "sitekeep median ms", "Playwright median ms", "ratio sk/pw", "n")
        columns += ("sitekeep Firefox median ms", "ratio Firefox/pw")
        for col in columns:
            table.add_column(col, justify="right")
        for n, by_op in results.items():
            s = by_op[op]
            sk, pw = median(s.sitekeep), median(s.playwright)
            ratio = sk / pw
            ff = f"{median(s.firefox):.0f}" if s.firefox else "—"
            ff_ratio = f"{median(s.firefox) / pw:.2f}" if s.firefox else "—"
            table.add_row(
                str(n), f"{sk:.0f}", f"{pw:.0f}", f"{ratio:.2f}", str(len(s.sitekeep)), ff, ff_ratio
            )
        console.print(table)
        for n, by_op in results.items():
            parts = [
                f"{name[3:]} {median(values):.0f}"
                for name, values in by_op[op].detail.items()
                if name.startswith("pw ")
            ]
            if parts:
                console.print(f"  Playwright N={n} medians ms: " + ", ".join(parts))


async def measure_singles(
    settings: Settings, service: Service, sites: Sites, runs: int, no_firefox: bool
) -> dict[str, dict[str, Any]]:
    """The figures of issue #15's table that are not per size (``bench/singles.py``)."""
    out: dict[str, dict[str, Any]] = {}
    console.print("[dim]open_session from the pool, no site data; BiDi round trip…[/dim]")
    kinds: list[tuple[str, Service]] = [("chromium", service)]
    if not no_firefox:
        ff_pool = Service.from_settings(
            settings.model_copy(
                update={
                    "data_dir": settings.data_dir / "firefox-pool",
                    "browser": "firefox",
                    "firefox_prefs": {"network.dns.forceResolve": "127.0.0.1"},
                    "warm_browsers": {"firefox": 1},
                }
            )
        )
        await ff_pool.parts.browsers.warm_up()
        kinds.append(("firefox", ff_pool))
    try:
        for kind, svc in kinds:
            out[f"open_session, pool, no site data, {kind}"] = await singles.open_empty(
                svc, WHO, kind, runs, POOL_IDLE
            )
            await svc.sessions.open(WHO, OpenBody(key="rt", browser=kind, url=land_url(sites)))
            live = await svc.views.live_browser(WHO, "rt")
            assert live is not None
            out[f"BiDi round trip, {kind}"] = await singles.round_trips(live)
            await svc.sessions.delete(WHO, "rt")
    finally:
        for _kind, svc in kinds[1:]:
            await singles.end_service(svc)
    console.print("[dim]journal overhead on a navigate…[/dim]")

    pages = (land_url(sites), f"{origin(sites, 0)}/__fixture/page?title=other")
    out["journal overhead on a navigate"] = await singles.journal_overhead(
        settings, WHO, pages, runs
    )
    return out


def print_singles(singles_: dict[str, dict[str, Any]]) -> None:
    table = Table(title="single figures (ms, median of the runs)")
    for col in ("measure", "p50 ms", "n", "detail"):
        table.add_column(col, justify="left" if col in ("measure", "detail") else "right")
    for name, fig in singles_.items():
        p50 = fig.get("p50_ms")
        detail = ", ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
            for k, v in fig.items()
            if k not in ("p50_ms", "n", "values_ms")
        )
        table.add_row(name, f"{p50:.1f}" if p50 is not None else "—", str(fig.get("n")), detail)
    console.print(table)


LOAD_SAMPLES: list[float] = []
"""The 1-minute load average, sampled every 10 s through the run (ratios move with it:
on a busy machine Playwright's multi-step restores slow down more than sitekeep's)."""


async def sample_load(every: float = 10.0) -> None:
    while True:
        LOAD_SAMPLES.append(os.getloadavg()[0])
        await asyncio.sleep(every)


def git_commit() -> tuple[str, bool]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short=12", "HEAD") or "unknown", bool(dirty)


async def main(
    runs: int,
    sizes: list[int],
    phases: bool,
    no_firefox: bool = False,
    baseline: bool = False,
    only: frozenset[str] = OPS,
    no_singles: bool = False,
    engine: Engine = "chromedriver",
) -> dict[str, Any]:
    """One whole run with local Chromium on ``engine`` (``Settings.chromium_bidi``); its
    summary (``targets.summarise`` plus load, commit, engine)."""
    logging.getLogger("selenium").setLevel(logging.WARNING)
    console.print(f"[bold]Chromium engine: {engine}[/bold] (load {_loadavg()})")
    sites = start_sites()
    tmp = tempfile.TemporaryDirectory(prefix="sitekeep-bench-")
    settings = bench_settings(Path(tmp.name), chromium_bidi=engine)
    service = Service.from_settings(settings)  # warm_browsers=1, as `sitekeep serve` runs
    await service.parts.browsers.warm_up()
    ff_settings = bench_settings(Path(tmp.name) / "firefox", chromium_bidi=engine, **FIREFOX)
    firefox = Service.from_settings(ff_settings) if not no_firefox else None
    results: dict[int, dict[str, Series]] = {}
    started = time.time()
    loads = asyncio.get_running_loop().create_task(sample_load())
    commit, dirty = git_commit()  # the code measured: taken before the run
    browser_version = "?"
    try:
        async with async_playwright() as pw:
            pw_browser = await pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=FLAGS
            )
            bench = Bench(sites, service, pw, pw_browser, runs, firefox, only=only)
            for n in sizes:
                console.print(f"[dim]N={n}: {n * 4} setup pages per tool, {runs} runs…[/dim]")
                results[n] = await bench.size(n, phases)
            browser_version = pw_browser.version
            await pw_browser.close()
        if firefox is not None:  # its browsers are closed: nothing of it runs beside these
            await firefox.parts.browsers.close_all()
        figures = (
            {} if no_singles else await measure_singles(settings, service, sites, runs, no_firefox)
        )
    finally:
        await singles.end_service(service)
        if firefox is not None:
            await singles.end_service(firefox)
        sites.stop()
        tmp.cleanup()
    if results:
        print_tables(results)
    print_singles(figures)
    summary = targets.summarise(results, figures)
    loads.cancel()
    summary |= {
        "load_1min": {
            "min": min(LOAD_SAMPLES),
            "median": statistics.median(LOAD_SAMPLES),
            "max": max(LOAD_SAMPLES),
            "n": len(LOAD_SAMPLES),
        },
        "commit": commit,
        "dirty": dirty,
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
        "sizes": sizes,
        "chromium": browser_version,
        "engine": engine,
    }
    load = summary["load_1min"]
    console.print(
        f"load average (1 min) through the run: median {load['median']:.2f}, "
        f"{load['min']:.2f}–{load['max']:.2f} ({load['n']} samples)"
    )
    console.print(f"targets of issue #15 (commit {commit}{' + changes' if dirty else ''}):")
    for verdict in summary["targets"]:
        console.print(targets.verdict_line(verdict))
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"save_restore-{time.strftime('%Y%m%d-%H%M%S')}-{engine}.json"
    payload = {
        "started": started,
        "runs": runs,
        "sizes": sizes,
        "chromium": browser_version,
        "engine": engine,
        "flags": FLAGS,
        "summary": summary,
        "singles": figures,
        "results": {
            str(n): {
                op: {
                    "sitekeep_ms": s.sitekeep,
                    "playwright_ms": s.playwright,
                    "firefox_ms": s.firefox,
                    "warmup_ms": s.warmup,
                    "detail": s.detail,
                }
                for op, s in by_op.items()
            }
            for n, by_op in results.items()
        },
    }
    path.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    console.print(f"raw values: {path.relative_to(ROOT)}")
    if baseline:
        kept = ROOT / "bench" / "baseline" / f"{commit}.json"
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
        console.print(f"baseline kept: {kept.relative_to(ROOT)}")
    return summary


Engine = Literal["chromedriver", "mapper"]
ENGINES: tuple[Engine, ...] = ("chromedriver", "mapper")


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def print_engines(summaries: dict[str, dict[str, Any]]) -> None:
    """Every sitekeep Chromium figure of each engine's run side by side (ms; in brackets
    the ratio to Playwright of the same run), then each engine's load through its run."""
    names = list(summaries)
    table = Table(title="Chromium engines, consecutive runs (sitekeep ms, ×Playwright)")
    table.add_column("measure")
    for name in names:
        table.add_column(name, justify="right")
    if len(names) == 2:
        table.add_column(f"{names[1]}/{names[0]}", justify="right")
    first = summaries[names[0]]
    for op, rows in first["measures"].items():
        for n in sorted(rows, key=int):
            cells = [summaries[e]["measures"].get(op, {}).get(n) for e in names]
            shown = [f"{c['sitekeep_ms']:.1f} ({c['ratio']:.2f}×)" if c else "–" for c in cells]
            if len(names) == 2 and all(cells):
                shown.append(f"{cells[1]['sitekeep_ms'] / cells[0]['sitekeep_ms']:.2f}")  # type: ignore[index]
            table.add_row(f"{op} N={n}", *shown)
    for single, fig in first["singles"].items():
        if "firefox" in single:
            continue
        for column in ("p50_ms", "bare_p50_ms", "relay_p50_ms"):
            if column not in fig:
                continue
            values = [summaries[e]["singles"].get(single, {}).get(column) for e in names]
            shown = [f"{v:.2f}" if v is not None else "–" for v in values]
            if len(names) == 2 and None not in values:
                shown.append(f"{values[1] / values[0]:.2f}")  # type: ignore[operator]
            table.add_row(f"{single} {column}", *shown)
    console.print(table)
    for name in names:
        load = summaries[name]["load_1min"]
        console.print(
            f"{name}: load (1 min) median {load['median']:.2f}, {load['min']:.2f}–{load['max']:.2f}"
        )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sizes", default="1,5,20,50")
    parser.add_argument("--phases", action="store_true", help="trace one run per operation")
    parser.add_argument("--no-firefox", action="store_true", help="skip the Firefox columns")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="also keep the run's summary as bench/baseline/<commit>.json",
    )
    parser.add_argument(
        "--only",
        default=",".join(sorted(OPS)),
        help="operations to time, of save,restore,cold,open (default: all)",
    )
    parser.add_argument("--no-singles", action="store_true", help="skip the single figures")
    parser.add_argument(
        "--engines",
        default="chromedriver",
        help="local Chromium engines to run one after another, of chromedriver,mapper "
        "(SITEKEEP_CHROMIUM_BIDI); with two, their figures side by side at the end; "
        "Firefox columns only in the first",
    )
    args = parser.parse_args()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or not set(engines) <= set(ENGINES):
        parser.error(f"--engines: of {', '.join(ENGINES)}")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    only = frozenset(o.strip() for o in args.only.split(",") if o.strip())
    if not only <= OPS:
        parser.error(f"--only: unknown operation(s) {', '.join(sorted(only - OPS))}")
    summaries: dict[str, dict[str, Any]] = {}
    for i, engine in enumerate(engines):
        summaries[engine] = asyncio.run(
            main(
                args.runs,
                sizes,
                args.phases,
                args.no_firefox or i > 0,  # Firefox does not change with the engine
                args.baseline and i == 0,
                only,
                args.no_singles,
                cast(Engine, engine),
            )
        )
    if len(summaries) > 1:
        print_engines(summaries)


if __name__ == "__main__":
    cli()
