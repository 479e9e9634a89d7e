"""JSON-lines journal files in the data dir: the embedded default (SPEC §8).

One file per session, ``<root>/<tenant>/<key>.jsonl`` (names percent-encoded, so no name
can leave its directory), mode 0600 in directories of mode 0700.

An append, under an exclusive ``flock`` on the file (so processes sharing a data dir —
``sitekeep serve`` and ``sitekeep mcp`` — never interleave):

1. drops a torn tail left by a writer that died mid-append (uncommitted by definition:
   that append never returned);
2. checks that the last valid record is the new record's ``parent`` (compare-and-append);
3. writes the line and ``fsync``\\s the file — and, for a new file, its directory — before
   returning: a begin is durable before the browser is touched.

On a failed write or fsync (ENOSPC, EIO…) the file is truncated back to its size before
the append and synced, then ``JournalUnavailable`` is raised: nothing is committed. If that
rollback fails too, the bytes may or may not be on disk, so this backend refuses further
appends to the stream for the rest of the process (a replay after a restart shows a
begin that made it as unsettled, which is the safe reading). What a power cut does to a
file whose fsync returned is the file system's promise, not this module's.

Blocking calls run in worker threads (``anyio.to_thread``).
"""

from __future__ import annotations

import errno as errnos
import fcntl
import logging
import os
from pathlib import Path

import anyio.to_thread

from sitekeep.errors import InvalidInput, JournalConflict, JournalUnavailable, RecordTooLarge
from sitekeep.journal.base import Entry, JournalKey, decode_name, encode_name
from sitekeep.journal.framing import FileSource, Line
from sitekeep.journal.records import ENVELOPE, MAX_RECORD, RecordError, decode

__all__ = ["FileJournal", "JournalFile"]

log = logging.getLogger(__name__)

SUFFIX = ".jsonl"


