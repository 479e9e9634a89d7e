"""The journal (SPEC §8, §16): append rate with fsync, and replay of a journal above 1 GiB
holding one record above 500 MB that replay must skip — throughput and peak memory.

Side by side in one run:

* **append** — ``Journal.write`` to JSON-lines files (write + fsync per record, the
  durable begin), beside the same lines written with no fsync (what durability costs) and
  ``Journal.write`` to Redis Streams on 127.0.0.1:6379 (a private key prefix, removed);
* **decode** — a record validated by the journal's ``msgspec`` decoder beside the standard
  library's untyped ``json.loads`` of the same line;
* **replay** — a generated journal (a realistic session: navigations, snapshots of 50 to
  400 refs, clicks, typing, saves; one mark of ``--huge`` MB nobody names; a side branch at
  the end) replayed in a child process, peak RSS the child's own (``VmHWM``, see
  :func:`measure`):
  sitekeep's replay along the side branch (all three passes), sitekeep's replay of the
  trunk (one pass), and the naive alternative — ``json.loads`` of every line — which
  must hold the huge line.

Targets (SPEC §16, issue #11): replay ≥ 200 MB/s, peak RSS ≤ 128 MB. The journal is
generated in a temp dir and deleted after. Run::

    .venv/bin/python bench/journal.py [--size-mb 1100] [--huge-mb 520] [--appends 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import redis
from rich.console import Console
from rich.table import Table

from sitekeep.journal import Journal, JournalKey, open_backend, records
from sitekeep.journal.records import (
    Begin,
    Effects,
    Finish,
    Mark,
    RefsEffect,
    Snapshot,
)

MB = 1_000_000
KEY = JournalKey("bench", "session")
GEN = "5f1c7e0d3b44b0c9a2e8:1796000000.123456"
ORIGINS = [f"https://shop{i}.example.test" for i in range(12)]
PATHS = ["/", "/cart", "/account/orders", "/search/results", "/product/12345/reviews"]
ENCODER = msgspec.json.Encoder()
console = Console()


# -- generation ---------------------------------------------------------------------------


class Generator:
    """A session's records on one branch, encoded without the builders' redaction (the
    arguments here hold nothing to redact) so a gigabyte is written in seconds."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.head: str | None = None
        self.at = 1_796_000_000.0
        self.snapshot_number = 0
        self.ids: list[str] = []

    def envelope(self, op: str | None, call: str | None) -> dict[str, Any]:
        self.at += self.rng.random()
        fresh = secrets.token_hex(16)
        envelope = {"v": 1, "id": fresh, "parent": self.head, "at": self.at}
        self.head = fresh
        self.ids.append(fresh)
        return {**envelope, "op": op, "call": call, "step": None}

    def page(self) -> str:
        return self.rng.choice(ORIGINS) + self.rng.choice(PATHS)

    def operation(self) -> list[bytes]:
        """One operation's records, encoded."""
        roll = self.rng.random()
        call = secrets.token_hex(16)
        op, args, refs = "click", {"ref": f"e{self.rng.randint(1, 150)}"}, "unknown"
        if roll < 0.2:
            op, args, refs = "navigate", {"url": self.page()}, "invalidated"
        elif roll < 0.35:
            op, args, refs = "snapshot", {}, "replaced"
        elif roll < 0.5:
            op, args = "type", {"ref": "e4", "text": {"length": 12}, "submit": False}
        elif roll < 0.6:
            op, args, refs = "read", {"selector": "main", "max_chars": 4000}, "reused"
        started = Begin(**self.envelope(op, call), args=args, generation=GEN)
        out = [ENCODER.encode(started)]
        snapshot_id = None
        if op == "snapshot":
            self.snapshot_number += 1
            ids = tuple(chromium_ids(self.rng.randint(50, 400)))
            snap = Snapshot(
                **self.envelope(op, call),
                number=self.snapshot_number,
                generation=GEN,
                count=len(ids),
                shared_ids=ids,
            )
            snapshot_id = snap.id
            out.append(ENCODER.encode(snap))
        page = self.page()
        done = Finish(
            **self.envelope(op, call),
            begin=started.id,
            outcome="ok",
            duration=self.rng.random(),
            effects=Effects(
                pages=(page,), page=page, refs=RefsEffect(refs, snapshot_id), generation=GEN
            ),
        )
        out.append(ENCODER.encode(done))
        if self.rng.random() < 0.02:
            note = Mark(**self.envelope(None, call), mark="saved", detail={"cookies": 14})
            out.append(ENCODER.encode(note))
        return [line + b"\n" for line in out]


def chromium_ids(count: int) -> list[str]:
    """``sharedId``s as Chromium makes them: frame and document ids of 32 hex digits and
    the node's number (``f.<frame>.d.<document>.e.<n>``); a snapshot keeps up to 400
    (``browser/page.py`` ``MAX_ELEMENTS``)."""
    frame, document = secrets.token_hex(16).upper(), secrets.token_hex(16).upper()
    return [f"f.{frame}.d.{document}.e.{n}" for n in range(1, count + 1)]


