"""One seam call's journal, and each session's journal as this process knows it (SPEC §8).

:class:`CallJournal` makes and writes every record a call writes — begins, finishes,
snapshots, marks, and the ``unknown`` finishes an inspection settles — folding each into
the session's state once durable. The operation context (:mod:`sitekeep.seam.context`)
decides when; nothing else builds a journal record.

The journal state (:class:`~sitekeep.journal.SessionState`) of each session this process
touched is kept between calls (:class:`Tracks`); the first call after a restart (or after a
journal write failed, or another replica moved the journal on) replays it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from msgspec import UNSET, UnsetType

from sitekeep.browser.live import PageInfo
from sitekeep.errors import JournalConflict, JournalUnavailable, SitekeepError, error_json
from sitekeep.journal import Journal, JournalKey, SessionState, fold, records
from sitekeep.journal.records import Begin, MarkKind, Record, RefsStatus
from sitekeep.model import BrowserRef, RefMap

__all__ = ["UNSETTLED_WARNING", "CallJournal", "Op", "Track", "Tracks", "Where"]

log = logging.getLogger(__name__)

UNSETTLED_WARNING = (
    "the operation ran but its journal finish could not be written: the session is "
    "unsettled — the next call inspects the browser first; do not repeat the operation "
    "without looking (snapshot) first"
)

Where = tuple[PageInfo | None, bool, Sequence[str], str | None]
"""Where an operation left the browser, as its finish keeps it: the page (None when not
seen), whether its URL is withheld, the pages it reached, the browser's generation."""


@dataclass
class Op:
    """A begun operation: its begin record and the first of the call's pages it reached."""

    started: Begin
    first_page: int


class Pending(Protocol):
    """The begin of the operation under way (``context._Beginning``)."""

    async def durable(self) -> Op: ...


# -- the journal as this process knows it ---------------------------------------------------


@dataclass
class Track:
    """One session's journal as this process knows it: the folded state and the ref map
    of the snapshot it names (the shared ids stay out of the state)."""

    key: JournalKey
    state: SessionState
    refs: RefMap | None = None
    broken: bool = False
    """Not kept after the call (a write failed, or the journal was removed): the next
    call replays rather than trust this copy."""

    def usable_refs(self, generation: str | None, call: str) -> RefMap | None:
        """The refs an operation of ``call`` may use in a browser of ``generation``: none
        while another call's begin is unsettled, none of another generation."""
        state = self.state
        if state.unsettled_dropped or any(p.call != call for p in state.unsettled):
            return None
        pointer = state.refs
        if pointer is None or pointer.generation != generation or self.refs is None:
            return None
        return self.refs if self.refs.snapshot == pointer.number else None


class Tracks:
    """The :class:`Track` of each session this process touched, kept between calls."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._kept: dict[JournalKey, Track] = {}

    async def take(self, key: JournalKey) -> Track:
        """The session's track for a call: the one kept, else replayed."""
        return self._kept.pop(key, None) or await self.replay(key)

    async def replay(self, key: JournalKey) -> Track:
        """The session's journal state, replayed from the backend (bounded memory)."""
        replayed = await self.journal.replay(key)
        for problem in replayed.report.problems:
            log.warning("journal %s/%s: %s", key.tenant, key.key, problem.message)
        return Track(key, replayed.state, replayed.refs)

    def keep(self, track: Track) -> None:
        """Keep ``track`` for the session's next call, unless it is broken."""
        if not track.broken:
            self._kept[track.key] = track

    def forget(self, tenant: str, key: str) -> None:
        """Drop what is kept of the session's journal (it was removed)."""
        self._kept.pop(JournalKey(tenant, key), None)


# -- one call's journal -------------------------------------------------------------------


