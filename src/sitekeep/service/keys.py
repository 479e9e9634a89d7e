"""The master key ring: every sealed blob moved to the newest key (SPEC §12; ``sitekeep keys``).

A blob is sealed for ``(tenant, kind, id)`` (:mod:`sitekeep.stores.cipher`): resealing
opens it for exactly that record and seals it again under the newest key for the same
record, so rotation never moves or widens a blob. Four kinds live in the stores:

* ``secret`` — the secrets catalogue (SPEC §7), one row per (tenant, name);
* ``profile`` — a profile's site data (SPEC §9), one row per (tenant, id);
* ``site-data`` — a session's snapshot, in the session store under
  ``site-data/{tenant}/{key}``;
* ``mask`` — the values a session masks (``SessionRecord.mask``, issue #24), inside its
  record under ``session/{tenant}/{key}``;
* ``site-data-version`` — a version of a session's snapshot (issue #26), in the session
  store under ``site-data-version/{tenant}/{key}/{id}``, bound to ``"{key}/{id}"``;
* ``profile-version`` — a version of a profile's site data, one row per (tenant, profile,
  id), bound to ``"{profile}/{id}"``.

**Concurrent writers.** A row is replaced only while it still holds the envelope that was
read (``swap_sealed``); a snapshot or a record only under the session's lock and over the
revision that was read (``SessionStore.write``), so a save that lands meanwhile is never
overwritten: the blob is read again and resealed (a save made after the new key was
added is already under it). The expiry of the record, its snapshot and its versions move
to ``session_ttl`` from now together — rotation counts as a use of the session, so they
still expire together.

A key is retired only after a pass finds nothing sealed under it (:func:`key_use`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from sitekeep.config import Settings
from sitekeep.errors import SessionBusy, StoreUnavailable
from sitekeep.model import RECORD_JSON
from sitekeep.seam import mask_envelope, with_envelope
from sitekeep.seam.versions import VERSIONS, versions_prefix
from sitekeep.service.parts import Parts
from sitekeep.stores.base import Versioned
from sitekeep.stores.cipher import Cipher, KeyFile, KeyRing

__all__ = ["KINDS", "Blob", "Keys", "NewKey", "Outcome", "RotationReport", "add_key"]

log = logging.getLogger(__name__)

Kind = Literal["secret", "profile", "site-data", "mask", "site-data-version", "profile-version"]
KINDS: tuple[Kind, ...] = (
    "secret",
    "profile",
    "site-data",
    "mask",
    "site-data-version",
    "profile-version",
)
_IN_SESSIONS: frozenset[Kind] = frozenset({"site-data", "mask", "site-data-version"})
Outcome = Literal["resealed", "current", "gone", "busy", "unreadable"]
_ATTEMPTS = 5
_SNAPSHOTS = "site-data/"
_RECORDS = "session/"
_READ_AT_ONCE = 500


@dataclass(frozen=True, slots=True)
class Blob:
    """One sealed blob: its kind and the record it is bound to."""

    kind: Kind
    tenant: str
    ident: str


@dataclass
class RotationReport:
    """How many blobs of each outcome, by kind; ``key_id`` is the key they now use."""

    key_id: str
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, blob: Blob, outcome: Outcome) -> None:
        by_kind = self.counts.setdefault(blob.kind, {})
        by_kind[outcome] = by_kind.get(outcome, 0) + 1

    @property
    def complete(self) -> bool:
        """Whether every blob that still exists is under the newest key."""
        return all(
            n == 0 or outcome in ("resealed", "current", "gone")
            for by_kind in self.counts.values()
            for outcome, n in by_kind.items()
        )


async def blobs(parts: Parts) -> list[Blob]:
    """Every sealed blob of every tenant: secrets, profiles and their versions,
    snapshots and their versions, then masks."""
    stores = parts.stores
    found = [Blob("secret", r.tenant, r.name) for r in await stores.secrets.every()]
    found += [Blob("profile", r.tenant, r.id) for r in await parts.profiles.sealed_rows()]
    found += [
        Blob("profile-version", v.tenant, f"{v.profile}/{v.id}")
        for v in await parts.profiles.sealed_versions()
    ]
    for key in await stores.sessions.keys(_SNAPSHOTS):
        found.append(Blob("site-data", *_tenant_key(key, _SNAPSHOTS)))
    for key in await stores.sessions.keys(VERSIONS):
        found.append(Blob("site-data-version", *_tenant_key(key, VERSIONS)))
    records = await stores.sessions.keys(_RECORDS)
    for at in range(0, len(records), _READ_AT_ONCE):
        keys = records[at : at + _READ_AT_ONCE]
        for key, item in zip(keys, await stores.sessions.read_many(keys), strict=True):
            if item is not None and _mask_of(item.value) is not None:
                found.append(Blob("mask", *_tenant_key(key, _RECORDS)))
    return found


def _tenant_key(key: str, prefix: str) -> tuple[str, str]:
    tenant, _, session = key[len(prefix) :].partition("/")
    return tenant, session


def _mask_of(record: bytes) -> bytes | None:
    """The sealed mask in a stored session record, None without one (or unreadable)."""
    try:
        return mask_envelope(RECORD_JSON.validate_json(record))
    except ValidationError:
        return None


def _with_mask(record: bytes, envelope: bytes) -> bytes:
    return RECORD_JSON.dump_json(with_envelope(RECORD_JSON.validate_json(record), envelope))


async def _sealed(parts: Parts, blob: Blob) -> bytes | None:
    """The blob's envelope as stored now, or None when it is gone."""
    stores = parts.stores
    if blob.kind == "secret":
        row = await stores.secrets.get(blob.tenant, blob.ident)
        return row.sealed if row else None
    if blob.kind == "profile":
        found = await stores.profiles.get(blob.tenant, blob.ident)
        return found.sealed if found else None
    if blob.kind == "profile-version":
        profile, _, version = blob.ident.partition("/")
        kept = await stores.profiles.version(blob.tenant, profile, version)
        return kept.sealed if kept else None
    if blob.kind == "mask":
        record = await stores.sessions.get(f"{_RECORDS}{blob.tenant}/{blob.ident}")
        return None if record is None else _mask_of(record)
    if blob.kind == "site-data-version":
        return await stores.sessions.get(f"{VERSIONS}{blob.tenant}/{blob.ident}")
    return await stores.sessions.get(f"{_SNAPSHOTS}{blob.tenant}/{blob.ident}")


