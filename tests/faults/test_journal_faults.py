"""Journal files under real faults (SPEC §8, §17): a full file system, a failing disk, a
writer killed mid-append, a corrupt middle line.

Real faults wherever the machine can make them: ENOSPC from a tmpfs mounted with a size
limit; EIO from ext4 on a loop device whose backing file sits on a tmpfs too small for it
(the kernel reports the failed block writes as EIO at fsync); ``kill -9`` of a real writer
process. Mounting needs root (as on CI); without it those tests skip and say so. Only two
cases use fault injection at the OS-call seam, because no real device gives them on
demand: an EIO from ``fsync`` whose rollback then works, and a rollback that fails on a
file system that still takes writes.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from journal_support import GEN, RULES
from sitekeep.errors import JournalUnavailable
from sitekeep.journal import Journal, JournalKey, records
from sitekeep.journal.files import FileJournal
from sitekeep.journal.framing import FileSource
from sitekeep.journal.replay import Replayed, replay

pytestmark = pytest.mark.anyio

KEY = JournalKey("tenant-a", "session-1")


def replay_path(path: Path) -> Replayed:
    with FileSource(path, max_record=1 << 24) as source:
        return replay(source, RULES)


async def write_ops(journal: Journal, count: int, acked: list[str], *, refs: int = 0) -> None:
    """Write ``count`` begin/snapshot pairs (``refs`` ids of 100 bytes each in the
    snapshot), adding each acknowledged id to ``acked``; the first failure raises."""
    head = await journal.head(KEY)
    for _ in range(count):
        started = records.begin("snapshot", {}, parent=head, call=records.new_id())
        snap = records.snapshot(started, 1, GEN, ["x" * 100] * refs, parent=started.id)
        for record in (started, snap):
            await journal.write(KEY, record)
            acked.append(record.id)
            head = record.id


async def test_enospc_commits_nothing_and_the_journal_continues_once_space_is_back(
    small_tmpfs: Path,
) -> None:
    journal = Journal(FileJournal(small_tmpfs / "journal"), RULES)
    filler = small_tmpfs / "filler"
    filler.write_bytes(b"\0" * 64 * 1024)
    acked: list[str] = []
    with pytest.raises(JournalUnavailable) as raised:
        while True:
            await write_ops(journal, 1, acked, refs=60)
    assert raised.value.errno == errno.ENOSPC
    path = FileJournal(small_tmpfs / "journal").path(KEY)
    before = replay_path(path)
    assert before.report.ok and before.report.torn is None
    assert before.state.head == acked[-1] and before.state.records == len(acked)

    filler.unlink()
    await write_ops(journal, 1, acked, refs=60)
    after = replay_path(path)
    assert after.report.ok and after.report.linear
    assert after.state.head == acked[-1] and after.state.records == len(acked)


async def test_eio_on_a_failing_disk_keeps_every_acknowledged_record(
    failing_disk: tuple[Path, Callable[[], Path]],
) -> None:
    mnt, remount = failing_disk
    journal = Journal(FileJournal(mnt / "journal"), RULES)
    acked: list[str] = []
    with pytest.raises(JournalUnavailable) as raised:
        for _ in range(1000):
            await write_ops(journal, 1, acked, refs=600)
    assert raised.value.errno == errno.EIO
    assert acked, "the disk failed before the first record"
    with pytest.raises(JournalUnavailable):  # the disk is gone, or the stream is refused
        await write_ops(journal, 1, [])

    path = FileJournal(remount() / "journal").path(KEY)
    result = replay_path(path)
    assert result.report.ok and result.report.torn is None
    assert result.state.head == acked[-1] and result.state.records == len(acked)


async def test_an_fsync_error_is_rolled_back_and_the_next_append_continues_the_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected at the OS-call seam: an EIO from fsync on a disk that then recovers."""
    journal = Journal(FileJournal(tmp_path / "journal"), RULES)
    acked: list[str] = []
    await write_ops(journal, 2, acked)
    real_fsync = os.fsync
    failures = iter([OSError(errno.EIO, os.strerror(errno.EIO))])

    def fsync_once(fd: int) -> None:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        real_fsync(fd)

    monkeypatch.setattr("sitekeep.journal.files.os.fsync", fsync_once)
    with pytest.raises(JournalUnavailable, match="nothing was committed") as raised:
        await write_ops(journal, 1, [])
    assert raised.value.errno == errno.EIO
    path = FileJournal(tmp_path / "journal").path(KEY)
    assert replay_path(path).state.head == acked[-1]
    await write_ops(journal, 1, acked)
    result = replay_path(path)
    assert result.report.ok and result.report.linear and result.state.records == len(acked)


