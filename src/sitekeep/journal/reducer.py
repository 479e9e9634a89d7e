"""One reducer: journal records folded into a session's state (SPEC §8).

:func:`fold` is pure and total: the live seam folds each record it has just made durable,
and replay folds the records of the selected branch, so a restarted service holds exactly
the state the live one held. What it keeps:

- ``url``: where the browser was last seen (redacted as the journal keeps it), or
  ``url_withheld`` when that URL held a typed secret (SPEC §7);
- ``history``: the SPEC §4 rules of ``sitekeep.history`` applied at each finish with the
  finish's time (one entry per origin, the top one whole, the rest trimmed, TTL and cap);
- ``refs``: the snapshot whose ref map is current, by its record id and browser
  generation. A finish reuses, replaces (naming the new snapshot record), invalidates or
  leaves them unknown; a change of browser generation invalidates them;
- ``unsettled``: begins without their finish. While one is unsettled the refs are held
  but not usable (:meth:`SessionState.usable_refs`): the effects of the unfinished
  operation are unknown, and only a new snapshot after an inspection makes refs again;
- ``last_save``: the last ``saved`` mark, cleared by ``forgotten``;
- ``typed_secrets``: (secret, field) names typed in this session, newest last.

Premise: records arrive in branch order (each one's parent is the record before it);
the replayer guarantees that, the seam by appending under the session's lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from msgspec import UNSET

from sitekeep.history import origin_of, trim_url
from sitekeep.journal.records import (
    Begin,
    Finish,
    Mark,
    RefsStatus,
    Snapshot,
    SnapshotHead,
)
from sitekeep.model import HistoryEntry

__all__ = ["LastSave", "Pending", "RefsPointer", "Rules", "SessionState", "fold", "fold_all"]

MAX_UNSETTLED: Final = 64
"""Unsettled begins kept by name; older ones are only counted (``unsettled_dropped``)."""


@dataclass(frozen=True, slots=True)
class Rules:
    """The history rules of SPEC §4 (seconds, entries) and the typed-secrets cap."""

    ttl: float = 24 * 3600.0
    cap: int = 100
    typed_secrets_cap: int = 8


@dataclass(frozen=True, slots=True)
class RefsPointer:
    """A snapshot's ref map, named by its record: ``s{number}`` with ``count`` refs made
    in browser ``generation``. The shared ids stay in the record (read by position)."""

    snapshot: str
    number: int
    generation: str
    count: int


@dataclass(frozen=True, slots=True)
class Pending:
    """A begin without its finish: the operation may or may not have happened."""

    begin: str
    op: str
    call: str | None
    step: int | None
    at: float


@dataclass(frozen=True, slots=True)
class LastSave:
    """The last save: its mark's id and time, and its counts (cookies, sites…)."""

    record: str
    at: float
    detail: Mapping[str, str | int | float | bool | None]


@dataclass(frozen=True, slots=True)
class SessionState:
    """A session as its journal tells it; ``head`` is the last record folded."""

    head: str | None = None
    records: int = 0
    url: str | None = None
    url_withheld: bool = False
    history: tuple[HistoryEntry, ...] = ()
    generation: str | None = None
    refs: RefsPointer | None = None
    refs_status: RefsStatus | None = None
    latest_snapshot: RefsPointer | None = None
    """The last snapshot record folded: what a ``replaced`` finish may name."""
    unsettled: tuple[Pending, ...] = ()
    unsettled_dropped: int = 0
    last_save: LastSave | None = None
    typed_secrets: tuple[tuple[str, str], ...] = ()

    def usable_refs(self, generation: str | None) -> RefsPointer | None:
        """The refs an operation may use in a browser of ``generation``: none while an
        operation is unsettled, none from another browser generation."""
        if self.unsettled or self.refs is None or self.refs.generation != generation:
            return None
        return self.refs

    @property
    def settled(self) -> bool:
        return not self.unsettled and not self.unsettled_dropped


def fold(
    state: SessionState, record: Begin | Finish | Snapshot | SnapshotHead | Mark, rules: Rules
) -> SessionState:
    """``state`` after ``record``. Pure: the same records give the same state."""
    if isinstance(record, Begin):
        state = _begun(state, record)
    elif isinstance(record, Finish):
        state = _finished(state, record, rules)
    elif isinstance(record, Snapshot | SnapshotHead):
        pointer = RefsPointer(record.id, record.number, record.generation, record.count)
        state = replace(state, latest_snapshot=pointer)
    else:
        state = _marked(state, record)
    return replace(state, head=record.id, records=state.records + 1)


