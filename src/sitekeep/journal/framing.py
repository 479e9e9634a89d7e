"""Newline framing of a journal file, read in bounded memory (SPEC §8 replay).

A record is committed when its line is complete: bytes up to and including a ``\\n``.
Bytes after the last newline are a torn tail — an append that never returned — and are
reported, never read as a record. A line longer than the record cap is skipped by
scanning for its newline without holding it: memory stays at one read chunk plus one
record of at most the cap, whatever the file's size.

:class:`FileSource` reads a file up to the size it had when opened, so appends that land
during a replay cannot change what it reads (the boundary is captured once).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeAlias

__all__ = ["CHUNK", "FileSource", "Framed", "Line", "Oversize", "Torn", "read_line_at"]

CHUNK: Final = 1024 * 1024
"""Bytes per read: large enough that the per-chunk cost vanishes, small beside the cap."""


@dataclass(frozen=True, slots=True)
class Line:
    """A complete line (``data`` without its newline) at byte ``position``, line
    ``number`` (1-based; 0 when read backwards, where numbers are not known)."""

    position: int
    number: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Oversize:
    """A complete line longer than the cap, skipped unread; ``size`` counts its newline."""

    position: int
    number: int
    size: int


@dataclass(frozen=True, slots=True)
class Torn:
    """Bytes after the last newline: an append that never completed (uncommitted)."""

    position: int
    size: int


Framed: TypeAlias = Line | Oversize | Torn
Progress = Callable[[int], None]
"""Called with the number of bytes just read."""


class FileSource:
    """The committed lines of one journal file, forwards, backwards or one by position.

    Args:
        path: the file. max_record: the cap on a line, newline included, in bytes.
        chunk: bytes per read (tests make it small to cross every boundary).
    """

    def __init__(self, path: Path, *, max_record: int, chunk: int = CHUNK) -> None:
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        self.size = os.fstat(self._file.fileno()).st_size
        self.max_record = max_record
        self.chunk = max(1, chunk)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> FileSource:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _pread(self, position: int, size: int) -> bytes:
        return os.pread(self._file.fileno(), size, position)

    def scan(
        self, progress: Progress | None = None, *, after: int | None = None
    ) -> Iterator[Framed]:
        """Every line in file order — or only those after the line at byte ``after`` —
        then the torn tail if there is one. Line numbers count from 1 where it starts."""
        fd, limit, cap = self._file.fileno(), self.size, self.max_record
        start = 0
        if after is not None:
            line = self.read(after)
            start = after + len(line) + 1 if line is not None else limit
        offset = start  # where the next read starts; ``start``: where the current line does
        number = 0
        carry = bytearray()  # the beginning of a line whose newline is not read yet
        skipping = False  # inside a line longer than the cap
        while offset < limit:
            chunk = os.pread(fd, min(self.chunk, limit - offset), offset)
            if not chunk:
                break
            base, offset = offset, offset + len(chunk)
            if progress is not None:
                progress(len(chunk))
            cut = chunk.find(b"\n")
            if (skipping or carry) and cut < 0:
                if not skipping:
                    carry += chunk
                    if len(carry) >= cap:
                        skipping, carry = True, bytearray()
                continue
            if skipping or carry:
                number += 1
                size = base + cut + 1 - start
                if skipping or size > cap:
                    yield Oversize(start, number, size)
                else:
                    carry += chunk[:cut]
                    yield Line(start, number, bytes(carry))
                skipping, carry = False, bytearray()
                start += size
                chunk = chunk[cut + 1 :]
            lines = chunk.split(b"\n")
            for line in lines[:-1]:
                number += 1
                size = len(line) + 1
                yield Line(start, number, line) if size <= cap else Oversize(start, number, size)
                start += size
            carry = bytearray(lines[-1])
            if len(carry) >= cap:
                skipping, carry = True, bytearray()
        if skipping or carry:
            yield Torn(start, limit - start)

    def scan_back(self, before: int) -> Iterator[Line | Oversize]:
        """The complete lines that end at or before byte ``before`` (a line start), last
        first; line numbers are 0. Oversize lines are reported unread."""
        fd, cap = self._file.fileno(), self.max_record
        read_end = min(before, self.size)
        end = read_end  # the end (after its newline) of the line being assembled
        carry = b""  # the tail of that line, newline included
        skipping = False
        while read_end > 0:
            read_start = max(0, read_end - self.chunk)
            block = os.pread(fd, read_end - read_start, read_start)
            read_end = read_start
            if skipping:
                cut = block.rfind(b"\n")
                if cut < 0:
                    continue
                yield Oversize(read_start + cut + 1, 0, end - (read_start + cut + 1))
                skipping = False
                end = read_start + cut + 1
                block = block[: cut + 1]
            data = block + carry if carry else block
            if not data:
                continue
            pieces = data[:-1].split(b"\n") if data.endswith(b"\n") else None
            if pieces is None:  # ``before`` was not a line start: treat its line as torn
                cut = data.rfind(b"\n")
                if cut < 0:
                    carry = b""
                    end = read_start
                    continue
                end = read_start + cut + 1
                pieces = data[:cut].split(b"\n")
            first = pieces[0]
            for line in reversed(pieces[1:]):
                size = len(line) + 1
                end -= size
                yield Line(end, 0, line) if size <= cap else Oversize(end, 0, size)
            if read_start == 0:
                size = len(first) + 1
                yield Line(0, 0, first) if size <= cap else Oversize(0, 0, size)
                return
            carry = first + b"\n"
            if len(carry) > cap:
                skipping, carry = True, b""
        if skipping:  # the oversize line is the file's first
            yield Oversize(0, 0, end)

    def read(self, position: int) -> bytes | None:
        """The line starting at byte ``position`` (without its newline); None when it is
        incomplete, longer than the cap, or ``position`` is past the end."""
        return read_line_at(self._pread, position, self.size, self.max_record)


def read_line_at(
    pread: Callable[[int, int], bytes], position: int, limit: int, cap: int
) -> bytes | None:
    """The complete line at ``position`` of a file of ``limit`` bytes, read in chunks up
    to ``cap`` bytes; None when it has no newline within the cap or the file."""
    parts: list[bytes] = []
    size = 0
    offset = position
    while offset < limit and size < cap:
        chunk = pread(offset, min(64 * 1024, limit - offset, cap - size))
        if not chunk:
            break
        cut = chunk.find(b"\n")
        if cut >= 0:
            parts.append(chunk[:cut])
            return b"".join(parts)
        parts.append(chunk)
        size += len(chunk)
        offset += len(chunk)
    return None
