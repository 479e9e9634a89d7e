"""Journal records: what one line of a session's journal holds (SPEC §8).

A record is one JSON object on one UTF-8 line ending in ``\\n``::

    {"type", "v", "id", "parent", "at", "op", "call", "step", ...}

- ``type``: ``begin`` (before an operation touches the browser), ``finish`` (after its
  effects were observed; a save's counts ride on it, ``effects.saved``), ``snapshot``
  (a ref map, written once and named by later records), ``mark`` (something that
  happened to the session: opened, reopened, restored, forgotten, cleared; ``saved`` in
  journals written before saves finished with their counts).
- ``id``: 32 lowercase hex digits, unique. ``parent``: the id of the record before it on its
  branch, ``null`` for the root. Parents form a tree; a fork starts a branch.
- ``at``: seconds since the epoch. ``op``: the operation (``navigate``, ``run_flow``…);
  ``call``: the id of the outer call (one per API call, shared by a flow's steps);
  ``step``: the step's index in a flow, ``null`` for a call of its own.

Records are ``msgspec`` structs: decoding validates types and bounds at about a
microsecond per record (``bench/journal.py`` measures it beside ``json`` and pydantic),
which is what lets replay stream a journal of gigabytes. Two decoders exist:
:data:`FULL` (every field) and :data:`ENVELOPE`, which reads a snapshot record without its
ref map (the JSON is still checked, the ids are not built) — replay loads the one winning
map by its position afterwards.

Builders (:func:`begin`, :func:`finish`, :func:`snapshot`, :func:`mark`) redact what they
are given (``sitekeep.journal.redact``); :func:`encode` validates the record again and
refuses one larger than the cap (``SITEKEEP_JOURNAL_MAX_RECORD``, 16 MiB by default).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from sitekeep.errors import RecordTooLarge
from sitekeep.journal import redact

__all__ = [
    "ENVELOPE",
    "FULL",
    "LINK",
    "MAX_RECORD",
    "VERSION",
    "Begin",
    "Effects",
    "EnvelopeRecord",
    "Finish",
    "Link",
    "Mark",
    "MarkKind",
    "Outcome",
    "Record",
    "RecordError",
    "RefsEffect",
    "RefsStatus",
    "Snapshot",
    "SnapshotHead",
    "TypedSecret",
    "begin",
    "decode",
    "encode",
    "finish",
    "mark",
    "new_id",
    "snapshot",
]

VERSION: Final = 1
MAX_RECORD: Final = 16 * 1024 * 1024
"""Default cap on one record, in bytes of its line (newline included)."""

RecordId = Annotated[str, Meta(min_length=32, max_length=32)]
"""32 characters; ``new_id`` makes lowercase hex. (A pattern would cost a regex per id:
replay decodes millions; ``check`` looks at what matters.)"""
OpName = Annotated[str, Meta(min_length=1, max_length=40)]
Name = Annotated[str, Meta(min_length=1, max_length=200)]
Seconds = Annotated[float, Meta(ge=0)]
StepIndex = Annotated[int, Meta(ge=0, le=100_000)]
Url = Annotated[str, Meta(max_length=4096)]
"""A redacted URL (``redact.url``); ``check`` refuses one with a query, fragment or user info."""
Generation = Annotated[str, Meta(min_length=1, max_length=200)]
SharedId = Annotated[str, Meta(min_length=1, max_length=256)]
Scalar: TypeAlias = str | int | float | bool | None

RefsStatus = Literal["reused", "replaced", "invalidated", "unknown"]
Outcome = Literal["ok", "failed", "unknown"]
MarkKind = Literal["opened", "reopened", "saved", "restored", "forgotten", "cleared"]


class RecordError(ValueError):
    """A line that is not a valid record; ``field`` names the part to blame, when known."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class _Record(Struct, frozen=True, forbid_unknown_fields=True, tag_field="type"):
    v: Literal[1]
    id: RecordId
    parent: RecordId | None
    at: Seconds
    op: OpName | None
    call: RecordId | None
    step: StepIndex | None


class Begin(_Record, tag="begin", frozen=True, kw_only=True):
    """An operation is about to touch the browser; durable before it does (SPEC §8).

    ``args`` are redacted (``redact.args``); ``generation`` is the browser generation the
    operation starts in, when one is live.
    """

    args: dict[str, Any]
    generation: Generation | None = None


class RefsEffect(Struct, frozen=True, forbid_unknown_fields=True):
    """What an operation did to the snapshot refs: ``replaced`` names the new snapshot
    record, the other statuses name none."""

    status: RefsStatus
    snapshot: RecordId | None = None


