"""Replay: a session's state rebuilt from its journal in bounded memory (SPEC §8).

Three passes at most, each a stream over the source, none holding more than one record:

1. **Validate and fold.** Every complete line is decoded and validated (a snapshot's ref
   map is checked as JSON but not built); a torn tail is reported as uncommitted, a
   corrupt line with its line number and byte position, an oversize line skipped unread.
   While each record's parent is the record before it — a journal with no fork, the
   common case — the records are folded as they come, and replay ends here.
2. **Walk the ancestry** (only after a fork, or when a leaf before the end is selected):
   from the selected leaf backwards, following ``parent`` (parents always come before
   their children), the positions of the branch are stacked — in memory up to a bound,
   then in a temporary file.
3. **Fold the branch**: a forward scan that decodes only the stacked positions.

Then only the winning snapshot body — the ref map the final state names — is read, by
its position. Asked to (``sitekeep journal check``), replay also finds record ids that
occur more than once (a line copied by hand, a restore spliced in): pass 1 keeps a 64-bit
hash of each id (:class:`_IdHashes`, sorted runs spilled to a temp file past a bound),
and only when two hashes are equal does one more scan compare the ids themselves.

Memory: one read chunk plus one record of at most the cap, a small state, and the bounds
of the branch stack and of the id hashes (one chunk per spilled run when merging),
whatever the journal's size.

Replay takes a :class:`~sitekeep.journal.base.RecordSource` and is synchronous: callers
in async code run it in a worker thread (``Journal.replay``).
"""

from __future__ import annotations

import heapq
import os
import tempfile
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import groupby, islice
from typing import IO, Final, Literal, Self

import msgspec
from msgspec.structs import replace

from sitekeep.journal.base import RecordSource
from sitekeep.journal.framing import Line, Oversize, Torn
from sitekeep.journal.records import (
    ENVELOPE,
    FULL,
    LINK,
    EnvelopeRecord,
    RecordError,
    Snapshot,
    SnapshotHead,
    decode,
)
from sitekeep.journal.reducer import Reducer, Rules, SessionState
from sitekeep.model import RefMap

__all__ = ["Problem", "ReplayReport", "Replayed", "replay"]

STACK_IN_MEMORY: Final = 1 << 17
"""Branch positions held in memory (8 bytes each) before they spill to a temp file."""
CHECKPOINT_EVERY: Final = 4096
CHECKPOINTS: Final = 16
"""Pass 1 keeps the fold's state every ``CHECKPOINT_EVERY`` records, the last
``CHECKPOINTS`` of them (a state is small: a history of at most ``cap`` entries)."""

REPEATED_SHOWN: Final = 100
"""Repeated record ids reported one by one; past them, one problem counts the rest."""

