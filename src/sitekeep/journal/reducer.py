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
- ``last_save``: the last save — a finish whose effects carry ``saved`` counts, or a
  ``saved`` mark of an older journal — cleared by ``forgotten`` (of the whole snapshot;
  one host forgotten, ``detail.site``, leaves the rest saved);
- ``cleared`` (the admin's Clear of the history) keeps the top entry only;
- ``typed_secrets``: (secret, field) names typed in this session, newest last.

Premise: records arrive in branch order (each one's parent is the record before it);
the replayer guarantees that, the seam by appending under the session's lock.

The state values are frozen ``msgspec`` structs rather than dataclasses: replay folds
millions of records, and ``msgspec.structs.replace`` costs a tenth of
``dataclasses.replace`` (``bench/journal.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from msgspec import UNSET, Struct

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

__all__ = [
    "LastSave",
    "Pending",
    "Reducer",
    "RefsPointer",
    "Rules",
    "SessionState",
    "fold",
    "fold_all",
]

MAX_UNSETTLED: Final = 64
"""Unsettled begins kept by name; older ones are only counted (``unsettled_dropped``)."""


@dataclass(frozen=True, slots=True)
class Rules:
    """The history rules of SPEC §4 (seconds, entries) and the typed-secrets cap."""

    ttl: float = 24 * 3600.0
    cap: int = 100
    typed_secrets_cap: int = 8


class RefsPointer(Struct, frozen=True):
    """A snapshot's ref map, named by its record: ``s{number}`` with ``count`` refs made
    in browser ``generation``. The shared ids stay in the record (read by position)."""

    snapshot: str
    number: int
    generation: str
    count: int


class Pending(Struct, frozen=True):
    """A begin without its finish: the operation may or may not have happened."""

    begin: str
    op: str
    call: str | None
    step: int | None
    at: float


class LastSave(Struct, frozen=True):
    """The last save: its record's id (the save's finish, or an older journal's
    ``saved`` mark) and time, and its counts (cookies, sites…)."""

    record: str
    at: float
    detail: Mapping[str, str | int | float | bool | None]


class SessionState(Struct, frozen=True):
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
        operation is unsettled, none from another browser generation. Refs a finish left
        ``unknown`` (a click that may have navigated) stay usable: BiDi itself answers
        ``no such node`` for a sharedId whose document is gone (``StaleRef``)."""
        if self.unsettled or self.refs is None or self.refs.generation != generation:
            return None
        return self.refs

    @property
    def settled(self) -> bool:
        return not self.unsettled and not self.unsettled_dropped


class Reducer:
    """The fold, as an accumulator: :meth:`apply` takes records in branch order,
    :meth:`state` gives the frozen :class:`SessionState`. :func:`fold` (the live seam's
    step) and replay both run this one class, so they cannot disagree; replay keeps one
    for millions of records instead of building a frozen state per record."""

    __slots__ = (
        "_history",
        "_state",
        "_typed",
        "_unsettled",
        "generation",
        "head",
        "last_save",
        "latest_snapshot",
        "records",
        "refs",
        "refs_status",
        "rules",
        "unsettled_dropped",
        "url",
        "url_withheld",
    )

    def __init__(self, state: SessionState, rules: Rules) -> None:
        self.rules = rules
        self._state: SessionState | None = state
        self.head, self.records = state.head, state.records
        self.url, self.url_withheld = state.url, state.url_withheld
        self._history = list(state.history)
        self.generation = state.generation
        self.refs, self.refs_status = state.refs, state.refs_status
        self.latest_snapshot = state.latest_snapshot
        self._unsettled = {p.begin: p for p in state.unsettled}
        self.unsettled_dropped = state.unsettled_dropped
        self.last_save = state.last_save
        self._typed = list(state.typed_secrets)

    def state(self) -> SessionState:
        """The state after every record applied so far."""
        if self._state is None:
            self._state = SessionState(
                head=self.head,
                records=self.records,
                url=self.url,
                url_withheld=self.url_withheld,
                history=tuple(self._history),
                generation=self.generation,
                refs=self.refs,
                refs_status=self.refs_status,
                latest_snapshot=self.latest_snapshot,
                unsettled=tuple(self._unsettled.values()),
                unsettled_dropped=self.unsettled_dropped,
                last_save=self.last_save,
                typed_secrets=tuple(self._typed),
            )
        return self._state

    def apply(self, record: Begin | Finish | Snapshot | SnapshotHead | Mark) -> None:
        """Fold ``record`` in."""
        self._state = None
        kind = type(record)
        if kind is Finish:
            self._finished(record)  # type: ignore[arg-type]
        elif kind is Begin:
            self._begun(record)  # type: ignore[arg-type]
        elif kind is Snapshot or kind is SnapshotHead:
            snap: Snapshot | SnapshotHead = record  # type: ignore[assignment]
            self.latest_snapshot = RefsPointer(snap.id, snap.number, snap.generation, snap.count)
        else:
            self._marked(record)  # type: ignore[arg-type]
        self.head = record.id
        self.records += 1

    def _begun(self, record: Begin) -> None:
        pending = self._unsettled
        pending[record.id] = Pending(
            record.id, record.op or "", record.call, record.step, record.at
        )
        if len(pending) > MAX_UNSETTLED:
            del pending[next(iter(pending))]
            self.unsettled_dropped += 1

    def _finished(self, record: Finish) -> None:
        effects = record.effects
        if self._unsettled:
            self._unsettled.pop(record.begin, None)
        if effects.pages:
            _bump_in_place(self._history, effects.pages, record.at, self.rules)
        if effects.generation is not UNSET:
            self.generation = effects.generation
        self._refs_after(effects.refs.status, effects.refs.snapshot)
        for secret in effects.secrets:
            name = (secret.secret, secret.field)
            if name in self._typed:
                self._typed.remove(name)
            self._typed.append(name)
            del self._typed[: -self.rules.typed_secrets_cap]
        if effects.page is not None or effects.withheld:
            self.url, self.url_withheld = effects.page, effects.withheld
        if effects.saved is not None and record.outcome == "ok":
            self.last_save = LastSave(record.id, record.at, dict(effects.saved))

    def _refs_after(self, status: RefsStatus, named: str | None) -> None:
        """A snapshot a finish names must be the last one defined on the branch, and
        refs of another browser generation are gone whatever the finish says."""
        if status == "replaced":
            latest = self.latest_snapshot
            if latest is None or latest.snapshot != named:
                self.refs, self.refs_status = None, "unknown"
                return
            self.refs = latest
        elif status == "invalidated":
            self.refs = None
        if self.refs is not None and self.refs.generation != self.generation:
            self.refs, self.refs_status = None, "invalidated"
            return
        self.refs_status = status

    def _marked(self, record: Mark) -> None:
        if record.mark in ("opened", "reopened"):
            self.generation = None if record.generation is UNSET else record.generation
            if self.refs is not None and self.refs.generation != self.generation:
                self.refs, self.refs_status = None, "invalidated"
        elif record.mark == "saved":
            self.last_save = LastSave(record.id, record.at, dict(record.detail))
        elif record.mark == "forgotten":
            if "site" not in record.detail:  # one host forgotten: the rest is still saved
                self.last_save = None
        elif record.mark == "cleared":
            del self._history[1:]  # SPEC §11 Clear: the top entry stays, a reopen goes there
        # restored: audit only


def fold(
    state: SessionState, record: Begin | Finish | Snapshot | SnapshotHead | Mark, rules: Rules
) -> SessionState:
    """``state`` after ``record``. Pure: the same records give the same state."""
    reducer = Reducer(state, rules)
    reducer.apply(record)
    return reducer.state()


def fold_all(
    records: Iterable[Begin | Finish | Snapshot | SnapshotHead | Mark],
    rules: Rules,
    state: SessionState | None = None,
) -> SessionState:
    """Fold ``records`` in order, from ``state`` (an empty session by default)."""
    reducer = Reducer(state or SessionState(), rules)
    for record in records:
        reducer.apply(record)
    return reducer.state()


def _bump_in_place(
    history: list[HistoryEntry], pages: Iterable[str], now: float, rules: Rules
) -> None:
    """``history.bump_many(history, pages, now, ttl, cap)``, done in place in time linear
    in the history.

    ``bump_many`` trims every entry below the top on each call; entries below the top are
    already trimmed (only the top keeps its whole URL), so only the top that moves down
    needs trimming. ``tests/unit/test_journal_reducer.py`` checks the two agree.
    """
    changed = False
    for url in pages:
        origin = _origin(url)
        if origin is None:
            continue
        changed = True
        top = HistoryEntry(origin, url, now)
        if history and history[0].origin == origin:
            history[0] = top
            continue
        if history:
            old = history[0]
            history[0] = HistoryEntry(old.origin, _trimmed(old.url), old.at)
        for index, entry in enumerate(history):
            if entry.origin == origin:
                del history[index]
                break
        history.insert(0, top)
    if not changed:
        return
    if len(history) > 1 and now - min(history[i].at for i in range(1, len(history))) > rules.ttl:
        history[1:] = [e for e in history[1:] if now - e.at <= rules.ttl]
    del history[rules.cap :]


_ORIGINS: dict[str, str | None] = {}
_ORIGINS_KEPT: Final = 1024


def _origin(url: str) -> str | None:
    """``history.origin_of(url)``, remembered by the URL's part before its path: the
    origin depends on nothing else, and a replay meets the same few again and again."""
    slashes = url.find("//")
    end = url.find("/", slashes + 2) if slashes >= 0 else -1
    prefix = url if end < 0 else url[:end]
    if prefix in _ORIGINS:
        return _ORIGINS[prefix]
    if len(_ORIGINS) >= _ORIGINS_KEPT:
        _ORIGINS.clear()
    origin = _ORIGINS[prefix] = origin_of(prefix)
    return origin


def _trimmed(url: str) -> str:
    """``history.trim_url``, skipped for a URL with no query or fragment to trim."""
    return trim_url(url) if "?" in url or "#" in url else url