async def key_use(parts: Parts) -> dict[str, int]:
    """How many blobs each key id seals now (a key absent here may be retired)."""
    use: dict[str, int] = {}
    for blob in await blobs(parts):
        sealed = await _sealed(parts, blob)
        if sealed is not None:
            kid = Cipher.sealed_with(sealed)
            use[kid] = use.get(kid, 0) + 1
    return use


class _Unreadable(Exception):
    """The blob does not open for its record (moved, tampered with, or an unknown key)."""


def _resealed(cipher: Cipher, old: bytes, blob: Blob) -> bytes | None:
    try:
        return cipher.reseal(old, tenant=blob.tenant, kind=blob.kind, ident=blob.ident)
    except StoreUnavailable as exc:  # the cipher's one error: it did not open
        raise _Unreadable(exc.message) from exc


def _swap(parts: Parts, blob: Blob) -> Callable[[bytes, bytes], Awaitable[bool]]:
    """Replace the row's envelope only while it is still the old one."""
    stores = parts.stores
    if blob.kind == "profile-version":
        profile, _, version = blob.ident.partition("/")
        return functools.partial(stores.profiles.swap_version_sealed, blob.tenant, profile, version)
    swap = stores.secrets.swap_sealed if blob.kind == "secret" else stores.profiles.swap_sealed
    return functools.partial(swap, blob.tenant, blob.ident)


async def _reseal_row(parts: Parts, cipher: Cipher, blob: Blob) -> Outcome:
    swap = _swap(parts, blob)
    for _ in range(_ATTEMPTS):
        old = await _sealed(parts, blob)
        if old is None:
            return "gone"
        new = _resealed(cipher, old, blob)
        if new is None:
            return "current"
        if await swap(old, new):
            return "resealed"
    return "busy"  # rewritten under our feet every time: the next pass takes it


def _in_session(blob: Blob) -> tuple[str, str]:
    """The session a blob of the session store belongs to, and where the blob is."""
    if blob.kind == "site-data-version":
        key = blob.ident.rsplit("/", 1)[0]
        return key, f"{VERSIONS}{blob.tenant}/{blob.ident}"
    prefix = _RECORDS if blob.kind == "mask" else _SNAPSHOTS
    return blob.ident, f"{prefix}{blob.tenant}/{blob.ident}"


