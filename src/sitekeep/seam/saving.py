"""Saving: the browser's site data read and composed over the session's snapshot (SPEC §3 Save).

An operation reads through a :class:`SiteReader` (``operations.Context.site_data``): the
origins of the session's history with the pages the call reached so far (SPEC §4 flows:
a save reads their storage too), the last snapshot loaded beside the browser's first
reads, the values the data carries (``masking.carried``). It writes nothing: a save
returns what it read as its effect (``operations.Done.save``) and the operation context
stores it once the call's begin is durable (:meth:`Saving.keep`); a profile capture keeps
it elsewhere (SPEC §9).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.snapshot import read_snapshot
from sitekeep.config import Settings
from sitekeep.masking import carried
from sitekeep.metrics import Metrics
from sitekeep.model import SessionRecord, SignIn, SiteData, Skipped
from sitekeep.seam.records import Records, site_data_uri
from sitekeep.seam.signins import landing, run_checks
from sitekeep.signin import judge, turned_out

__all__ = ["LOAD", "Saving", "SiteDataRead", "SiteReader"]


class _Load:
    """No snapshot given: the read loads the session's (beside the browser's reads)."""


LOAD = _Load()


@dataclass(frozen=True, slots=True)
class SiteDataRead:
    """A read of the browser's site data composed over the session's snapshot: the
    snapshot a save would store (each host's sign-in state judged, ``SiteData.sign_in``),
    what it left out, the origins in visit order, how many were read through the spare
    tab, where the browser is, and the snapshot it was composed over (None: none)."""

    key: str
    snapshot: SiteData
    skipped: list[Skipped]
    order: list[str]
    spare_reads: int
    page: PageInfo
    previous: SiteData | None = None

    def result(self, guarded: Sequence[dict[str, str]] | None = None) -> dict[str, Any]:
        """A save's result: ``{saved: {cookies, sites, skipped, spare_reads}, uri,
        guarded, signed_out}`` — never a value; ``sites`` in visit order, then the others
        sorted. An explicit save (``guarded`` None) names in ``signed_out`` each host it
        turned from signed in to not (SPEC §18); an automatic one names the hosts whose
        data its guard kept in ``guarded``."""
        snapshot, order = self.snapshot, self.order
        saved = {
            "cookies": len(snapshot.cookies),
            "sites": [o for o in order if o in snapshot.origins]
            + sorted(set(snapshot.origins) - set(order)),
            "skipped": [s.as_json() for s in self.skipped],
            "spare_reads": self.spare_reads,
        }
        before = self.previous.sign_in if self.previous is not None else {}
        out = turned_out(before, snapshot.sign_in) if guarded is None else []
        return {
            "saved": saved,
            "uri": site_data_uri(self.key),
            "guarded": list(guarded or ()),
            "signed_out": out,
        }

    def counts(self, guarded: int | None = None) -> dict[str, Any]:
        """What a save's journal finish carries (``effects.saved``): counts only —
        the hosts an automatic save guarded too."""
        counts = {
            "cookies": len(self.snapshot.cookies),
            "sites": len(self.snapshot.origins),
            "skipped": len(self.skipped),
        }
        if guarded is not None:
            counts["guarded"] = guarded
        return counts


@dataclass(frozen=True, slots=True)
class SiteReader:
    """What one call reads the session's site data with (``operations.SiteDataReader``).

    Attributes:
        record: the session's record as the call holds it.
        pages: the pages the call reached so far (the history gets them first).
        journaled: awaited after the first reads, before a spare tab (SPEC §8).
        timed: whether the read counts as a save in ``/metrics``.
    """

    saving: Saving
    record: SessionRecord
    pages: Sequence[str]
    journaled: Callable[[], Awaitable[None]] | None = None
    timed: bool = False

    async def read(
        self,
        browser: LiveBrowser,
        *,
        full: bool,
        indexed_db: bool,
        previous: SiteData | _Load | None = LOAD,
    ) -> SiteDataRead:
        """What a save would store and what it left out (:class:`SiteDataRead`);
        ``previous`` is the snapshot to compose over when the caller loaded it already.

        Raises:
            SnapshotTooLarge: the cookies alone pass the cap; nothing was stored.
            BrowserUnavailable: BiDi is down; nothing was read.
        """
        metrics, saving = self.saving.metrics, self.saving
        if not self.timed:
            return await saving.read(
                self, browser, full=full, indexed_db=indexed_db, previous=previous
            )
        with metrics.timed(metrics.saves):
            return await saving.read(
                self, browser, full=full, indexed_db=indexed_db, previous=previous
            )


@dataclass(frozen=True, slots=True)
class Saving:
    """Reads of the sessions' site data, and the saves that keep them."""

    settings: Settings
    records: Records
    metrics: Metrics

    def reader(
        self,
        record: SessionRecord,
        pages: Sequence[str],
        journaled: Callable[[], Awaitable[None]] | None = None,
        *,
        timed: bool = False,
    ) -> SiteReader:
        """A reader of the session's site data for one call (:class:`SiteReader`)."""
        return SiteReader(self, record, tuple(pages), journaled, timed)

    async def read(
        self,
        reader: SiteReader,
        browser: LiveBrowser,
        *,
        full: bool,
        indexed_db: bool,
        previous: SiteData | _Load | None = LOAD,
    ) -> SiteDataRead:
        """What a save would store — composed over the session's snapshot (``previous``,
        else loaded beside the browser's first reads), each host's sign-in state judged
        (the session's checks first, each in a background tab; then the heuristic with
        where the main tab landed, read beside the save's reads) — and what it left out.
        It carries the mask of the values it holds (``masking.carried``: the session's and
        the last snapshot's)."""
        records, record = self.records, reader.record
        now = records.clock()
        checked = {}
        if record.checks:  # a check loads a page: after the begin is durable (SPEC §8)
            if reader.journaled is not None:
                await reader.journaled()
            checked = await run_checks(browser, record.checks, now)
        history = records.bumped(record.history, reader.pages)
        last: Any = previous
        if isinstance(previous, _Load):
            last = asyncio.ensure_future(records.load_snapshot(record.tenant, record.key))
        landed = asyncio.ensure_future(landing(browser))  # beside the reads

        async def judging() -> Callable[[SiteData], Mapping[str, SignIn]]:
            land = await landed
            return lambda composed: judge(composed, now, land, checked)

        try:
            captured = await read_snapshot(
                browser,
                [e.origin for e in history],
                last,
                deadline=self.settings.save_deadline,
                cap=self.settings.snapshot_cap,
                now=now,
                full=full,
                indexed_db=indexed_db,
                journaled=reader.journaled,
                sign_in=judging,
            )
        finally:
            landed.cancel()  # done by now, unless the read failed first
        if isinstance(last, asyncio.Future):
            last = await last
        page = captured.page or await browser.page_info()
        snapshot = captured.snapshot
        values = [*await records.mask_values(record.tenant, record), *snapshot.mask]
        snapshot = replace(snapshot, mask=carried(values, snapshot))
        return SiteDataRead(
            record.key,
            snapshot,
            captured.skipped,
            captured.order,
            captured.spare_reads,
            page,
            last,
        )

    async def keep(self, record: SessionRecord, snapshot: SiteData) -> None:
        """Replace the session's snapshot with ``snapshot`` (sealed for it)."""
        await self.records.put_snapshot(record.tenant, record.key, snapshot)