ProblemKind = Literal[
    "corrupt", "oversize", "missing_parent", "unknown_leaf", "unknown_snapshot", "duplicate_id"
]
PhaseProgress = Callable[[str, int], None]
"""Called with a pass's name (``validate``, ``branch``) and the bytes it just read."""


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong in a journal, where it is: ``line`` (1-based) and ``position``
    (byte offset in a file, the entry's place in a stream)."""

    kind: ProblemKind
    message: str
    line: int | None = None
    position: int | None = None


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What replay read: ``lines`` complete lines, ``records`` of them valid, the torn
    tail if any (uncommitted, not a problem), the problems, the selected ``leaf``,
    ``branch`` records folded, and whether the fast single pass sufficed (``linear``)."""

    lines: int
    records: int
    torn: Torn | None
    problems: tuple[Problem, ...]
    leaf: str | None
    leaf_position: int | None
    branch: int
    linear: bool

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class Replayed:
    """The state the branch folds to, the winning ref map, and the report."""

    state: SessionState
    refs: RefMap | None
    report: ReplayReport


def replay(
    source: RecordSource,
    rules: Rules,
    *,
    leaf: str | None = None,
    progress: PhaseProgress | None = None,
    duplicates: bool = False,
) -> Replayed:
    """Rebuild the state of the branch ending at ``leaf`` (the last valid record when
    None). Never raises for what it reads: every fault is a :class:`Problem`.

    Args:
        duplicates: also report each record id that occurs more than once
            (``duplicate_id``, on the later line), at the cost of a hash per record and,
            when two hashes meet, one more scan.
    """
    with _IdHashes() as ids:
        first = _FirstPass(rules, leaf, ids if duplicates else None)
        validate = (lambda n: progress("validate", n)) if progress else None
        for item in source.scan(validate):
            first.take(item)
        problems = first.problems
        if duplicates:
            problems.extend(_repeated(source, ids))
    if first.leaf is None:
        if leaf is not None:
            problems.append(Problem("unknown_leaf", f"no valid record {leaf} in the journal"))
        return _done(source, _Checkpoint(rules), first, problems, branch=0, linear=True)
    if first.linear:
        return _done(source, first.now, first, problems, first.now.state.records, linear=True)
    folded, branch = _fold_branch(source, rules, first, problems, progress)
    return _done(source, folded, first, problems, branch, linear=False)


class _Checkpoint:
    """A fold in progress in the linear prefix, where it stands (the position of its
    last record, None before any), and where the snapshot records it may name are."""

    __slots__ = ("current", "latest", "position", "reducer")

    def __init__(
        self,
        rules: Rules,
        state: SessionState | None = None,
        position: int | None = None,
        latest: tuple[str, int] | None = None,
        current: tuple[str, int] | None = None,
    ) -> None:
        self.reducer = Reducer(state or SessionState(), rules)
        self.position = position
        self.latest = latest  # the last snapshot record folded
        self.current = current  # the one the state's refs name

    @property
    def state(self) -> SessionState:
        return self.reducer.state()

    def fold(self, record: EnvelopeRecord, position: int) -> None:
        reducer = self.reducer
        reducer.apply(record)
        self.position = position
        if type(record) is SnapshotHead:
            self.latest = (record.id, position)
        elif reducer.refs is not None and self.latest and reducer.refs.snapshot == self.latest[0]:
            self.current = self.latest

    def snapshot_position(self, snapshot: str) -> int | None:
        for known in (self.current, self.latest):
            if known is not None and known[0] == snapshot:
                return known[1]
        return None

    def copy(self) -> _Checkpoint:
        rules = self.reducer.rules
        return _Checkpoint(rules, self.state, self.position, self.latest, self.current)


class _FirstPass:
    """Pass 1: validate everything, fold while the journal has not forked, and keep a
    few checkpoints of that fold so a fork near the end replays only its tail."""

    def __init__(self, rules: Rules, leaf: str | None, ids: _IdHashes | None = None) -> None:
        self.rules, self.wanted, self.ids = rules, leaf, ids
        self.now = _Checkpoint(rules)
        self.checkpoints: deque[_Checkpoint] = deque(maxlen=CHECKPOINTS)
        self.problems: list[Problem] = []
        self.torn: Torn | None = None
        self.lines = self.records = 0
        self.linear = True
        self.folding = True
        self.previous: str | None = None
        self.leaf: tuple[str, str | None, int] | None = None

    def take(self, item: Line | Oversize | Torn) -> None:
        if type(item) is Torn:
            self.torn = item
            return
        self.lines += 1
        if type(item) is Oversize:
            message = f"a line of {item.size} bytes, over the cap: skipped"
            self.problems.append(Problem("oversize", message, item.number, item.position))
            return
        assert type(item) is Line
        try:
            record = decode(item.data, ENVELOPE)
        except RecordError as exc:
            self.problems.append(Problem("corrupt", str(exc), item.number, item.position))
            return
        self.records += 1
        if self.ids is not None:
            self.ids.add(record.id)
        if self.folding:
            if record.parent != self.previous:
                self.linear = self.folding = False
            else:
                if self.records % CHECKPOINT_EVERY == 0:
                    self.checkpoints.append(self.now.copy())
                self.now.fold(record, item.position)
        self.previous = record.id
        if self.wanted is None or record.id == self.wanted:
            if self.leaf is None or self.wanted is None:
                self.leaf = (record.id, record.parent, item.position)
            if self.wanted is not None:
                self.folding = False  # the selected leaf is reached: the rest is read only


def _repeated(source: RecordSource, ids: _IdHashes) -> list[Problem]:
    """A ``duplicate_id`` problem for each later occurrence of a record id (up to
    :data:`REPEATED_SHOWN` ids), found by comparing the ids whose hashes repeat."""
    suspects, more = ids.repeated(REPEATED_SHOWN)
    if not suspects:
        return []
    first: dict[str, int] = {}
    problems: list[Problem] = []
    for item in source.scan():
        if type(item) is not Line:
            continue
        try:
            link = LINK.decode(item.data)
            if hash(link.id) not in suspects:
                continue
            decode(item.data, ENVELOPE)  # a line pass 1 refused is no record
        except (RecordError, msgspec.MsgspecError):
            continue
        if link.id in first:
            message = f"record id {link.id} was used before, at line {first[link.id]}"
            problems.append(Problem("duplicate_id", message, item.number, item.position))
        else:
            first[link.id] = item.number
    if more:
        message = f"{more} more record ids occur more than once (not listed)"
        problems.append(Problem("duplicate_id", message))
    return problems


def _fold_branch(
    source: RecordSource,
    rules: Rules,
    first: _FirstPass,
    problems: list[Problem],
    progress: PhaseProgress | None,
) -> tuple[_Checkpoint, int]:
    """Passes 2 and 3: stack the branch's positions walking back from the leaf — down to
    the root, or to a checkpoint of pass 1 the branch goes through — then fold those
    records in a forward scan from there."""
    assert first.leaf is not None
    leaf_id, wanted, leaf_position = first.leaf
    by_position = {c.position: c for c in first.checkpoints if c.position is not None}
    base = _Checkpoint(rules)
    with _PositionStack() as stack:
        stack.push(leaf_position)
        child = leaf_id
        for item in source.scan_back(leaf_position):
            if wanted is None:
                break
            if type(item) is not Line:
                continue
            try:
                link = LINK.decode(item.data)
                if link.id == wanted:
                    decode(item.data, ENVELOPE)  # a record pass 1 refused is not one
            except (RecordError, msgspec.MsgspecError):
                continue
            if link.id != wanted:
                continue
            resumed = by_position.get(item.position)
            if resumed is not None:
                base, wanted = resumed.copy(), None
                break
            stack.push(item.position)
            child, wanted = link.id, link.parent
        if wanted is not None:
            message = (
                f"record {child} names parent {wanted}, which is not before it: "
                "the branch is folded from there"
            )
            problems.append(Problem("missing_parent", message))
        return _fold_positions(source, rules, base, stack, problems, progress)


def _fold_positions(
    source: RecordSource,
    rules: Rules,
    base: _Checkpoint,
    stack: _PositionStack,
    problems: list[Problem],
    progress: PhaseProgress | None,
) -> tuple[_Checkpoint, int]:
    """Pass 3: fold the stacked records, in a forward scan after ``base``."""
    positions = iter(stack)
    target = next(positions, None)
    folded = base.state.records
    branch = (lambda n: progress("branch", n)) if progress else None
    for framed in source.scan(branch, after=base.position):
        if target is None:
            break
        if type(framed) is not Line or framed.position != target:
            continue
        try:
            record = decode(framed.data, ENVELOPE)
        except RecordError as exc:  # changed in place since pass 2: not append-only
            problems.append(Problem("corrupt", str(exc), None, framed.position))
            break
        base.fold(record, framed.position)
        folded += 1
        target = next(positions, None)
    return base, folded


def _done(
    source: RecordSource,
    folded: _Checkpoint,
    first: _FirstPass,
    problems: list[Problem],
    branch: int,
    *,
    linear: bool,
) -> Replayed:
    state, refs = folded.state, None
    if state.refs is not None:
        refs = _load_refs(source, state.refs.snapshot, folded, problems)
        if refs is None:
            state = replace(state, refs=None, refs_status="unknown")
    report = ReplayReport(
        lines=first.lines,
        records=first.records,
        torn=first.torn,
        problems=tuple(problems),
        leaf=first.leaf[0] if first.leaf else None,
        leaf_position=first.leaf[2] if first.leaf else None,
        branch=branch,
        linear=linear,
    )
    return Replayed(state, refs, report)


def _load_refs(
    source: RecordSource, snapshot: str, folded: _Checkpoint, problems: list[Problem]
) -> RefMap | None:
    """The winning snapshot's ref map, read by position: the one body replay loads."""
    position = folded.snapshot_position(snapshot)
    data = source.read(position) if position is not None else None
    try:
        record = decode(data, FULL) if data is not None else None
    except RecordError:
        record = None
    if not isinstance(record, Snapshot) or record.id != snapshot:
        message = f"snapshot record {snapshot} cannot be read"
        problems.append(Problem("unknown_snapshot", message, position=position))
        return None
    return RefMap(record.number, record.generation, record.shared_ids)


class _Spilled:
    """Integers in memory up to :data:`STACK_IN_MEMORY`, then in blocks written to an
    unnamed temporary file (closed on exit)."""

    def __init__(self, limit: int | None = None) -> None:
        self._limit = limit or STACK_IN_MEMORY
        self._memory = array("q")
        self._spill: IO[bytes] | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        if self._spill is not None:
            self._spill.close()

    def _write(self, block: array[int]) -> tuple[IO[bytes], int]:
        """Append ``block`` to the file; the file and the block's byte offset."""
        if self._spill is None:
            self._spill = tempfile.TemporaryFile()  # noqa: SIM115 - closed by __exit__
        offset = self._spill.seek(0, os.SEEK_END)
        block.tofile(self._spill)
        self._memory = array("q")
        return self._spill, offset


class _PositionStack(_Spilled):
    """Integers pushed (in decreasing order), iterated last pushed first. Past
    :data:`STACK_IN_MEMORY` entries, full blocks spill to an unnamed temporary file."""

    def __init__(self, limit: int | None = None) -> None:
        super().__init__(limit)
        self._blocks = 0

    def push(self, value: int) -> None:
        self._memory.append(value)
        if len(self._memory) >= self._limit:
            self._write(self._memory)
            self._blocks += 1

    def __iter__(self) -> Iterator[int]:
        yield from reversed(self._memory)
        for block in reversed(range(self._blocks)):
            assert self._spill is not None
            values = array("q")
            self._spill.seek(block * self._limit * values.itemsize)
            values.fromfile(self._spill, self._limit)
            yield from reversed(values)


class _IdHashes(_Spilled):
    """64-bit hashes of record ids (Python's ``hash``: one process, one seed), to find
    the repeated ones in bounded memory: past the bound each block is sorted and spilled
    (:class:`_Spilled`), and the sorted runs are merged when asked. Equal hashes are only
    suspects: two ids may share one."""

    _CHUNK: Final = 4096

    def __init__(self, limit: int | None = None) -> None:
        super().__init__(limit)
        self._runs: list[tuple[int, int]] = []  # (byte offset, count) of each sorted run

    def add(self, record_id: str) -> None:
        self._memory.append(hash(record_id))
        if len(self._memory) >= self._limit:
            count = len(self._memory)
            _, offset = self._write(array("q", sorted(self._memory)))
            self._runs.append((offset, count))

    def repeated(self, most: int) -> tuple[set[int], int]:
        """Up to ``most`` hashes that occur more than once, and how many more do."""
        runs = [iter(sorted(self._memory)), *(self._run(*run) for run in self._runs)]
        found: set[int] = set()
        more = 0
        for value, equal in groupby(heapq.merge(*runs)):
            if len(list(islice(equal, 2))) < 2:
                continue
            if len(found) < most:
                found.add(value)
            else:
                more += 1
        return found, more

    def _run(self, offset: int, count: int) -> Iterator[int]:
        assert self._spill is not None
        done = 0
        while done < count:
            values = array("q")
            self._spill.seek(offset + done * values.itemsize)
            values.fromfile(self._spill, min(self._CHUNK, count - done))
            done += len(values)
            yield from values
