"""The browsers' lifecycle and the operator's view of it (SPEC §2, §13).

The browsers are warmed up when the service starts (a pool of spare ones), reaped while
it runs — a run whose session expired, that no session owns, that idled past
``SITEKEEP_BROWSER_IDLE`` or whose browser is gone is ended, browser first, then its row
— and ended by ``sitekeep stop``. ``GET /metrics`` counts them.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

import anyio

from sitekeep import reaping
from sitekeep.errors import (
    BrowserUnavailable,
    InvalidInput,
    SessionBusy,
    SitekeepError,
    StoreUnavailable,
)
from sitekeep.metrics import CONTENT_TYPE, check_scraper
from sitekeep.model import SessionRecord
from sitekeep.service.parts import Parts
from sitekeep.stores.base import ClosedReason, Run

__all__ = ["GAUGES_EVERY", "Reaper"]

log = logging.getLogger(__name__)

GAUGES_EVERY = 5.0
"""Seconds ``/metrics`` answers the gauges it last read (sessions, live browsers): however
often the scraper asks (a leaked scrape token must be no lever), the stores are read at most
this often. The session count is the store's own (``SessionStore.count``: an index range in
a worker thread, or Redis's per-tenant index), not a list of every key (which, at 100k
sessions on Redis, took 3 s a read and, with 4 clients asking in a loop, held /healthz's p95
at 1.1 s)."""


class Reaper:
    """Warm-up, reaping, the end of every browser, and ``/metrics``."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._seam = parts.seam
        self._gauges: tuple[float, int, Counter[str]] | None = None
        """When the gauges of ``/metrics`` were read (monotonic seconds), and what."""
        self._gauges_lock = anyio.Lock()

    async def warm_up(self) -> None:
        """Start the spare browsers the settings ask for (``SITEKEEP_WARM_BROWSERS``)."""
        await self._parts.browsers.warm_up()

    async def reap(self) -> dict[str, int]:
        """One pass of the reaper (SPEC §13) over every open run of every replica: a run
        whose session expired, that no session owns any more (a replica died opening it),
        whose browser idled past ``browser_idle`` or is gone (``crashed``: its driver
        died) is ended — browser first, then the row. A session in use (its lock held) is
        left alone. First, the browsers this data dir's dead drivers left running are
        ended (``BrowserManager.end_orphans``).

        Returns:
            How many runs were closed, by reason.
        """
        await self._parts.browsers.end_orphans()  # before the runs: theirs are then gone
        counts: dict[str, int] = {}
        for run in await self._parts.stores.runs.open_runs():
            try:
                async with self._seam.records.held(run.tenant, run.session, wait=0):
                    reason = await self._reap_run(run)
            except SessionBusy:
                continue
            except StoreUnavailable as exc:
                log.warning("the reaper skipped a run: %s", exc.message)
                continue
            if reason is not None:
                counts[reason] = counts.get(reason, 0) + 1
        removed = await self._reap_journals()
        if removed:
            log.info("reaper: removed the journals of %d expired sessions", removed)
        return counts

    async def _reap_journals(self) -> int:
        """Remove the journals of sessions that expired (or never came to be): a journal
        lives exactly as long as its session's record (SPEC §8). A session in use is left
        alone."""
        records, removed = self._seam.records, 0
        for jkey in await self._parts.journal.backend.keys():
            try:
                async with records.held(jkey.tenant, jkey.key, wait=0):
                    if await records.load(jkey.tenant, jkey.key) is None:
                        await self._seam.remove_journal(jkey.tenant, jkey.key)
                        removed += 1
            except SessionBusy:
                continue
            except StoreUnavailable as exc:
                log.warning("the reaper skipped a journal: %s", exc.message)
        return removed

    async def run_reaper(self) -> None:
        """Reap every ``reap_interval`` seconds until cancelled (each ``sitekeep serve``
        runs one; every replica's reaper may end any replica's runs)."""
        while True:
            await anyio.sleep(self._parts.settings.reap_interval)
            try:
                reaped = await self.reap()
            except Exception:  # the next pass tries again; a reaper never takes serve down
                log.exception("a reaper pass failed")
                continue
            if reaped:
                log.info("reaper: %s", ", ".join(f"{n} {why}" for why, n in sorted(reaped.items())))

    async def _gone(self, run: Run) -> bool:
        """Whether ``run``'s browser is known to be gone (``BrowserManager.gone``): a
        driver that died takes its browsers with it, so its runs count none."""
        if not run.endpoint or not run.webdriver_session:
            return False
        here = _host(run.replica) == _host(self._parts.replica)
        return await self._parts.browsers.gone(run.endpoint, run.webdriver_session, here=here)

    async def _reap_run(self, run: Run) -> ClosedReason | None:
        parts, records = self._parts, self._seam.records
        record = await records.load(run.tenant, run.session)
        reason = reaping.verdict(run, record, now=parts.clock(), idle=parts.settings.browser_idle)
        if reason is None and await self._gone(run):
            reason = "crashed"
        if reason is None:
            return None
        if reason == "reaped" and record is not None and reaping.owns(record, run):
            record = await self._save_first(record)
        if run.endpoint and run.webdriver_session:
            await parts.browsers.end(run.endpoint, run.webdriver_session)
        if record is not None and reaping.owns(record, run):
            await records.put(await records.without_browser(record))
        closing = parts.stores.runs.close_run(run.id, at=parts.clock(), reason=reason)
        await self._seam.browsers.ledger(closing)
        return reason

    async def _save_first(self, record: SessionRecord) -> SessionRecord | None:
        """An idle browser saves by itself before the reaper ends it (SPEC §18), under the
        lock the reaper holds; the record as that left it. A save the browser could not
        answer is logged and the browser ends anyway.

        Raises:
            StoreUnavailable: the save could not be stored: the browser is left for the
                next pass (ending it would lose what it holds).
        """
        autosaves, records = self._parts.autosaves, self._seam.records
        try:
            await autosaves.save(record.tenant, record.key, "reaper", held=True)
        except (BrowserUnavailable, InvalidInput) as exc:
            log.warning("the reaper's automatic save failed: %s", type(exc).__name__)
        autosaves.forget(record.tenant, record.key)
        return await records.load(record.tenant, record.key)

    async def end_browsers(self) -> int:
        """End every session's browser and every pool browser on this data dir, then the
        embedded drivers (``sitekeep stop``). Ending sessions first lets each driver clean
        its browser's profile up. Records, history and snapshots stay.

        Returns:
            How many session browsers were ended.
        """
        records, ended = self._seam.records, 0
        for store_key in await self._parts.stores.sessions.keys("session/"):
            _, tenant, key = store_key.split("/", 2)
            async with records.held(tenant, key):
                record = await records.load(tenant, key)
                if record is None or record.browser is None:
                    continue
                record = await self._save_at_stop(record) or record
                if record.browser is not None:
                    await self._seam.browsers.release(record.browser, "closed")
                await records.put(await records.without_browser(record))
            ended += 1
        await self._parts.browsers.end_pools()
        self._parts.browsers.stop_local_drivers()
        return ended

    async def _save_at_stop(self, record: SessionRecord) -> SessionRecord | None:
        """``sitekeep stop``: each browser saves by itself before it ends (SPEC §18); a
        save that fails is logged — stop ends the browser all the same."""
        try:
            await self._parts.autosaves.save(record.tenant, record.key, "stop", held=True)
        except SitekeepError as exc:
            log.warning("an automatic save at stop failed: %s", type(exc).__name__)
        return await self._seam.records.load(record.tenant, record.key)

    def count_error(self, type_name: str) -> None:
        """One more ``sitekeep_errors_total{type}`` (an error a facade answered)."""
        self._seam.metrics.error(type_name)

    async def metrics_text(self, authorization: str | None) -> tuple[bytes, str]:
        """``GET /metrics``: the Prometheus text format and its media type, the gauges
        read from the session store (records) and the run ledger (live browsers of every
        replica) at most every :data:`GAUGES_EVERY` seconds, once for every caller waiting
        meanwhile — for the scraper holding ``SITEKEEP_METRICS_TOKEN`` alone (the counts
        span tenants).

        Raises:
            Unauthorized: ``authorization`` does not carry the scrape token, or none is set
                (checked before any store is read).
            StoreUnavailable: a store cannot be reached.
        """
        check_scraper(self._parts.settings.metrics_token, authorization)
        async with self._gauges_lock:  # callers at once share one read of the stores
            if self._gauges is None or time.monotonic() - self._gauges[0] >= GAUGES_EVERY:
                sessions = await self._parts.stores.sessions.count("session/")
                runs = await self._parts.stores.runs.open_runs()
                browsers = Counter(r.browser for r in runs)
                self._gauges = (time.monotonic(), sessions, browsers)
            _, sessions, browsers = self._gauges
        return self._seam.metrics.render(sessions=sessions, browsers=browsers), CONTENT_TYPE


def _host(replica: str) -> str:
    """The machine of a replica name (``host:pid``)."""
    return replica.rsplit(":", 1)[0]
