"""Journal test helpers: a branch of records made one after another, and journal files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sitekeep.journal import records
from sitekeep.journal.records import Begin, Record
from sitekeep.journal.reducer import Rules, SessionState, fold

RULES = Rules(ttl=3600.0, cap=100)
GEN = "session-1:1700000000.000000"
T0 = 1_700_000_000.0


class Chain:
    """Records made one after another on one branch, and the state they fold to."""

    def __init__(self, rules: Rules = RULES) -> None:
        self.rules = rules
        self.state = SessionState()
        self.made: list[Record] = []
        self.clock = T0

    def add(self, record: Record) -> Record:
        self.made.append(record)
        self.state = fold(self.state, record, self.rules)
        return record

    def tick(self, seconds: float = 1.0) -> float:
        self.clock += seconds
        return self.clock

    def begin(self, op: str = "click", **args: object) -> Begin:
        started = records.begin(
            op, args, parent=self.state.head, call=records.new_id(), at=self.tick()
        )
        self.add(started)
        return started

    def op(
        self, op: str = "click", *, page: str = "https://a.example.test/", **effects: object
    ) -> records.Finish:
        started = self.begin(op)
        effects.setdefault("generation", GEN)
        done = records.finish(
            started,
            "ok",
            parent=self.state.head or started.id,
            pages=[page],
            page=page,
            at=self.tick(),
            **effects,  # type: ignore[arg-type]
        )
        self.add(done)
        return done

    def snapshot(self, number: int, generation: str = GEN) -> str:
        started = self.begin("snapshot")
        snap = records.snapshot(
            started, number, generation, [f"n{i}" for i in range(3)], parent=started.id
        )
        self.add(snap)
        done = records.finish(
            started,
            "ok",
            parent=snap.id,
            refs="replaced",
            snapshot=snap.id,
            generation=generation,
            at=self.tick(),
        )
        self.add(done)
        return snap.id

    def lines(self) -> bytes:
        return b"".join(records.encode(r) for r in self.made)


def write_journal(path: Path, parts: Iterable[bytes | Record]) -> Path:
    """A journal file of records (encoded) and raw byte strings, in order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(p if isinstance(p, bytes) else records.encode(p) for p in parts))
    return path
