"""Key rotation: every sealed blob moved to the newest key (SPEC §12; ``sitekeep keys rotate``).

A blob is sealed for ``(tenant, kind, id)`` (:mod:`sitekeep.stores.cipher`): resealing
opens it for exactly that record and seals it again under the newest key for the same
record, so rotation never moves or widens a blob. Three kinds live in the stores:

* ``secret`` — the secrets catalogue (SPEC §7), one row per (tenant, name);
* ``profile`` — a profile's site data (SPEC §9), one row per (tenant, id);
* ``site-data`` — a session's snapshot, in the session store under
  ``site-data/{tenant}/{key}``.

**Concurrent writers.** A row is replaced only while it still holds the envelope that was
read (``swap_sealed``); a snapshot only under the session's lock and over the revision
that was read (``SessionStore.write``), so a save that lands meanwhile is never
overwritten: the blob is read again and resealed (a save made after the new key was
added is already under it). The snapshot's expiry moves to ``session_ttl`` from now with
its record's — rotation counts as a use of the session, so both still expire together.

A key is retired only after a pass finds nothing sealed under it (:func:`key_use`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from sitekeep.errors import SessionBusy, StoreUnavailable
from sitekeep.stores.cipher import Cipher

if TYPE_CHECKING:
    from sitekeep.service import Service

__all__ = ["Blob", "Outcome", "RotationReport", "blobs", "key_use", "reseal_all"]

log = logging.getLogger(__name__)

Kind = Literal["secret", "profile", "site-data"]
Outcome = Literal["resealed", "current", "gone", "busy", "unreadable"]
_ATTEMPTS = 5
_SNAPSHOTS = "site-data/"


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


async def blobs(service: Service) -> list[Blob]:
    """Every sealed blob of every tenant, secrets first, then profiles, then snapshots."""
    stores = service.stores
    found = [Blob("secret", r.tenant, r.name) for r in await stores.secrets.every()]
    found += [Blob("profile", r.tenant, r.id) for r in await service.profiles.sealed_rows()]
    for key in await stores.sessions.keys(_SNAPSHOTS):
        tenant, _, session = key[len(_SNAPSHOTS) :].partition("/")
        found.append(Blob("site-data", tenant, session))
    return found


async def _sealed(service: Service, blob: Blob) -> bytes | None:
    """The blob's envelope as stored now, or None when it is gone."""
    stores = service.stores
    if blob.kind == "secret":
        row = await stores.secrets.get(blob.tenant, blob.ident)
        return row.sealed if row else None
    if blob.kind == "profile":
        found = await stores.profiles.get(blob.tenant, blob.ident)
        return found.sealed if found else None
    return await stores.sessions.get(f"{_SNAPSHOTS}{blob.tenant}/{blob.ident}")


async def key_use(service: Service) -> dict[str, int]:
    """How many blobs each key id seals now (a key absent here may be retired)."""
    use: dict[str, int] = {}
    for blob in await blobs(service):
        sealed = await _sealed(service, blob)
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


async def _reseal_row(service: Service, cipher: Cipher, blob: Blob) -> Outcome:
    stores = service.stores
    swap = stores.secrets.swap_sealed if blob.kind == "secret" else stores.profiles.swap_sealed
    for _ in range(_ATTEMPTS):
        old = await _sealed(service, blob)
        if old is None:
            return "gone"
        new = _resealed(cipher, old, blob)
        if new is None:
            return "current"
        if await swap(blob.tenant, blob.ident, old, new):
            return "resealed"
    return "busy"  # rewritten under our feet every time: the next pass takes it


async def _reseal_snapshot(service: Service, cipher: Cipher, blob: Blob) -> Outcome:
    store = service.stores.sessions
    key = f"{_SNAPSHOTS}{blob.tenant}/{blob.ident}"
    ttl = service.settings.session_ttl
    async with service.session_held(blob.tenant, blob.ident):
        for _ in range(_ATTEMPTS):
            found = await store.read(key)
            if found is None:
                return "gone"
            new = _resealed(cipher, found.value, blob)
            if new is None:
                return "current"
            if await store.write(key, new, ttl=ttl, revision=found.revision) is not None:
                await store.expire(f"session/{blob.tenant}/{blob.ident}", ttl)
                return "resealed"
    return "busy"


async def reseal_one(service: Service, cipher: Cipher, blob: Blob) -> Outcome:
    """Move one blob to the newest key; what happened to it (never raises for one blob:
    a blob that does not open for its record is ``unreadable``, a session held by a long
    call ``busy`` — both left as they are for a later pass)."""
    try:
        if blob.kind == "site-data":
            return await _reseal_snapshot(service, cipher, blob)
        return await _reseal_row(service, cipher, blob)
    except SessionBusy:
        return "busy"
    except _Unreadable as exc:
        log.warning("rotation left a %s unreadable: %s", blob.kind, exc)
        return "unreadable"


async def reseal_all(
    service: Service, cipher: Cipher, advance: Callable[[Blob, Outcome], None] | None = None
) -> RotationReport:
    """One pass over every blob (:func:`blobs`), each moved to ``cipher``'s newest key.

    Args:
        advance: called after each blob (a progress bar's step).

    Raises:
        StoreUnavailable: a store cannot be reached (the blobs done so far stay done).
    """
    report = RotationReport(cipher.current_key_id)
    for blob in await blobs(service):
        outcome = await reseal_one(service, cipher, blob)
        report.add(blob, outcome)
        if advance is not None:
            advance(blob, outcome)
    return report