class TypedSecret(Struct, frozen=True, forbid_unknown_fields=True, array_like=True):
    """A secret typed into the page, by name: ``[secret, field]`` (never its value)."""

    secret: Name
    field: Name


class Effects(Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """What an operation was seen to do.

    Attributes:
        pages: URLs it reached, in order (redacted), for the history (SPEC §4).
        page: where the browser is after it (redacted); None when not observed.
        withheld: the page's URL was withheld: it holds a typed secret (SPEC §7).
        refs: what happened to the snapshot refs.
        secrets: secrets typed, by name.
        generation: the browser generation after it; None when no browser is left,
            unset when the operation did not look.
        saved: a save's counts (``{cookies, sites, skipped}``, never a name or value),
            when the operation replaced the session's snapshot. Journals written before
            it carried them in a ``saved`` mark; replay folds both the same way.
    """

    pages: tuple[Url, ...] = ()
    page: Url | None = None
    withheld: bool = False
    refs: RefsEffect = RefsEffect("unknown")
    secrets: tuple[TypedSecret, ...] = ()
    generation: Generation | UnsetType | None = UNSET
    saved: dict[str, Scalar] | None = None


class Finish(_Record, tag="finish", frozen=True, kw_only=True):
    """An operation's outcome and effects, after they were observed (SPEC §8).

    ``outcome`` is ``unknown`` when the finish settles an unsettled begin after an
    inspection: the effects are what the browser showed, the mutation may or may not
    have happened. ``error`` is the redacted ``{type, message, field?...}`` shape.
    """

    begin: RecordId
    outcome: Outcome
    duration: Seconds
    effects: Effects = Effects()
    error: dict[str, Scalar] | None = None


class Snapshot(_Record, tag="snapshot", frozen=True, kw_only=True):
    """A snapshot's ref map, written once: ``e{i+1}`` is ``shared_ids[i]`` in browser
    ``generation``; ``number`` is the agent-facing ``s{number}``."""

    number: Annotated[int, Meta(ge=1)]
    generation: Generation
    count: Annotated[int, Meta(ge=0)]
    shared_ids: tuple[SharedId, ...]


class SnapshotHead(_Record, tag="snapshot", frozen=True, kw_only=True, forbid_unknown_fields=False):
    """A snapshot record read without its ref map (replay's first pass)."""

    number: Annotated[int, Meta(ge=1)]
    generation: Generation
    count: Annotated[int, Meta(ge=0)]


class Mark(_Record, tag="mark", frozen=True, kw_only=True):
    """Something that happened to the session: a browser ``opened`` or silently
    ``reopened`` (with its ``generation``), site data ``saved``, ``restored`` or
    ``forgotten``, the history ``cleared``. ``detail`` holds counts, never values.
    A save is now told by its finish (``Effects.saved``); ``saved`` marks of older
    journals still replay."""

    mark: MarkKind
    generation: Generation | UnsetType | None = UNSET
    detail: dict[str, Scalar] = {}


class Link(Struct, frozen=True):
    """A record's place in the tree, and nothing else (replay's ancestry walk)."""

    id: str
    parent: str | None


Record: TypeAlias = Begin | Finish | Snapshot | Mark
EnvelopeRecord: TypeAlias = Begin | Finish | SnapshotHead | Mark

FULL: Final = msgspec.json.Decoder(Record)
ENVELOPE: Final = msgspec.json.Decoder(EnvelopeRecord)
LINK: Final = msgspec.json.Decoder(Link)
_ENCODER: Final = msgspec.json.Encoder()


def new_id() -> str:
    """A fresh record or call id: 128 random bits as 32 lowercase hex digits."""
    return secrets.token_hex(16)


def check(record: Record | EnvelopeRecord) -> None:
    """The rules a type cannot say; raises :class:`RecordError` naming the field."""
    if record.parent == record.id:
        raise RecordError("a record cannot be its own parent", "parent")
    op = record.op
    if op is None:
        if type(record) is not Mark:
            raise RecordError(f"a {type(record).__name__.lower()} record names its op", "op")
    elif not (op.isascii() and op.isidentifier() and op.islower()):
        raise RecordError("an op is a lowercase name like navigate or run_flow", "op")
    kind = type(record)
    if kind is Finish:
        _check_effects(record.effects)  # type: ignore[union-attr]
    elif kind is Snapshot and record.count != len(record.shared_ids):  # type: ignore[union-attr]
        raise RecordError("count differs from the number of shared ids", "count")


def _check_effects(effects: Effects) -> None:
    refs = effects.refs
    if (refs.status == "replaced") != (refs.snapshot is not None):
        raise RecordError("refs name a snapshot exactly when replaced", "effects.refs")
    for url in effects.pages:
        if not redact.is_redacted_url(url):
            raise RecordError("a journal URL keeps no user info, query or fragment", "url")
    if effects.page is not None and not redact.is_redacted_url(effects.page):
        raise RecordError("a journal URL keeps no user info, query or fragment", "url")


def decode(line: bytes, decoder: msgspec.json.Decoder[Any] = FULL) -> Any:
    """The record on ``line`` (without its newline), validated.

    Raises:
        RecordError: not UTF-8 JSON, a field of the wrong type or out of bounds, or a
            rule of :func:`check` broken; the message names the field.
    """
    try:
        record = decoder.decode(line)
    except msgspec.ValidationError as exc:
        raise RecordError(str(exc)) from exc
    except msgspec.DecodeError as exc:
        raise RecordError(f"not a JSON record: {exc}") from exc
    check(record)
    return record


def encode(record: Record, *, max_record: int = MAX_RECORD) -> bytes:
    """The record as one line, newline included, checked by decoding it back.

    Raises:
        RecordTooLarge: the line is longer than ``max_record`` bytes; nothing is written.
        RecordError: the record breaks a rule (a bug in its maker).
    """
    line = _ENCODER.encode(record)
    if len(line) + 1 > max_record:
        raise RecordTooLarge(size=len(line) + 1, cap=max_record)
    decode(line)
    return line + b"\n"


def _envelope(
    parent: str | None, at: float | None, op: str | None, call: str | None, step: int | None
) -> dict[str, Any]:
    """The fields every record opens with, for a new record."""
    return {
        "v": VERSION,
        "id": new_id(),
        "parent": parent,
        "at": time.time() if at is None else at,
        "op": op,
        "call": call,
        "step": step,
    }


def begin(
    op: str,
    args: Mapping[str, Any],
    *,
    parent: str | None,
    call: str,
    step: int | None = None,
    generation: str | None = None,
    at: float | None = None,
) -> Begin:
    """A begin record for ``op`` with ``args`` redacted (``redact.args``)."""
    envelope = _envelope(parent, at, op, call, step)
    return Begin(**envelope, args=redact.args(op, args), generation=generation)


def finish(
    started: Begin,
    outcome: Outcome,
    *,
    parent: str,
    pages: Iterable[str] = (),
    page: str | None = None,
    withheld: bool = False,
    refs: RefsStatus = "unknown",
    snapshot: str | None = None,
    secrets: Iterable[tuple[str, str]] = (),
    generation: str | UnsetType | None = UNSET,
    error: Mapping[str, Any] | None = None,
    saved: Mapping[str, Any] | None = None,
    at: float | None = None,
) -> Finish:
    """The finish of ``started``: its outcome and effects, URLs and error redacted.

    Args:
        parent: the record before it on the branch (``started.id``, or a snapshot record
            the operation wrote).
        snapshot: the snapshot record's id when ``refs`` is ``replaced``.
        saved: a save's counts, kept as ``redact.detail`` keeps a mark's.
    """
    envelope = _envelope(parent, at, started.op, started.call, started.step)
    return Finish(
        **envelope,
        begin=started.id,
        outcome=outcome,
        duration=max(0.0, envelope["at"] - started.at),
        effects=Effects(
            pages=tuple(redact.url(u) for u in pages),
            page=None if page is None or withheld else redact.url(page),
            withheld=withheld,
            refs=RefsEffect(refs, snapshot),
            secrets=tuple(TypedSecret(s, f) for s, f in secrets),
            generation=generation,
            saved=redact.detail(saved) if saved is not None else None,
        ),
        error=redact.error(error) if error is not None else None,
    )


def snapshot(
    started: Begin,
    number: int,
    generation: str,
    shared_ids: Sequence[str],
    *,
    parent: str,
    at: float | None = None,
) -> Snapshot:
    """The ref map a ``snapshot`` operation made, written once (its finish names it)."""
    return Snapshot(
        **_envelope(parent, at, started.op, started.call, started.step),
        number=number,
        generation=generation,
        count=len(shared_ids),
        shared_ids=tuple(shared_ids),
    )


def mark(
    kind: MarkKind,
    *,
    parent: str | None,
    op: str | None = None,
    call: str | None = None,
    step: int | None = None,
    generation: str | UnsetType | None = UNSET,
    detail: Mapping[str, Any] | None = None,
    at: float | None = None,
) -> Mark:
    """A mark; ``detail`` keeps only counts, flags and short names (``redact.detail``)."""
    return Mark(
        **_envelope(parent, at, op, call, step),
        mark=kind,
        generation=generation,
        detail=redact.detail(detail or {}),
    )