def generate(path: Path, size: int, huge: int, seed: int = 11) -> dict[str, Any]:
    """Write a journal of about ``size`` bytes holding one ``huge``-byte mark nobody names
    and a side branch at the end; what replay should find."""
    rng = random.Random(seed)
    trunk = Generator(rng)
    written = 0
    with path.open("wb") as out:
        huge_at = (size - huge) // 2
        while written < size - huge:
            for line in trunk.operation():
                written += out.write(line)
            if huge and written >= huge_at:
                written += write_huge(out, huge, parent=trunk.head)
                huge, huge_at = 0, size
        trunk_leaf = trunk.head
        side = Generator(rng)
        side.head, side.at = trunk.ids[-20], trunk.at
        for _ in range(5):
            for line in side.operation():
                written += out.write(line)
    return {"bytes": written, "trunk_leaf": trunk_leaf, "side_leaf": side.head}


def write_huge(out: Any, size: int, *, parent: str | None) -> int:
    """A mark line of ``size`` bytes (a pad string), written in 16 MB pieces."""
    head = (
        f'{{"type":"mark","v":1,"id":"{secrets.token_hex(16)}","parent":"{parent}",'
        '"at":1796000000.0,"op":null,"call":null,"step":null,"mark":"restored",'
        '"detail":{"pad":"'
    ).encode()
    tail = b'"}}\n'
    pad = size - len(head) - len(tail)
    written = out.write(head)
    piece = b"x" * (16 * MB)
    while pad > 0:
        written += out.write(piece[: min(pad, len(piece))])
        pad -= min(pad, len(piece))
    return written + out.write(tail)


# -- children: replay and the naive alternative --------------------------------------------


CHILD = """
import json, sys, time
kind, path, leaf = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)
if kind == "replay":
    from pathlib import Path
    from sitekeep.journal.framing import FileSource
    from sitekeep.journal.reducer import Rules
    from sitekeep.journal.replay import replay
started, cpu = time.perf_counter(), time.process_time()
if kind == "replay":
    with FileSource(Path(path), max_record=16 * 1024 * 1024) as source:
        result = replay(source, Rules(), leaf=leaf)
    summary = {
        "records": result.report.records,
        "branch": result.report.branch,
        "linear": result.report.linear,
        "problems": [p.kind for p in result.report.problems],
        "head": result.state.head,
        "refs": result.refs.snapshot if result.refs else None,
    }
else:
    count = 0
    with open(path, "rb") as lines:
        for line in lines:
            json.loads(line)
            count += 1
    summary = {"records": count}
summary["seconds"] = time.perf_counter() - started
summary["cpu"] = time.process_time() - cpu
with open("/proc/self/status") as status:
    summary["rss"] = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmHWM:"))
print(json.dumps(summary))
"""
"""A child process that imports only what it measures (its RSS is the figure)."""


