"""The timeline: journal records as rows people read (SPEC §8, §11 admin).

One row per operation — its begin and finish merged when both are in the page read —
and one per mark. Rows hold only what the records hold: redacted arguments, outcome,
redacted URL, duration; never a value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sitekeep.journal.base import Entry
from sitekeep.journal.records import FULL, Begin, Finish, Mark, RecordError, Snapshot, decode

__all__ = ["rows"]


def rows(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """Timeline rows for ``entries`` (in stream order).

    Returns:
        ``[{position, at, op, call, step, args?, outcome, url?, url_withheld?, duration?,
        refs?, saved?, error?}]`` for operations (``saved``: a save's counts) —
        ``outcome: "pending"`` for a begin whose finish is not among the entries — and
        ``[{position, at, mark, detail}]`` for marks; a line that is not a valid record gives
        ``{position, invalid: reason}``.
    """
    found: list[dict[str, Any]] = []
    open_rows: dict[str, dict[str, Any]] = {}
    for entry in entries:
        try:
            record = decode(entry.data, FULL)
        except RecordError as exc:
            found.append({"position": entry.position, "invalid": str(exc)})
            continue
        if isinstance(record, Begin):
            row = _operation(entry.position, record)
            row.update(args=record.args, outcome="pending")
            open_rows[record.id] = row
            found.append(row)
        elif isinstance(record, Finish):
            started = open_rows.pop(record.begin, None)
            if started is None:
                started = _operation(entry.position, record)
                found.append(started)
            started.update(_finished(record))
        elif isinstance(record, Mark):
            found.append(
                {
                    "position": entry.position,
                    "at": record.at,
                    "mark": record.mark,
                    "op": record.op,
                    "detail": dict(record.detail),
                }
            )
        elif isinstance(record, Snapshot):
            for row in open_rows.values():
                if (row["call"], row["step"]) == (record.call, record.step):
                    row["snapshot"] = {"number": record.number, "refs": record.count}
    return found


def _operation(position: str, record: Begin | Finish) -> dict[str, Any]:
    return {
        "position": position,
        "at": record.at,
        "op": record.op,
        "call": record.call,
        "step": record.step,
    }


def _finished(record: Finish) -> dict[str, Any]:
    effects = record.effects
    row: dict[str, Any] = {
        "outcome": record.outcome,
        "duration": record.duration,
        "refs": effects.refs.status,
    }
    if effects.withheld:
        row["url_withheld"] = True
    elif effects.page is not None:
        row["url"] = effects.page
    if effects.saved is not None:
        row["saved"] = dict(effects.saved)
    if record.error is not None:
        row["error"] = dict(record.error)
    return row