class CallJournal:
    """The journal of one seam call: every record the call writes — begins, finishes,
    snapshots, marks — is made and written here."""

    def __init__(self, tracks: Tracks, track: Track) -> None:
        self.tracks = tracks
        self.track = track
        self.call = records.new_id()
        self.unsettled = False
        self.warnings: list[dict[str, Any]] = []
        self.beginning: Pending | None = None
        """The begin of the operation under way, until its call has waited for it (for
        an operation in ``READS_FIRST``: while it is written beside its first reads)."""

    def usable_refs(self, generation: str | None) -> RefMap | None:
        """The refs this call's operations may use in a browser of ``generation``."""
        return self.track.usable_refs(generation, self.call)

    async def write(self, record: Record) -> None:
        """Append ``record`` durably and fold it in.

        Raises:
            JournalUnavailable / JournalConflict: not written; this copy is dropped.
        """
        track, journal = self.track, self.tracks.journal
        try:
            await journal.write(track.key, record)
        except (JournalUnavailable, JournalConflict):
            track.broken = True
            raise
        track.state = fold(track.state, record, journal.rules)

    async def begin(
        self,
        op: str,
        args: Mapping[str, Any],
        *,
        step: int | None,
        generation: str | None,
        first_page: int,
    ) -> Op:
        """A begin record for ``op``, durable; another replica's write first replayed.

        Raises:
            JournalUnavailable / JournalConflict: it could not be made durable.
        """
        for attempt in (1, 2):
            started = records.begin(
                op,
                args,
                parent=self.track.state.head,
                call=self.call,
                step=step,
                generation=generation,
            )
            try:
                await self.write(started)
                return Op(started, first_page)
            except JournalConflict:
                if attempt == 2:
                    raise
                self.track = await self.tracks.replay(self.track.key)  # another replica wrote
        raise AssertionError("unreachable")

    async def durable(self) -> None:
        """Wait until the begin of the operation under way is durable (a no-op once it
        is). Raises: JournalUnavailable — it could not be written."""
        if self.beginning is not None:
            await self.beginning.durable()

    async def mark(
        self,
        kind: MarkKind,
        op: str | None = None,
        *,
        step: int | None = None,
        generation: str | UnsetType | None = UNSET,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """A mark (opened, reopened, saved, restored, forgotten, cleared); counts only."""
        await self.write(
            records.mark(
                kind,
                parent=self.track.state.head,
                op=op,
                call=self.call,
                step=step,
                generation=generation,
                detail=detail,
            )
        )

    async def new_browser(
        self,
        kind: MarkKind,
        ref: BrowserRef,
        report: Mapping[str, Any] | None,
        *,
        step: int | None = None,
    ) -> None:
        """Marks for a browser this call started: ``opened``/``reopened`` with its
        generation, then ``restored`` with the restore's counts when it restored any."""
        await self.mark(kind, step=step, generation=ref.generation, detail={"browser": ref.kind})
        if report is not None:
            await self.mark("restored", step=step, detail=_restore_counts(report))

    async def finish(
        self,
        op: Op,
        error: SitekeepError | None = None,
        *,
        where: Where,
        refs: RefsStatus = "unknown",
        snapshot: RefMap | None = None,
        typed: Sequence[tuple[str, str]] = (),
        saved: Mapping[str, Any] | None = None,
    ) -> bool:
        """The finish of ``op`` (after a snapshot record when ``snapshot`` replaced the
        refs), ``where`` the browser is — ``(page, withheld, pages reached, generation)``
        — with a save's counts in its effects when ``saved``; False — the session
        unsettled, a warning added — when it could not be written."""
        started = op.started
        page, withheld, pages, generation = where
        try:
            name = None
            if snapshot is not None:
                name = await self._snapshot(started, snapshot)
            await self.write(
                records.finish(
                    started,
                    "failed" if error is not None else "ok",
                    parent=self.track.state.head or started.id,
                    pages=pages,
                    page=page.url if page is not None else None,
                    withheld=withheld,
                    refs=refs if name is None else "replaced",
                    snapshot=name,
                    secrets=typed,
                    generation=generation,
                    error=error_json(error) if error is not None else None,
                    saved=saved,
                )
            )
            return True
        except (JournalUnavailable, JournalConflict) as exc:
            log.warning("a journal finish of %s was not written: %s", started.op, exc.message)
            self.unsettle()
            return False

    async def _snapshot(self, started: Begin, snapshot: RefMap) -> str:
        """A snapshot record naming the refs ``started`` replaced; its id."""
        made = records.snapshot(
            started,
            snapshot.snapshot,
            snapshot.generation,
            snapshot.shared_ids,
            parent=self.track.state.head or started.id,
        )
        await self.write(made)
        self.track.refs = snapshot
        return made.id

    def unsettle(self) -> None:
        """This call's effects are not all journaled: say so once in its result."""
        if not self.unsettled:
            self.warnings.append({"type": "journal_unsettled", "message": UNSETTLED_WARNING})
        self.unsettled = True

    async def settle_unknown(
        self, page: PageInfo | None, withheld: bool, generation: str | None, tabs: int
    ) -> None:
        """Settle the begins another call left open as ``unknown``, refs invalidated,
        where the browser was found (``tabs``: how many it had). Nothing is repeated.

        Raises:
            JournalUnavailable: the finishes could not be written (503).
        """
        pending = [p for p in self.track.state.unsettled if p.call != self.call]
        for open_op in pending:
            started = records.Begin(
                v=1,
                id=open_op.begin,
                parent=None,
                at=open_op.at,
                op=open_op.op,
                call=open_op.call,
                step=open_op.step,
                args={},
            )
            await self.write(
                records.finish(
                    started,
                    "unknown",
                    parent=self.track.state.head or started.id,
                    page=page.url if page else None,
                    withheld=withheld,
                    refs="invalidated",
                    generation=generation,
                )
            )
        self.warnings.append(
            {
                "type": "journal_inspected",
                "message": "an earlier operation's outcome was unknown: the browser was "
                "inspected and nothing was repeated",
                "ops": [p.op for p in pending],
                "tabs": tabs,
            }
        )


def _restore_counts(report: Mapping[str, Any]) -> dict[str, Any]:
    """A restore report's counts for the ``restored`` mark: never a name or value."""
    return {
        name: len(value) if isinstance(value, list | tuple | dict) else value
        for name, value in report.items()
        if name in ("restored", "skipped", "warnings", "cookies")
    }
