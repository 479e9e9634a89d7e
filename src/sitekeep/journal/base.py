"""The journal-backend port: append-only streams of record lines, one per session (SPEC §8).

Backends take and return bytes (a record's JSON line); ``sitekeep.journal.Journal``
encodes, validates and decodes above them. One module per backend, chosen by URL
(``sitekeep.journal.open_backend``): ``files.py`` (JSON lines in the data dir, the embedded
default) and ``redis_streams.py`` (Redis Streams, for several replicas). One contract suite
(``tests/contracts/test_journal_backend.py``) runs against both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, unquote

from sitekeep.journal.framing import Line, Oversize, Progress, Torn

__all__ = ["Entry", "JournalBackend", "JournalKey", "RecordSource", "decode_name", "encode_name"]


@dataclass(frozen=True, slots=True, order=True)
class JournalKey:
    """Whose journal: a session, keyed by (tenant, key) as its record is (SPEC §1)."""

    tenant: str
    key: str


@dataclass(frozen=True, slots=True)
class Entry:
    """One committed record line and its position (an opaque cursor: a byte offset in a
    file, an entry id in a Redis stream)."""

    position: str
    data: bytes


def encode_name(name: str) -> str:
    """A tenant or key as one safe path segment or key part: percent-encoded except
    letters, digits, ``_`` and ``-`` (so ``.``, ``..``, ``/`` and ``:`` cannot escape)."""
    return quote(name, safe="").replace(".", "%2E") or "%"


def decode_name(segment: str) -> str:
    """The inverse of :func:`encode_name`."""
    return "" if segment == "%" else unquote(segment)


class RecordSource(Protocol):
    """The committed records of one stream, read synchronously (replay runs in a worker
    thread). Positions are integers that grow along the stream. A source reads the
    stream as it was when opened: later appends are not seen."""

    def scan(
        self, progress: Progress | None = None, *, after: int | None = None
    ) -> Iterator[Line | Oversize | Torn]:
        """Every record in stream order — or only those after the record at position
        ``after`` — (line numbers from 1), then a torn tail if any."""
        ...

    def scan_back(self, before: int) -> Iterator[Line | Oversize]:
        """The records before position ``before``, last first."""
        ...

    def read(self, position: int) -> bytes | None:
        """The record at ``position``; None when there is no complete one within the cap."""
        ...

    def close(self) -> None: ...


class JournalBackend(Protocol):
    """Append-only streams of record lines, keyed by :class:`JournalKey`.

    The contract every backend keeps:

    - ``append`` returns only once the line is durable as the backend defines it (a file:
      written and fsynced; Redis: acknowledged, and replicated to ``replicas`` when asked);
      on failure it raises ``JournalUnavailable`` and the line is not committed — or, when
      even the rollback failed, the stream refuses appends until it is replayed afresh.
    - Appends are compare-and-append: ``parent`` must be the id of the stream's last
      record (None for an empty stream), else ``JournalConflict`` and nothing is written.
      So writers that race never fork a branch by accident.
    - A line is at most ``max_record`` bytes, newline included (checked above the port).
    - Streams of one tenant are never listed, read or removed through another's key.
    """

    max_record: int
    durability: str
    """How durable an acknowledged append is, in words (``fsync``, ``aof-always``…)."""

    async def append(self, key: JournalKey, line: bytes, *, record: str, parent: str | None) -> str:
        """Append ``line`` (ending in a newline) for record id ``record``; its position."""
        ...

    async def head(self, key: JournalKey) -> str | None:
        """The id of the stream's last record, None when it has none."""
        ...

    async def entries(self, key: JournalKey, *, after: str | None, limit: int) -> list[Entry]:
        """Up to ``limit`` committed lines after position ``after`` (from the start when
        None), in stream order."""
        ...

    async def last(self, key: JournalKey, limit: int) -> list[Entry]:
        """The last ``limit`` committed lines, in stream order."""
        ...

    def source(self, key: JournalKey) -> RecordSource | None:
        """A reader for replay; None when the stream does not exist."""
        ...

    async def keys(self, tenant: str | None = None) -> list[JournalKey]:
        """The streams that exist (of ``tenant`` only, when given), sorted."""
        ...

    async def remove(self, key: JournalKey) -> bool:
        """Delete the stream; whether it existed."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
