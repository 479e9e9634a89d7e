"""``sitekeep.journal.framing`` and ``replay``: committed lines only, ancestry from the
selected leaf, the winning snapshot body only, memory bounded (SPEC §8)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from journal_support import GEN, RULES, Chain, write_journal
from sitekeep.journal import records
from sitekeep.journal.framing import FileSource, Line, Oversize, Torn
from sitekeep.journal.reducer import fold_all
from sitekeep.journal.replay import Replayed, _PositionStack, replay


def replay_file(path: Path, *, leaf: str | None = None, cap: int = 1 << 20) -> Replayed:
    with FileSource(path, max_record=cap, chunk=4096) as source:
        return replay(source, RULES, leaf=leaf)


def session(chain: Chain) -> Chain:
    chain.op("navigate", page="https://a.example.test/", refs="invalidated")
    chain.snapshot(1)
    chain.op("click", page="https://b.example.test/cart")
    chain.snapshot(2)
    chain.add(records.mark("saved", parent=chain.state.head, detail={"cookies": 2}))
    chain.op("read", page="https://b.example.test/cart", refs="reused")
    return chain


# --- framing ----------------------------------------------------------------------------

line_bodies = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x")), max_size=30)


@settings(max_examples=200, deadline=None)
@given(
    bodies=line_bodies,
    tail=st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"x")),
    chunk=st.integers(1, 50),
    cap=st.integers(2, 30),
)
def test_scans_forward_and_backward_agree_at_every_chunk_size(
    tmp_path_factory: pytest.TempPathFactory, bodies: list[bytes], tail: bytes, chunk: int, cap: int
) -> None:
    path = tmp_path_factory.mktemp("framing") / "j.jsonl"
    path.write_bytes(b"".join(b + b"\n" for b in bodies) + tail)
    with FileSource(path, max_record=cap, chunk=chunk) as source:
        forward = list(source.scan())
        expected: list[Line | Oversize | Torn] = []
        position = 0
        for number, body in enumerate(bodies, 1):
            size = len(body) + 1
            item = Line(position, number, body) if size <= cap else Oversize(position, number, size)
            expected.append(item)
            position += size
        if tail:
            expected.append(Torn(position, len(tail)))
        assert forward == expected
        complete = [i for i in forward if not isinstance(i, Torn)]
        for index, item in enumerate([*complete, None]):
            before = item.position if item is not None else position
            back = list(source.scan_back(before))
            assert [(b.position, getattr(b, "data", None)) for b in back] == [
                (i.position, getattr(i, "data", None)) for i in reversed(complete[:index])
            ]
        for item in complete:
            assert source.read(item.position) == (item.data if isinstance(item, Line) else None)


def test_an_oversize_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    big = 8 * 1024 * 1024
    path = tmp_path / "j.jsonl"
    with path.open("wb") as out:
        out.write(b"first\n")
        for _ in range(big // 65536):
            out.write(b"x" * 65536)
        out.write(b"\nlast\n")
    with FileSource(path, max_record=64 * 1024, chunk=64 * 1024) as source:
        tracemalloc.start()
        forward = list(source.scan())
        back = list(source.scan_back(source.size))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert [type(i).__name__ for i in forward] == ["Line", "Oversize", "Line"]
    assert forward[1] == Oversize(6, 2, big + 1)
    assert [type(i).__name__ for i in back] == ["Line", "Oversize", "Line"]
    assert peak < 1024 * 1024, f"{peak} bytes held while skipping {big} bytes"


# --- replay -----------------------------------------------------------------------------


def test_replay_equals_the_live_fold(tmp_path: Path) -> None:
    chain = session(Chain())
    result = replay_file(write_journal(tmp_path / "j.jsonl", chain.made))
    assert result.state == chain.state
    assert result.report.ok and result.report.linear and result.report.torn is None
    assert result.report.records == result.report.branch == len(chain.made)
    assert result.refs is not None
    assert (result.refs.snapshot, result.refs.generation) == (2, GEN)
    assert result.refs.shared_ids == ("n0", "n1", "n2")


def test_a_torn_tail_is_reported_as_uncommitted_and_not_folded(tmp_path: Path) -> None:
    chain = session(Chain())
    committed = chain.state
    extra = chain.op("navigate", page="https://c.example.test/")
    line = records.encode(extra)
    path = write_journal(tmp_path / "j.jsonl", [*chain.made[:-1], line[: len(line) // 2]])
    result = replay_file(path)
    assert result.report.torn is not None
    assert result.report.torn.size == len(line) // 2
    assert result.report.ok  # a torn tail is not a fault: that append never returned
    assert result.state.head == chain.made[-2].id
    assert result.state.url == committed.url


def test_a_corrupt_middle_line_is_reported_with_its_line_and_byte_offset(tmp_path: Path) -> None:
    chain = session(Chain())
    lines = [records.encode(r) for r in chain.made]
    broken = 4
    lines[broken] = b'{"type":"begin","v":1,"id":\x00 garbage}\n'
    path = write_journal(tmp_path / "j.jsonl", lines)
    result = replay_file(path)
    corrupt = [p for p in result.report.problems if p.kind == "corrupt"]
    assert len(corrupt) == 1
    assert corrupt[0].line == broken + 1
    assert corrupt[0].position == sum(len(x) for x in lines[:broken])
    assert any(p.kind == "missing_parent" for p in result.report.problems)
    assert not result.report.ok and not result.report.linear


def test_a_fork_is_replayed_along_the_selected_leafs_ancestry(tmp_path: Path) -> None:
    trunk = Chain()
    trunk.op("navigate", page="https://a.example.test/")
    trunk.snapshot(1)
    fork_point = trunk.state
    branch_a = Chain()
    branch_a.state, branch_a.clock = fork_point, trunk.clock
    branch_a.op("navigate", page="https://left.example.test/", refs="invalidated")
    branch_b = Chain()
    branch_b.state, branch_b.clock = fork_point, branch_a.clock
    branch_b.op("click", page="https://right.example.test/", refs="reused")
    branch_b.op("read", page="https://right.example.test/", refs="reused")
    interleaved = [*trunk.made, branch_b.made[0], *branch_a.made, *branch_b.made[1:]]
    path = write_journal(tmp_path / "j.jsonl", interleaved)

    default = replay_file(path)
    assert default.state == branch_b.state
    assert default.report.ok and not default.report.linear
    assert default.report.branch == len(trunk.made) + len(branch_b.made)
    assert default.refs is not None and default.refs.snapshot == 1

    left = replay_file(path, leaf=branch_a.made[-1].id)
    assert left.state == branch_a.state and left.refs is None

    unknown = replay_file(path, leaf="f" * 32)
    assert [p.kind for p in unknown.report.problems] == ["unknown_leaf"]


def test_a_leaf_in_the_middle_of_a_linear_journal_replays_its_prefix(tmp_path: Path) -> None:
    chain = Chain()
    chain.op("navigate", page="https://a.example.test/")
    middle = chain.state
    chain.op("navigate", page="https://b.example.test/")
    result = replay_file(write_journal(tmp_path / "j.jsonl", chain.made), leaf=middle.head)
    assert result.state == middle and result.report.linear


def test_only_the_winning_snapshot_body_is_read(tmp_path: Path) -> None:
    chain = Chain()
    for number in range(1, 30):
        chain.snapshot(number)
    path = write_journal(tmp_path / "j.jsonl", chain.made)

    reads: list[int] = []

    class Counting(FileSource):
        def read(self, position: int) -> bytes | None:
            reads.append(position)
            return super().read(position)

    with Counting(path, max_record=1 << 20) as source:
        result = replay(source, RULES)
    assert result.refs is not None and result.refs.snapshot == 29
    assert len(reads) == 1


def test_an_oversize_record_off_the_branch_is_skipped_and_reported(tmp_path: Path) -> None:
    chain = session(Chain())
    huge = b'{"type":"mark","pad":"' + b"x" * 200_000 + b'"}\n'
    path = write_journal(tmp_path / "j.jsonl", [*chain.made[:3], huge, *chain.made[3:]])
    result = replay_file(path, cap=64 * 1024)
    assert [(p.kind, p.line) for p in result.report.problems] == [("oversize", 4)]
    assert result.state == chain.state and result.report.linear


def test_a_long_branch_spills_its_positions_and_folds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sitekeep.journal.replay.STACK_IN_MEMORY", 4)
    chain = Chain()
    stray = records.mark("cleared", parent=None)  # a root of its own: a fork from the start
    for index in range(25):
        chain.op("navigate", page=f"https://h{index % 4}.example.test/{index}")
    path = write_journal(tmp_path / "j.jsonl", [stray, *chain.made])
    result = replay_file(path)
    assert not result.report.linear and result.state == chain.state
    assert result.state == fold_all(chain.made, RULES)


@pytest.mark.parametrize("in_memory", [4, 1 << 17], ids=["spilled", "in-memory"])
def test_a_record_id_used_twice_is_reported_on_its_later_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory: int
) -> None:
    monkeypatch.setattr("sitekeep.journal.replay.STACK_IN_MEMORY", in_memory)
    chain = Chain()
    for index in range(21):
        chain.op("navigate", page=f"https://h{index % 4}.example.test/{index}")
    twice, thrice = chain.made[3], chain.made[30]
    path = write_journal(tmp_path / "j.jsonl", [*chain.made, twice, thrice, thrice])
    with FileSource(path, max_record=1 << 20, chunk=4096) as source:
        plain = replay(source, RULES)
        checked = replay(source, RULES, duplicates=True)
    assert plain.report.ok, "only asked for does replay compare ids"
    found = [(p.kind, p.line) for p in checked.report.problems]
    assert found == [("duplicate_id", 43), ("duplicate_id", 44), ("duplicate_id", 45)]
    assert "at line 4" in checked.report.problems[0].message
    assert "at line 31" in checked.report.problems[2].message
    assert checked.state == plain.state


def test_past_a_hundred_repeated_ids_one_problem_counts_the_rest(tmp_path: Path) -> None:
    chain = Chain()
    for index in range(60):
        chain.op("navigate", page=f"https://h{index % 4}.example.test/{index}")
    path = write_journal(tmp_path / "j.jsonl", [*chain.made, *chain.made[:105]])
    with FileSource(path, max_record=1 << 20, chunk=4096) as source:
        problems = replay(source, RULES, duplicates=True).report.problems
    assert len(problems) == 101 and {p.kind for p in problems} == {"duplicate_id"}
    assert problems[-1].message.startswith("5 more record ids") and problems[-1].line is None


def test_the_position_stack_returns_what_was_pushed_last_first() -> None:
    with _PositionStack(limit=3) as stack:
        for value in range(100, 0, -7):
            stack.push(value)
        assert list(stack) == sorted(range(100, 0, -7))


def test_an_empty_or_missing_journal_replays_to_an_empty_session(tmp_path: Path) -> None:
    result = replay_file(write_journal(tmp_path / "j.jsonl", []))
    assert result.state.head is None and result.report.ok and result.refs is None


def test_a_fork_near_the_end_resumes_from_a_checkpoint_of_the_first_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sitekeep.journal.replay.CHECKPOINT_EVERY", 4)
    trunk = Chain()
    for index in range(20):
        trunk.op("navigate", page=f"https://h{index % 3}.example.test/{index}")
    trunk.snapshot(1)
    side = Chain()
    side.state, side.clock = fold_all(trunk.made[:-8], RULES), trunk.clock
    side.op("read", page="https://side.example.test/", refs="reused")
    path = write_journal(tmp_path / "j.jsonl", [*trunk.made, *side.made])
    walked: list[int] = []

    class Spy(FileSource):
        def scan_back(self, before: int) -> Iterator[Line | Oversize]:
            for item in super().scan_back(before):
                walked.append(item.position)
                yield item

    with Spy(path, max_record=1 << 20, chunk=4096) as source:
        result = replay(source, RULES)
    assert result.state == side.state and not result.report.linear
    assert result.report.branch == len(trunk.made) - 8 + len(side.made)
    assert 0 < len(walked) < 12, "the walk went past the checkpoint"


def test_replay_memory_stays_bounded_past_an_oversize_record_and_a_fork(tmp_path: Path) -> None:
    chain = session(Chain())
    path = tmp_path / "j.jsonl"
    with path.open("wb") as out:
        out.write(chain.lines())
        out.write(b'{"type":"mark","pad":"')
        for _ in range(128):
            out.write(b"x" * 65536)
        out.write(b'"}\n')
        stray = records.mark("cleared", parent=chain.made[2].id)  # a fork: pass 2 and 3 run
        out.write(records.encode(stray))
    with FileSource(path, max_record=64 * 1024, chunk=64 * 1024) as source:
        tracemalloc.start()
        result = replay(source, RULES)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert result.report.leaf == stray.id and not result.report.linear
    assert [p.kind for p in result.report.problems] == ["oversize"]
    assert peak < 1024 * 1024, f"{peak} bytes held replaying past an 8 MiB line"
