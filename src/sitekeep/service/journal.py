"""The journal read from a shell: check, replay, tail (SPEC §8; ``sitekeep journal``).

A :class:`JournalReader` reads the journal the settings name (``SITEKEEP_JOURNAL_URL``,
by default the JSON-lines files in the data dir), or one file (a copy taken aside, say).
Nothing is ever written, and no service is opened: the reader loads the journal package
and nothing of the rest of the house. Results are plain JSON-able dicts; a stream is named
``(tenant, key)`` (a lone file's is ``("file", <its name>)``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread

from sitekeep.config import Settings
from sitekeep.journal import Journal, JournalKey, Replayed, open_journal
from sitekeep.journal.files import JournalFile

__all__ = ["Advance", "JournalReader", "Stream"]

Stream = tuple[str, str]
"""A session's journal, named ``(tenant, key)``."""

Advance = Callable[[str, int], None]
"""Told each replay pass's progress: ``(phase, bytes read since the last call)``."""


class JournalReader:
    """Reads one journal backend; close it (:meth:`aclose`) in the event loop that used
    it (the Redis backend's connections belong to that loop)."""

    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    @classmethod
    def from_settings(cls, settings: Settings) -> JournalReader:
        """The journal the settings name.

        Raises:
            InvalidInput: a journal URL naming no known backend.
        """
        return cls(open_journal(settings))

    @classmethod
    def from_file(cls, path: Path) -> tuple[JournalReader, Stream]:
        """A reader over one journal file, whatever its name, and the stream it holds."""
        return cls(Journal(JournalFile(path))), ("file", path.name)

    async def streams(self, tenant: str | None = None) -> list[Stream]:
        """Every session's journal, or ``tenant``'s."""
        return [(k.tenant, k.key) for k in await self._journal.backend.keys(tenant)]

    def size(self, stream: Stream) -> int | None:
        """The bytes of ``stream`` when it is a file (a progress bar's total), else None."""
        path = getattr(self._journal.backend, "path", None)
        if not callable(path):
            return None
        found: Path = path(JournalKey(*stream))
        return found.stat().st_size if found.exists() else None

    async def _replayed(self, stream: Stream, leaf: str | None, advance: Advance) -> Replayed:
        key = JournalKey(*stream)
        return await anyio.to_thread.run_sync(
            lambda: self._journal.replay_sync(key, leaf, advance, duplicates=True)
        )

    async def check(self, stream: Stream, advance: Advance) -> dict[str, Any]:
        """Every record of ``stream`` validated, the ancestry of the last one, the torn
        tail, record ids used twice: the report (``ok``, ``lines``, ``records``,
        ``branch``, ``leaf``, ``torn``, ``problems``)."""
        return _report_json(await self._replayed(stream, None, advance))

    async def replay(self, stream: Stream, leaf: str | None, advance: Advance) -> dict[str, Any]:
        """``stream``'s state rebuilt (the branch ending at ``leaf``, else the last
        record's): URL, history, refs, unsettled calls, the last save, the secrets typed,
        and the check's ``report``."""
        result = await self._replayed(stream, leaf, advance)
        return {**_state_json(result), "report": _report_json(result)}

    async def tail(self, stream: Stream, lines: int) -> list[dict[str, Any]]:
        """The last ``lines`` operations of ``stream``: op, redacted arguments, outcome,
        URL, duration (invalid lines and marks as such)."""
        return await self._journal.tail(JournalKey(*stream), lines)

    async def aclose(self) -> None:
        await self._journal.aclose()


def _report_json(result: Replayed) -> dict[str, Any]:
    report = result.report
    return {
        "ok": report.ok,
        "lines": report.lines,
        "records": report.records,
        "branch": report.branch,
        "leaf": report.leaf,
        "torn": {"position": report.torn.position, "size": report.torn.size}
        if report.torn
        else None,
        "problems": [
            {"kind": p.kind, "line": p.line, "position": p.position, "message": p.message}
            for p in report.problems
        ],
    }


def _state_json(result: Replayed) -> dict[str, Any]:
    state = result.state
    return {
        "url": state.url,
        "url_withheld": state.url_withheld,
        "history": [{"origin": e.origin, "url": e.url, "at": e.at} for e in state.history],
        "generation": state.generation,
        "refs": {
            "snapshot": f"s{state.refs.number}",
            "record": state.refs.snapshot,
            "count": state.refs.count,
            "generation": state.refs.generation,
            "status": state.refs_status,
        }
        if state.refs
        else None,
        "unsettled": [
            {"begin": p.begin, "op": p.op, "call": p.call, "step": p.step, "at": p.at}
            for p in state.unsettled
        ],
        "last_save": {"at": state.last_save.at, **state.last_save.detail}
        if state.last_save
        else None,
        "typed_secrets": [list(t) for t in state.typed_secrets],
    }