def measure(kind: str, path: Path, leaf: str | None = None) -> dict[str, Any]:
    """Run a child; its summary with its peak RSS in bytes (``rss``).

    The peak is the child's own ``VmHWM`` (``/proc/self/status``: the high-water mark of
    the address space it has since ``exec``), not ``wait4``'s ``ru_maxrss``: Linux counts
    the parent's resident memory at the fork in a child's ``ru_maxrss``, so that figure
    was this bench's own size (the ids it generated, its decode sample, the modules it
    imports) whenever that was larger than the replay's (issue #25).
    """
    command = [sys.executable, "-c", CHILD, kind, str(path), *([leaf] if leaf else [])]
    done = subprocess.run(command, stdout=subprocess.PIPE, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{kind} child failed with {done.returncode}")
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


# -- append ---------------------------------------------------------------------------------


async def append_rate(url: str, count: int, refs: int) -> tuple[float, int]:
    """Seconds and bytes for ``count`` durable appends through ``Journal.write``."""
    journal = Journal(open_backend(url))
    made = [build(refs) for _ in range(count)]
    head = None
    chained = []
    for record in made:
        record = msgspec.structs.replace(record, parent=head)
        head = record.id
        chained.append(record)
    size = sum(len(records.encode(r)) for r in chained)
    started = time.perf_counter()
    for record in chained:
        await journal.write(KEY, record)
    elapsed = time.perf_counter() - started
    await journal.aclose()
    return elapsed, size


def build(refs: int) -> records.Record:
    started = records.begin(
        "click", {"ref": "e12"}, parent=None, call=records.new_id(), generation=GEN
    )
    if not refs:
        return started
    ids = chromium_ids(refs)
    return records.snapshot(started, 1, GEN, ids, parent=started.id)


def unsynced_rate(path: Path, lines: list[bytes]) -> float:
    started = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        for line in lines:
            os.write(fd, line)
    finally:
        os.close(fd)
    return time.perf_counter() - started


def decode_rates(lines: list[bytes]) -> tuple[float, float]:
    """Seconds per record: the journal's validating decoder, stdlib ``json.loads``."""
    started = time.perf_counter()
    for line in lines:
        records.decode(line[:-1], records.ENVELOPE)
    ours = (time.perf_counter() - started) / len(lines)
    started = time.perf_counter()
    for line in lines:
        json.loads(line)
    return ours, (time.perf_counter() - started) / len(lines)


# -- the run ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1100)
    parser.add_argument("--huge-mb", type=int, default=520)
    parser.add_argument("--appends", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sitekeep-bench-journal-") as tmp:
        appends(Path(tmp), args.appends)
        replays(Path(tmp), args.size_mb * MB, args.huge_mb * MB)


def appends(tmp: Path, count: int) -> None:
    prefix = f"sitekeep-bench-{secrets.token_hex(4)}:"
    rows = []
    for refs, label in ((0, "begin (~300 B)"), (400, "snapshot (~32 KB)")):
        n = count if not refs else max(10, count // 5)
        files, size = anyio.run(append_rate, f"file://{tmp}/append-{refs}", n, refs)
        redis_s, _ = anyio.run(append_rate, f"redis://127.0.0.1:6379/0?prefix={prefix}", n, refs)
        lines = [records.encode(build(refs)) for _ in range(n)]
        bare = unsynced_rate(tmp / f"bare-{refs}.jsonl", lines)
        rows.append((label, n, size, files, bare, redis_s))
        client = redis.Redis()
        for stale in client.scan_iter(match=f"{prefix}*"):
            client.delete(stale)
        client.close()
    table = Table(title="append (one record at a time, durable before returning)")
    for column in (
        "record",
        "n",
        "files+fsync rec/s",
        "MB/s",
        "no fsync rec/s",
        "redis rec/s",
        "fsync cost ×",
        "redis / files ×",
    ):
        table.add_column(column, justify="right")
    for label, n, size, files, bare, redis_s in rows:
        table.add_row(
            label,
            str(n),
            f"{n / files:,.0f}",
            f"{size / files / MB:.1f}",
            f"{n / bare:,.0f}",
            f"{n / redis_s:,.0f}",
            f"{files / bare:.0f}",
            f"{files / redis_s:.1f}",
        )
    console.print(table)


def replays(tmp: Path, size: int, huge: int) -> None:
    path = tmp / "big.jsonl"
    started = time.perf_counter()
    made = generate(path, size, huge)
    console.print(
        f"generated {made['bytes'] / MB:,.0f} MB (one mark of {huge / MB:,.0f} MB) "
        f"in {time.perf_counter() - started:.1f} s"
    )
    with path.open("rb") as file:
        sample = [file.readline() for _ in range(20000)]
    ours, stdlib = decode_rates([line for line in sample if len(line) < 100_000])
    console.print(
        f"decode: msgspec, validated {ours * 1e6:.2f} µs/record; json.loads, untyped "
        f"{stdlib * 1e6:.2f} µs/record ({stdlib / ours:.1f}× slower)"
    )
    side = measure("replay", path)
    trunk = measure("replay", path, made["trunk_leaf"])
    assert side["head"] == made["side_leaf"] and trunk["head"] == made["trunk_leaf"]
    assert side["problems"] == trunk["problems"] == ["oversize"]
    naive = measure("naive", path)
    table = Table(title=f"replay of {made['bytes'] / MB:,.0f} MB (child processes)")
    columns = (
        "reader",
        "records",
        "branch",
        "wall s",
        "cpu s",
        "MB/s wall",
        "MB/s cpu",
        "peak RSS MB",
        "cpu vs naive ×",
    )
    for column in columns:
        table.add_column(column, justify="right")
    for label, result in (
        ("sitekeep, side branch (3 passes)", side),
        ("sitekeep, trunk (1 pass)", trunk),
        ("naive json.loads per line", naive),
    ):
        table.add_row(
            label,
            f"{result['records']:,}",
            f"{result['branch']:,}" if "branch" in result else "-",
            f"{result['seconds']:.2f}",
            f"{result['cpu']:.2f}",
            f"{made['bytes'] / result['seconds'] / MB:,.0f}",
            f"{made['bytes'] / result['cpu'] / MB:,.0f}",
            f"{result['rss'] / MB:,.0f}",
            f"{naive['cpu'] / result['cpu']:.2f}",
        )
    console.print(table)
    load = os.getloadavg()[0]
    console.print(
        f"load average {load:.1f} on {os.cpu_count()} cores: on a shared machine wall time "
        "includes waiting for a core; cpu time is the replay's own work"
    )
    for label, result in (("side branch", side), ("trunk", trunk)):
        wall, cpu = (made["bytes"] / result[k] / MB for k in ("seconds", "cpu"))
        ok = min(wall, cpu) >= 200 and result["rss"] <= 128 * MB
        console.print(
            f"{label}: {wall:,.0f} MB/s wall, {cpu:,.0f} MB/s cpu, peak RSS "
            f"{result['rss'] / MB:,.0f} MB — target ≥ 200 MB/s and ≤ 128 MB: "
            f"{'met' if ok else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
