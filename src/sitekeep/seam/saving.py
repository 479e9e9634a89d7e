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

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.snapshot import read_snapshot
from sitekeep.config import Settings
from sitekeep.masking import carried
from sitekeep.metrics import Metrics
from sitekeep.model import SessionRecord, SiteData, Skipped
from sitekeep.seam.records import Records, site_data_uri

__all__ = ["Saving", "SiteDataRead", "SiteReader"]


@dataclass(frozen=True, slots=True)
class SiteDataRead:
    """A read of the browser's site data composed over the session's snapshot: the
    snapshot a save would store, what it left out, the origins in visit order, how many
    were read through the spare tab, and where the browser is."""

    key: str
    snapshot: SiteData
    skipped: list[Skipped]
    order: list[str]
    spare_reads: int
    page: PageInfo

    def result(self) -> dict[str, Any]:
        """A save's result: ``{saved: {cookies, sites, skipped, spare_reads}, uri}`` —
        never a value; ``sites`` in visit order, then the others sorted."""
        snapshot, order = self.snapshot, self.order
        saved = {
            "cookies": len(snapshot.cookies),
            "sites": [o for o in order if o in snapshot.origins]
            + sorted(set(snapshot.origins) - set(order)),
            "skipped": [s.as_json() for s in self.skipped],
            "spare_reads": self.spare_reads,
        }
        return {"saved": saved, "uri": site_data_uri(self.key)}

    def counts(self) -> dict[str, Any]:
        """What a save's journal finish carries (``effects.saved``): counts only."""
        return {
            "cookies": len(self.snapshot.cookies),
            "sites": len(self.snapshot.origins),
            "skipped": len(self.skipped),
        }


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

    async def read(self, browser: LiveBrowser, *, full: bool, indexed_db: bool) -> SiteDataRead:
        """What a save would store and what it left out (:class:`SiteDataRead`).

        Raises:
            SnapshotTooLarge: the cookies alone pass the cap; nothing was stored.
            BrowserUnavailable: BiDi is down; nothing was read.
        """
        metrics = self.saving.metrics
        if not self.timed:
            return await self.saving.read(self, browser, full=full, indexed_db=indexed_db)
        with metrics.timed(metrics.saves):
            return await self.saving.read(self, browser, full=full, indexed_db=indexed_db)


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
        self, reader: SiteReader, browser: LiveBrowser, *, full: bool, indexed_db: bool
    ) -> SiteDataRead:
        """What a save would store — composed over the session's snapshot, loaded beside
        the browser's first reads — and what it left out. It carries the mask of the
        values it holds (``masking.carried``: the session's and the last snapshot's)."""
        records, record = self.records, reader.record
        history = records.bumped(record.history, reader.pages)
        captured = await read_snapshot(
            browser,
            [e.origin for e in history],
            records.load_snapshot(record.tenant, record.key),
            deadline=self.settings.save_deadline,
            cap=self.settings.snapshot_cap,
            now=records.clock(),
            full=full,
            indexed_db=indexed_db,
            journaled=reader.journaled,
        )
        page = captured.page or await browser.page_info()
        snapshot = captured.snapshot
        values = [*await records.mask_values(record.tenant, record), *snapshot.mask]
        snapshot = replace(snapshot, mask=carried(values, snapshot))
        return SiteDataRead(
            record.key, snapshot, captured.skipped, captured.order, captured.spare_reads, page
        )

    async def keep(self, record: SessionRecord, snapshot: SiteData) -> None:
        """Replace the session's snapshot with ``snapshot`` (sealed for it)."""
        await self.records.put_snapshot(record.tenant, record.key, snapshot)