async def test_a_failed_rollback_refuses_the_stream_until_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected at the OS-call seam: write fails, and so does the truncate that undoes it."""
    backend = FileJournal(tmp_path / "journal")
    journal = Journal(backend, RULES)
    acked: list[str] = []
    await write_ops(journal, 1, acked)

    def no_space(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def no_truncate(fd: int, size: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with monkeypatch.context() as patch:
        patch.setattr("sitekeep.journal.files.os.write", no_space)
        patch.setattr("sitekeep.journal.files.os.ftruncate", no_truncate)
        with pytest.raises(JournalUnavailable, match="may or may not be on disk"):
            await write_ops(journal, 1, [])
    with pytest.raises(JournalUnavailable, match="restart"):
        await write_ops(journal, 1, [])
    restarted = Journal(FileJournal(tmp_path / "journal"), RULES)
    await write_ops(restarted, 1, acked)
    assert replay_path(backend.path(KEY)).state.records == len(acked)


WRITER = textwrap.dedent(
    """
    import sys
    import anyio
    from pathlib import Path
    from sitekeep.journal import Journal, JournalKey, records
    from sitekeep.journal.files import FileJournal

    async def main() -> None:
        journal = Journal(FileJournal(Path(sys.argv[1])))
        key = JournalKey("tenant-a", "session-1")
        head = await journal.head(key)
        while True:
            started = records.begin("snapshot", {}, parent=head, call=records.new_id())
            snap = records.snapshot(started, 1, "g:1", ["y" * 100] * 20000, parent=started.id)
            for record in (started, snap):
                print("intent", record.id, flush=True)
                await journal.write(key, record)
                print("acked", record.id, flush=True)
                head = record.id

    anyio.run(main)
    """
)


def kill_writer_mid_append(root: Path) -> tuple[list[str], str | None]:
    """Start a writer of 2 MB records, kill -9 it while a line is half written (or after
    a deadline), and return the ids it acknowledged and the one it was writing."""
    path = FileJournal(root).path(KEY)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    acked: list[str] = []
    intent: str | None = None
    deadline = time.monotonic() + 60
    with writer.stdout:
        try:
            while len(acked) < 3 and time.monotonic() < deadline:
                line = writer.stdout.readline()
                if not line:
                    pytest.fail(f"the writer stopped (exit status {writer.wait()})")
                kind, record = line.split()
                if kind == "acked":
                    acked.append(record)
            while time.monotonic() < deadline:
                size = path.stat().st_size
                with path.open("rb") as file:
                    file.seek(max(0, size - 1))
                    if file.read(1) not in (b"\n", b""):
                        break  # a line is being written right now
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait()
        for line in writer.stdout.read().splitlines():
            kind, record = line.split()
            if kind == "acked":
                acked.append(record)
            intent = record
    return acked, intent


async def test_kill_9_mid_append_leaves_a_torn_tail_that_is_ignored_then_dropped(
    tmp_path: Path,
) -> None:
    root = tmp_path / "journal"
    path = FileJournal(root).path(KEY)
    acked: list[str] = []
    torn_seen = 0
    for _ in range(3):
        more, intent = kill_writer_mid_append(root)
        acked += more
        result = replay_path(path)
        assert result.report.ok and result.report.linear
        torn_seen += result.report.torn is not None
        # Every acknowledged record is on the branch; at most the one being written more.
        assert result.state.head in (acked[-1], intent)
        assert result.state.records in (len(acked), len(acked) + 1)
        if result.state.head == intent and intent is not None and intent != acked[-1]:
            acked.append(intent)  # it reached the disk before the kill: it is committed
    journal = Journal(FileJournal(root), RULES)
    await write_ops(journal, 1, acked)
    final = replay_path(path)
    assert final.report.ok and final.report.torn is None and final.report.linear
    assert final.state.records == len(acked) and final.state.head == acked[-1]
    assert torn_seen >= 1, "no kill landed mid-write in three tries"


async def test_a_corrupt_middle_line_is_reported_with_its_line_and_byte_offset(
    tmp_path: Path,
) -> None:
    journal = Journal(FileJournal(tmp_path / "journal"), RULES)
    await write_ops(journal, 3, [])
    path = FileJournal(tmp_path / "journal").path(KEY)
    lines = path.read_bytes().splitlines(keepends=True)
    offset = sum(len(line) for line in lines[:2])
    with path.open("r+b") as file:  # bit rot in line 3, its length unchanged
        file.seek(offset + 10)
        file.write(b"\x00\x01")
    result = replay_path(path)
    corrupt = [p for p in result.report.problems if p.kind == "corrupt"]
    assert [(p.line, p.position) for p in corrupt] == [(3, offset)]
    assert any(p.kind == "missing_parent" for p in result.report.problems)


def test_tmpfs_and_loop_tools_are_present() -> None:
    """The fault tests above need these; their absence must show, not skip silently."""
    for tool in ("mount", "umount", "losetup", "mkfs.ext4"):
        assert shutil.which(tool), tool