async def _reseal_in_session(parts: Parts, cipher: Cipher, blob: Blob) -> Outcome:
    """A snapshot, a version of it, or the mask in a record: resealed under the
    session's lock, written over the revision read; the expiry of the record, the
    snapshot and its versions move together."""
    store = parts.stores.sessions
    session, key = _in_session(blob)
    ttl = parts.settings.session_ttl
    async with parts.seam.records.held(blob.tenant, session):
        for _ in range(_ATTEMPTS):
            found = await store.read(key)
            old = _envelope(blob, found)
            if found is None or old is None:
                return "gone"
            new = _resealed(cipher, old, blob)
            if new is None:
                return "current"
            value = _with_mask(found.value, new) if blob.kind == "mask" else new
            if await store.write(key, value, ttl=ttl, revision=found.revision) is not None:
                where = f"{blob.tenant}/{session}"
                await store.expire(f"{_RECORDS}{where}", ttl)
                versions = versions_prefix(blob.tenant, session)
                await store.expire(f"{_SNAPSHOTS}{where}", ttl, under=versions)
                return "resealed"
    return "busy"


def _envelope(blob: Blob, found: Versioned | None) -> bytes | None:
    if found is None:
        return None
    return _mask_of(found.value) if blob.kind == "mask" else found.value


async def reseal_one(parts: Parts, cipher: Cipher, blob: Blob) -> Outcome:
    """Move one blob to the newest key; what happened to it (never raises for one blob:
    a blob that does not open for its record is ``unreadable``, a session held by a long
    call ``busy`` — both left as they are for a later pass)."""
    try:
        if blob.kind in _IN_SESSIONS:
            return await _reseal_in_session(parts, cipher, blob)
        return await _reseal_row(parts, cipher, blob)
    except SessionBusy:
        return "busy"
    except _Unreadable as exc:
        log.warning("rotation left a %s unreadable: %s", blob.kind, exc)
        return "unreadable"


async def reseal_all(
    parts: Parts, cipher: Cipher, advance: Callable[[Blob, Outcome], None] | None = None
) -> RotationReport:
    """One pass over every blob (:func:`blobs`), each moved to ``cipher``'s newest key.

    Args:
        advance: called after each blob (a progress bar's step).

    Raises:
        StoreUnavailable: a store cannot be reached (the blobs done so far stay done).
    """
    report = RotationReport(cipher.current_key_id)
    for blob in await blobs(parts):
        outcome = await reseal_one(parts, cipher, blob)
        report.add(blob, outcome)
        if advance is not None:
            advance(blob, outcome)
    return report


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key just added to the key file: its id, the ring's size now, the file."""

    id: str
    keys: int
    path: Path


def _key_file(settings: Settings) -> KeyFile:
    return KeyFile(settings.key_file, settings.master_key)


def add_key(settings: Settings) -> NewKey | None:
    """Add a fresh key to the key file as the sealing key (the others kept: other
    processes may hold blobs they sealed a moment ago); ``None`` when the keys come from
    ``SITEKEEP_MASTER_KEY``, read-only here (its last key seals). A running service picks
    the new key up (its cipher follows the file).

    Raises:
        InvalidInput: a malformed key file.
    """
    keys = _key_file(settings)
    if keys.from_env:
        return None
    ring = keys.add()
    return NewKey(ring.current.id, len(ring), keys.path)


class Keys:
    """The master key ring's use cases (``sitekeep keys rotate|status``)."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    @property
    def ring(self) -> KeyRing:
        """The key ring every blob is sealed with (it follows the key file)."""
        return self._parts.cipher.ring

    async def blobs(self) -> list[Blob]:
        """Every sealed blob of every tenant (:func:`blobs`)."""
        return await blobs(self._parts)

    async def reseal_all(
        self, advance: Callable[[Blob, Outcome], None] | None = None
    ) -> RotationReport:
        """One pass moving every blob to the newest key (:func:`reseal_all`)."""
        return await reseal_all(self._parts, self._parts.cipher, advance)

    async def key_use(self) -> dict[str, int]:
        """How many blobs each key id seals now (:func:`key_use`)."""
        return await key_use(self._parts)

    async def rotate(
        self, advance: Callable[[Blob, Outcome], None] | None = None, *, retire: bool = False
    ) -> tuple[RotationReport, list[str]]:
        """One pass moving every blob to the newest key (:func:`reseal_all`); with
        ``retire``, after a complete pass, the keys no blob uses any more are removed
        from the key file (never the current one; not keys from ``SITEKEEP_MASTER_KEY``).

        Returns:
            The pass's report and the ids of the keys retired.

        Raises:
            StoreUnavailable: a store cannot be reached (the blobs done so far stay done).
        """
        report = await self.reseal_all(advance)
        if not (retire and report.complete):
            return report, []
        used = await self.key_use()
        ring = self.ring
        idle = [kid for kid in ring.ids if kid not in used and kid != ring.current.id]
        keys = _key_file(self._parts.settings)
        if not idle or keys.from_env:
            return report, []
        keys.retire(idle)
        return report, idle