def fold_all(
    records: Iterable[Begin | Finish | Snapshot | SnapshotHead | Mark],
    rules: Rules,
    state: SessionState | None = None,
) -> SessionState:
    """Fold ``records`` in order, from ``state`` (an empty session by default)."""
    state = state or SessionState()
    for record in records:
        state = fold(state, record, rules)
    return state


def _begun(state: SessionState, record: Begin) -> SessionState:
    pending = (
        *state.unsettled,
        Pending(record.id, record.op or "", record.call, record.step, record.at),
    )
    dropped = max(0, len(pending) - MAX_UNSETTLED)
    return replace(
        state,
        unsettled=pending[dropped:],
        unsettled_dropped=state.unsettled_dropped + dropped,
    )


def _finished(state: SessionState, record: Finish, rules: Rules) -> SessionState:
    effects = record.effects
    unsettled = tuple(p for p in state.unsettled if p.begin != record.begin)
    history = _bump(state.history, effects.pages, record.at, rules)
    generation = state.generation if effects.generation is UNSET else effects.generation
    refs, status = _refs_after(state, effects.refs.status, effects.refs.snapshot, generation)
    typed = state.typed_secrets
    for secret in effects.secrets:
        name = (secret.secret, secret.field)
        typed = (*(t for t in typed if t != name), name)[-rules.typed_secrets_cap :]
    seen = effects.page is not None or effects.withheld
    return replace(
        state,
        unsettled=unsettled,
        history=history,
        generation=generation,
        refs=refs,
        refs_status=status,
        typed_secrets=typed,
        url=effects.page if seen else state.url,
        url_withheld=effects.withheld if seen else state.url_withheld,
    )


def _refs_after(
    state: SessionState, status: RefsStatus, named: str | None, generation: str | None
) -> tuple[RefsPointer | None, RefsStatus]:
    """The refs after a finish: a snapshot it names must be the last one defined on the
    branch, and refs of another browser generation are gone whatever the finish says."""
    refs = state.refs
    if status == "replaced":
        latest = state.latest_snapshot
        if latest is None or latest.snapshot != named:
            return None, "unknown"
        refs = latest
    elif status == "invalidated":
        refs = None
    if refs is not None and refs.generation != generation:
        return None, "invalidated"
    return refs, status


def _marked(state: SessionState, record: Mark) -> SessionState:
    if record.mark in ("opened", "reopened"):
        generation = None if record.generation is UNSET else record.generation
        if state.refs is not None and state.refs.generation == generation:
            return replace(state, generation=generation)
        return replace(state, generation=generation, refs=None, refs_status="invalidated")
    if record.mark == "saved":
        return replace(state, last_save=LastSave(record.id, record.at, dict(record.detail)))
    if record.mark == "forgotten":
        return replace(state, last_save=None)
    if record.mark == "cleared":
        return replace(state, history=())
    return state  # restored: audit only


def _bump(
    history: tuple[HistoryEntry, ...], pages: Iterable[str], now: float, rules: Rules
) -> tuple[HistoryEntry, ...]:
    """``history.bump_many(history, pages, now, ttl, cap)``, in time linear in the history.

    ``bump_many`` trims every entry below the top on each call; entries below the top are
    already trimmed (only the top keeps its whole URL), so only the top that moves down
    needs trimming. ``tests/unit/test_journal_reducer.py`` checks the two agree.
    """
    entries = history
    changed = False
    for url in pages:
        origin = origin_of(url)
        if origin is None:
            continue
        changed = True
        top = HistoryEntry(origin, url, now)
        if entries and entries[0].origin == origin:
            entries = (top, *entries[1:])
            continue
        rest = [e for e in entries if e.origin != origin]
        if rest and entries and rest[0] is entries[0]:
            rest[0] = HistoryEntry(rest[0].origin, trim_url(rest[0].url), rest[0].at)
        entries = (top, *rest)
    if not changed:
        return history
    head, rest_entries = entries[0], entries[1:]
    if rest_entries and now - min(e.at for e in rest_entries) > rules.ttl:
        rest_entries = tuple(e for e in rest_entries if now - e.at <= rules.ttl)
    return (head, *rest_entries)[: rules.cap]