class FileJournal:
    """Journal streams as files under ``root`` (see the module docstring).

    Args:
        root: the journal directory, created (mode 0700) on first append.
        max_record: the cap on one line in bytes, newline included.
    """

    durability = "fsync"

    def __init__(self, root: Path, *, max_record: int = MAX_RECORD) -> None:
        self.root = root
        self.max_record = max_record
        self._poisoned: set[JournalKey] = set()
        self._heads: dict[JournalKey, tuple[tuple[int, ...], str]] = {}
        """Per stream, after this process's last append to it: the file's identity then
        (device, inode, size, mtime and ctime in ns) and the record appended. A file found
        the same under the lock was written by no one since, so that record is its head
        without reading the file back; any other writer (another process, a removal, a
        torn tail cut) changes its size or times."""

    def path(self, key: JournalKey) -> Path:
        """The file of ``key``'s stream."""
        return self.root / encode_name(key.tenant) / f"{encode_name(key.key)}{SUFFIX}"

    # -- append ---------------------------------------------------------------------------

    async def append(self, key: JournalKey, line: bytes, *, record: str, parent: str | None) -> str:
        return await anyio.to_thread.run_sync(self._append, key, line, record, parent)

    def _append(self, key: JournalKey, line: bytes, record: str, parent: str | None) -> str:
        if len(line) > self.max_record:
            raise RecordTooLarge(size=len(line), cap=self.max_record)
        if not line.endswith(b"\n") or b"\n" in line[:-1]:
            raise ValueError("a journal line is one record ending in a newline")
        if key in self._poisoned:
            raise JournalUnavailable(
                "an earlier append to this journal could not be rolled back: "
                "restart the service so the journal is replayed before more is written"
            )
        path = self.path(key)
        try:
            created = self._make_dirs(path.parent) or not path.exists()
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise _unavailable("open", exc) from exc
        try:
            return self._append_locked(key, fd, path, line, record, parent, created)
        finally:
            os.close(fd)

    def _append_locked(
        self,
        key: JournalKey,
        fd: int,
        path: Path,
        line: bytes,
        record: str,
        parent: str | None,
        created: bool,
    ) -> str:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = self._seal(fd, path)
        except OSError as exc:
            raise _unavailable("prepare", exc) from exc
        head = self._known_head(key, fd)
        if head is None:
            head = self._head(path)
        if head != parent:
            raise JournalConflict(expected=parent, head=head)
        self._heads.pop(key, None)
        try:
            _write_all(fd, line)
            os.fsync(fd)
            if created:
                _fsync_dir(path.parent)
            self._remember(key, fd, record)
        except OSError as exc:
            if self._roll_back(key, fd, size):
                raise _unavailable("append", exc) from exc
            raise JournalUnavailable(
                f"the journal could not append a record ({_os_error(exc)}) nor take it back: "
                "it may or may not be on disk, and this journal takes no more records until "
                "the service restarts and replays it",
                errno=exc.errno,
            ) from exc
        return str(size)

    def _known_head(self, key: JournalKey, fd: int) -> str | None:
        """The record this process appended last to ``key``'s file when no one wrote to
        the file since (see ``_heads``); None when the head must be read."""
        known = self._heads.get(key)
        if known is None or known[0] != _identity(fd):
            return None
        return known[1]

    def _remember(self, key: JournalKey, fd: int, record: str) -> None:
        self._heads[key] = (_identity(fd), record)

    def _seal(self, fd: int, path: Path) -> int:
        """Drop a torn tail (bytes after the last newline); the file's committed size."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return size
        keep = _last_newline_end(fd, size)
        log.warning("journal %s: dropped a torn tail of %d bytes", path.name, size - keep)
        os.ftruncate(fd, keep)
        os.fsync(fd)
        return keep

    def _head(self, path: Path) -> str | None:
        """The id of the last valid record (what replay takes as the previous one)."""
        with FileSource(path, max_record=self.max_record, chunk=64 * 1024) as source:
            for item in source.scan_back(source.size):
                if isinstance(item, Line):
                    try:
                        return str(decode(item.data, ENVELOPE).id)
                    except RecordError:
                        continue
        return None

    def _roll_back(self, key: JournalKey, fd: int, size: int) -> bool:
        """Truncate a failed append away; False (and the stream refused) if that fails."""
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        except OSError as exc:
            self._poisoned.add(key)
            log.error("journal append could not be rolled back (%s): stream refused", exc)
            return False
        return True

    def _make_dirs(self, directory: Path) -> bool:
        """Create ``directory`` and its missing parents (mode 0700), each made durable in
        its parent; whether any was created."""
        missing: list[Path] = []
        for candidate in (directory, *directory.parents):
            if candidate.exists():
                break
            missing.append(candidate)
        for made in reversed(missing):
            try:
                made.mkdir(mode=0o700)
            except FileExistsError:
                continue
            _fsync_dir(made.parent)
        return bool(missing)

    # -- reading --------------------------------------------------------------------------

    async def head(self, key: JournalKey) -> str | None:
        path = self.path(key)
        return await anyio.to_thread.run_sync(self._head, path) if path.exists() else None

    async def entries(self, key: JournalKey, *, after: str | None, limit: int) -> list[Entry]:
        return await anyio.to_thread.run_sync(self._entries, key, after, limit)

    def _entries(self, key: JournalKey, after: str | None, limit: int) -> list[Entry]:
        source = self.source(key)
        if source is None or limit <= 0:
            return []
        with source:
            position = _position(after) if after is not None else None
            found: list[Entry] = []
            for item in source.scan(after=position):
                if isinstance(item, Line):
                    found.append(Entry(str(item.position), item.data))
                    if len(found) >= limit:
                        break
            return found

    async def last(self, key: JournalKey, limit: int) -> list[Entry]:
        return await anyio.to_thread.run_sync(self._last, key, limit)

    def _last(self, key: JournalKey, limit: int) -> list[Entry]:
        source = self.source(key)
        if source is None or limit <= 0:
            return []
        with source:
            found: list[Entry] = []
            for item in source.scan_back(source.size):
                if isinstance(item, Line):
                    found.append(Entry(str(item.position), item.data))
                    if len(found) >= limit:
                        break
            return found[::-1]

    def source(self, key: JournalKey) -> FileSource | None:
        try:
            return FileSource(self.path(key), max_record=self.max_record)
        except FileNotFoundError:
            return None

    async def keys(self, tenant: str | None = None) -> list[JournalKey]:
        return await anyio.to_thread.run_sync(self._keys, tenant)

    def _keys(self, tenant: str | None) -> list[JournalKey]:
        if tenant is not None:
            tenants = [self.root / encode_name(tenant)]
        else:
            tenants = [d for d in self.root.iterdir() if d.is_dir()] if self.root.is_dir() else []
        found = [
            JournalKey(decode_name(d.name), decode_name(f.name.removesuffix(SUFFIX)))
            for d in tenants
            if d.is_dir()
            for f in d.iterdir()
            if f.name.endswith(SUFFIX)
        ]
        return sorted(found)

    async def remove(self, key: JournalKey) -> bool:
        return await anyio.to_thread.run_sync(self._remove, key)

    def _remove(self, key: JournalKey) -> bool:
        path = self.path(key)
        self._poisoned.discard(key)
        self._heads.pop(key, None)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        _fsync_dir(path.parent)
        return True

    async def aclose(self) -> None:
        return None


class JournalFile(FileJournal):
    """One journal file read as the stream of any key (``sitekeep journal --file``: a
    copy taken aside keeps whatever name it was given)."""

    def __init__(self, path: Path, *, max_record: int = MAX_RECORD) -> None:
        super().__init__(path.parent, max_record=max_record)
        self.file = path

    def path(self, key: JournalKey) -> Path:
        return self.file


def _position(cursor: str) -> int:
    try:
        position = int(cursor)
    except ValueError:
        position = -1
    if position < 0:
        raise InvalidInput("after is a position from an earlier page", field="after")
    return position


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _identity(fd: int) -> tuple[int, ...]:
    stat = os.fstat(fd)
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _last_newline_end(fd: int, size: int, chunk: int = 64 * 1024) -> int:
    """The offset just after the last newline in the first ``size`` bytes (0: none)."""
    end = size
    while end > 0:
        start = max(0, end - chunk)
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def _os_error(exc: OSError) -> str:
    return f"{errnos.errorcode.get(exc.errno or 0, 'error')}: {os.strerror(exc.errno or 0)}"


def _unavailable(step: str, exc: OSError) -> JournalUnavailable:
    return JournalUnavailable(
        f"the journal could not {step} a record ({_os_error(exc)}); nothing was committed",
        errno=exc.errno,
    )
