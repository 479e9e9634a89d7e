"""The journal: a durable record of every browser operation (SPEC §8).

The service's seam uses :class:`Journal` and nothing below it::

    journal = open_journal(settings)
    state = (await journal.replay(key)).state          # after a restart, or on a conflict
    started = records.begin("click", args, parent=state.head, call=call_id)
    await journal.write(key, started)                  # durable before the browser is touched
    state = fold(state, started, journal.rules)
    ...                                                # dispatch, observe the effects
    done = records.finish(started, "ok", parent=state.head, pages=[...], refs="reused")
    await journal.write(key, done)                     # a failure leaves the call unsettled
    state = fold(state, done, journal.rules)

Modules: ``records`` (the record types, builders, codec, cap), ``redact`` (what may be
written), ``reducer`` (state from records), ``replay`` (state from a stream, in bounded
memory), ``framing`` (newline framing of files), ``timeline`` (rows for people), ``base``
(the backend port), ``files`` and ``redis_streams`` (the backends).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from sitekeep.errors import InvalidInput
from sitekeep.journal import records
from sitekeep.journal.base import Entry, JournalBackend, JournalKey
from sitekeep.journal.records import MAX_RECORD, Record
from sitekeep.journal.reducer import Rules, SessionState, fold
from sitekeep.journal.replay import Problem, Replayed, ReplayReport
from sitekeep.journal.replay import replay as _replay
from sitekeep.journal.timeline import rows

if TYPE_CHECKING:
    from sitekeep.config import Settings

__all__ = [
    "Entry",
    "Journal",
    "JournalBackend",
    "JournalKey",
    "Problem",
    "ReplayReport",
    "Replayed",
    "Rules",
    "SessionState",
    "fold",
    "open_backend",
    "open_journal",
    "records",
]


class Journal:
    """Records in, state out: encoding, the size cap and replay over one backend.

    Args:
        backend: where the lines go (``open_backend``).
        rules: the history rules the reducer applies (SPEC §4).
    """

    def __init__(self, backend: JournalBackend, rules: Rules | None = None) -> None:
        self.backend = backend
        self.rules = rules or Rules()

    async def write(self, key: JournalKey, record: Record) -> str:
        """Append ``record`` durably (see ``JournalBackend``); its position.

        Raises:
            RecordTooLarge: over ``SITEKEEP_JOURNAL_MAX_RECORD``; nothing was written.
            JournalConflict: ``record.parent`` is not the stream's last record.
            JournalUnavailable: it could not be made durable; nothing was committed.
        """
        line = records.encode(record, max_record=self.backend.max_record)
        return await self.backend.append(key, line, record=record.id, parent=record.parent)

    async def replay(
        self,
        key: JournalKey,
        *,
        leaf: str | None = None,
        progress: Callable[[str, int], None] | None = None,
    ) -> Replayed:
        """The state of ``key``'s journal at ``leaf`` (its last record when None), read in
        a worker thread in bounded memory (``sitekeep.journal.replay``)."""
        return await anyio.to_thread.run_sync(self.replay_sync, key, leaf, progress)

    def replay_sync(
        self,
        key: JournalKey,
        leaf: str | None = None,
        progress: Callable[[str, int], None] | None = None,
        *,
        duplicates: bool = False,
    ) -> Replayed:
        """:meth:`replay`, blocking (for the CLI and worker threads); with
        ``duplicates``, repeated record ids are problems too (``replay.replay``)."""
        source = self.backend.source(key)
        if source is None:
            return _replay(_Empty(), self.rules, leaf=leaf)
        try:
            return _replay(source, self.rules, leaf=leaf, progress=progress, duplicates=duplicates)
        finally:
            source.close()

    async def timeline(
        self, key: JournalKey, *, after: str | None = None, limit: int = 100
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Timeline rows (``timeline.rows``) of up to ``limit`` records after cursor
        ``after``, and the cursor for the next page (None at the end)."""
        entries = await self.backend.entries(key, after=after, limit=limit)
        cursor = entries[-1].position if len(entries) == limit else None
        return rows(entries), cursor

    async def tail(self, key: JournalKey, limit: int = 20) -> list[dict[str, Any]]:
        """Timeline rows of the last ``limit`` records."""
        return rows(await self.backend.last(key, limit))

    async def head(self, key: JournalKey) -> str | None:
        return await self.backend.head(key)

    async def remove(self, key: JournalKey) -> bool:
        return await self.backend.remove(key)

    async def aclose(self) -> None:
        await self.backend.aclose()


class _Empty:
    """The source of a stream that does not exist."""

    def scan(self, progress: Any = None, *, after: int | None = None) -> Any:
        return iter(())

    def scan_back(self, before: int) -> Any:
        return iter(())

    def read(self, position: int) -> bytes | None:
        return None

    def close(self) -> None:
        return None


def open_backend(url: str, *, max_record: int = MAX_RECORD) -> JournalBackend:
    """The backend named by ``url``: ``file:///dir`` (JSON lines) or ``redis://…``
    (Redis Streams, options in ``redis_streams.parse_url``).

    Raises:
        InvalidInput: an unknown scheme (field ``SITEKEEP_JOURNAL_URL``).
    """
    if url.startswith("file://"):
        from pathlib import Path

        from sitekeep.journal.files import FileJournal

        return FileJournal(Path(url.removeprefix("file://")), max_record=max_record)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from sitekeep.journal.redis_streams import RedisJournal

        return RedisJournal(url, max_record=max_record)
    raise InvalidInput(
        f"unknown journal {url.split(':', 1)[0]!r}: use file:///dir or redis://host:port/db",
        field="SITEKEEP_JOURNAL_URL",
    )


def open_journal(settings: Settings) -> Journal:
    """The journal the settings name (``SITEKEEP_JOURNAL_URL``, by default JSON lines in
    ``<data dir>/journal``), with the settings' history rules."""
    backend = open_backend(settings.journal_location, max_record=settings.journal_max_record)
    rules = Rules(ttl=settings.session_ttl, cap=settings.history_cap)
    return Journal(backend, rules)
