"""Session records, their snapshots and masks, in the session store (SPEC §3, §8, §13).

A record is read and written only over the revision the call read (:meth:`Records.put`,
SPEC §13: a replica whose lock ran out never overwrites a newer record): inside
:meth:`Records.held` — the session's lock, shared by every process and replica on the
session store (:mod:`sitekeep.stores.locks`) — each record read keeps its revision in a
table of the call's own. A snapshot is sealed for its session (``site-data``), so is the
record's mask (``mask``, :data:`MASK_KIND`): the values the session masks in every result
and view (SPEC §7, §12; issue #24). Putting a snapshot keeps the one it replaces as a
version (:mod:`sitekeep.seam.versions`, issue #26); the versions expire with the record
and go with the snapshot.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace

from pydantic import ValidationError

from sitekeep import history as hist
from sitekeep.config import Settings
from sitekeep.errors import Conflict, NotFound, SitekeepError, StoreUnavailable
from sitekeep.masking import Masker, appears_in
from sitekeep.model import (
    RECORD_JSON,
    HistoryEntry,
    Principal,
    SessionRecord,
    SiteData,
    dump_site_data,
    json_bytes,
    load_site_data,
)
from sitekeep.policy import check_key
from sitekeep.seam.versions import SnapshotVersions, versions_prefix
from sitekeep.stores import SessionLocks, SessionStore
from sitekeep.stores.base import Versioned
from sitekeep.stores.cipher import Cipher
from sitekeep.vault import Vault

__all__ = [
    "MASK_KIND",
    "MAX_MASKED",
    "Records",
    "handover_key",
    "mask_envelope",
    "record_key",
    "site_data_uri",
    "snapshot_key",
    "with_envelope",
]

MASK_KIND = "mask"
"""The cipher's kind for a session's sealed mask (``SessionRecord.mask``, SPEC §12)."""
MAX_MASKED = 32
"""The most values a session's mask keeps; past it, the oldest go first."""

_REVISIONS: contextvars.ContextVar[dict[tuple[str, str], int] | None] = contextvars.ContextVar(
    "sitekeep_revisions", default=None
)
"""Inside a seam: the revision of each session record the call read (0: absent)."""


def record_key(tenant: str, key: str) -> str:
    """Where the session store keeps a session's record."""
    return f"session/{tenant}/{key}"


def snapshot_key(tenant: str, key: str) -> str:
    """Where the session store keeps a session's sealed snapshot."""
    return f"site-data/{tenant}/{key}"


def handover_key(tenant: str, key: str) -> str:
    """Where the generation of the session's browser last handed over is kept."""
    return f"webdriver-browser/{tenant}/{key}"


def site_data_uri(key: str) -> str:
    """The MCP resource of a session's saved site data (SPEC §5)."""
    return f"sitekeep://sessions/{key}/site-data"


def mask_envelope(record: SessionRecord) -> bytes | None:
    """The sealed envelope of the record's mask (``SessionRecord.mask``), or None."""
    return None if record.mask is None else base64.b64decode(record.mask)


def with_envelope(record: SessionRecord, envelope: bytes) -> SessionRecord:
    """``record`` holding ``envelope`` as its sealed mask (key rotation reseals it so)."""
    return replace(record, mask=base64.b64encode(envelope).decode("ascii"))


@dataclass(frozen=True, slots=True)
class Records:
    """Every session's record, snapshot and mask, over the session store and the cipher."""

    settings: Settings
    store: SessionStore
    locks: SessionLocks
    cipher: Cipher
    vault: Vault
    clock: Callable[[], float]

    @property
    def versions(self) -> SnapshotVersions:
        """The sessions' snapshot versions (issue #26)."""
        return SnapshotVersions(self.settings, self.store, self.cipher, self.clock)

    @contextlib.asynccontextmanager
    async def held(
        self, tenant: str, key: str, *, wait: float | None = None
    ) -> AsyncIterator[None]:
        """The session's lock held, and a fresh table of the revisions this call reads.

        Raises:
            SessionBusy: not acquired within ``wait`` (``SITEKEEP_LOCK_WAIT``).
        """
        wait = self.settings.lock_wait if wait is None else wait
        async with self.locks.hold(f"{tenant}/{key}", wait=wait):
            token = _REVISIONS.set({})
            try:
                yield
            finally:
                _REVISIONS.reset(token)

    # -- records --------------------------------------------------------------------------

    async def load(self, tenant: str, key: str) -> SessionRecord | None:
        """The record, or None; inside :meth:`held`, its revision is kept for :meth:`put`."""
        return _record_of(tenant, key, await self.store.read(record_key(tenant, key)))

    async def require(self, who: Principal, key: str, field: str = "key") -> SessionRecord:
        """The session's record. Raises: InvalidInput, NotFound (both naming ``field``)."""
        record = await self.load(who.tenant, check_key(key, field))
        if record is None:
            raise NotFound("session", key, field=field)
        return record

    async def secret_typed(self, tenant: str, key: str) -> bool:
        """Whether a secret was typed in session ``key`` (``SessionRecord.secret_typed``):
        what the live socket's input is judged by, as an operation's is by
        ``Context.secret_typed``."""
        record = await self.load(tenant, key)
        return record is not None and record.secret_typed

    async def load_many(self, tenant: str, keys: Sequence[str]) -> list[SessionRecord | None]:
        """:meth:`load` of each key, in one store round trip."""
        found = await self.store.read_many([record_key(tenant, key) for key in keys])
        return [_record_of(tenant, k, f) for k, f in zip(keys, found, strict=True)]

    async def load_with_snapshots(
        self, tenant: str, keys: Sequence[str]
    ) -> list[tuple[SessionRecord | None, SiteData | None]]:
        """:meth:`load` and :meth:`load_snapshot` of each key, all in one store round trip
        (no snapshot is opened without its record)."""
        found = await self.store.read_many(
            [record_key(tenant, k) for k in keys] + [snapshot_key(tenant, k) for k in keys]
        )
        pairs: list[tuple[SessionRecord | None, SiteData | None]] = []
        for key, item, sealed in zip(keys, found, found[len(keys) :], strict=False):
            record = _record_of(tenant, key, item)
            if record is None or sealed is None:
                pairs.append((record, None))
            else:
                pairs.append((record, self._snapshot_of(tenant, key, sealed.value)))
        return pairs

    async def keys_of(self, tenant: str) -> list[str]:
        """The keys of ``tenant``'s sessions (from the store's index)."""
        return [k.rsplit("/", 1)[-1] for k in await self.store.keys(record_key(tenant, ""))]

    async def of_tenant(self, tenant: str) -> list[SessionRecord]:
        """Every session record of ``tenant``, most recently used first (one store
        round trip for the records, not one each)."""
        found = await self.load_many(tenant, await self.keys_of(tenant))
        kept = [r for r in found if r is not None and r.tenant == tenant]
        return sorted(kept, key=lambda r: r.last_used_at, reverse=True)

    async def of_tenant_with_snapshots(
        self, tenant: str
    ) -> list[tuple[SessionRecord, SiteData | None]]:
        """:meth:`of_tenant`, each with its snapshot (None without one): two store round
        trips whatever the number of sessions."""
        found = await self.load_with_snapshots(tenant, await self.keys_of(tenant))
        pairs = [(r, snap) for r, snap in found if r is not None and r.tenant == tenant]
        return sorted(pairs, key=lambda pair: pair[0].last_used_at, reverse=True)

    async def put(self, record: SessionRecord) -> None:
        """Write the record — only over the revision this call read (SPEC §13: a replica
        whose lock ran out never overwrites a newer record) — and move its snapshot's and
        versions' expiry with it (first: a failed write then leaves only a longer-lived
        snapshot).

        Raises:
            Conflict: another call wrote the record since this one read it; nothing was
                written.
        """
        ttl = self.settings.session_ttl
        ident = (record.tenant, record.key)
        revisions = _REVISIONS.get()
        assert revisions is not None, "a session record is written only inside a seam"
        await self.store.expire(snapshot_key(*ident), ttl, under=versions_prefix(*ident))
        written = await self.store.write(
            record_key(*ident),
            RECORD_JSON.dump_json(record),
            ttl=ttl,
            revision=revisions.get(ident, 0),
        )
        if written is None:
            raise Conflict(
                f"session {record.key!r} was changed by another call meanwhile (this call's "
                "lock had run out); nothing was written: try again"
            )
        revisions[ident] = written

    async def without_browser(self, record: SessionRecord) -> SessionRecord:
        """``record`` with no browser recorded: its ``sign_in`` is then what a reopen
        restores — the snapshot's (none without one; SPEC §18)."""
        snapshot = await self.load_snapshot(record.tenant, record.key)
        states = dict(snapshot.sign_in) if snapshot is not None else {}
        return replace(record, browser=None, sign_in=states)

    async def delete(self, tenant: str, key: str) -> None:
        """Delete the session's record, its snapshot and its versions."""
        await self.store.delete(record_key(tenant, key), snapshot_key(tenant, key))
        await self.versions.delete_all(tenant, key)

    def bumped(
        self, history: Sequence[HistoryEntry], pages: Sequence[str], now: float | None = None
    ) -> tuple[HistoryEntry, ...]:
        """``history`` with ``pages`` visited at ``now`` (SPEC §4: TTL and cap)."""
        return hist.bump_many(
            history,
            pages,
            self.clock() if now is None else now,
            ttl=self.settings.session_ttl,
            cap=self.settings.history_cap,
        )

    async def hand_over(self, record: SessionRecord, generation: str) -> None:
        """Mark the browser ``generation`` of the session as handed over (SPEC §21): no
        secret is typed into it from now on (:meth:`handed_over`). Call with the session's
        lock held, so no type_secret runs meanwhile."""
        mark = handover_key(record.tenant, record.key)
        await self.store.set(mark, generation.encode(), ttl=self.settings.session_ttl)

    async def handed_over(self, tenant: str, key: str, generation: str) -> bool:
        """Whether the session's browser ``generation`` was ever handed over."""
        return await self.store.get(handover_key(tenant, key)) == generation.encode()

    # -- snapshots ------------------------------------------------------------------------

    async def load_snapshot(self, tenant: str, key: str) -> SiteData | None:
        """The session's saved snapshot, opened; None when it has none."""
        sealed = await self.store.get(snapshot_key(tenant, key))
        return None if sealed is None else self._snapshot_of(tenant, key, sealed)

    def _snapshot_of(self, tenant: str, key: str, sealed: bytes) -> SiteData:
        plain = self.cipher.open(sealed, tenant=tenant, kind="site-data", ident=key)
        return load_site_data(plain)

    async def put_snapshot(
        self, tenant: str, key: str, snapshot: SiteData, *, keep_version: bool = True
    ) -> None:
        """Seal ``snapshot`` for the session and store it (the session's TTL) — every
        save's one way in. The snapshot it replaces is kept as a version first (issue
        #26: ``SnapshotVersions.keep``), unless ``keep_version`` is false (a Forget, which
        changes the snapshot and every version alike)."""
        sealed = self.cipher.seal(
            dump_site_data(snapshot), tenant=tenant, kind="site-data", ident=key
        )
        if keep_version:
            replaced = await self.store.get(snapshot_key(tenant, key))
            if replaced is not None:
                await self.versions.keep(tenant, key, replaced)
        await self.store.set(snapshot_key(tenant, key), sealed, ttl=self.settings.session_ttl)

    async def delete_snapshot(self, tenant: str, key: str) -> int:
        """Delete the session's snapshot and its versions (a no-op without them): what
        ``restore_site_data=false`` and Clear forget. Returns how many versions went."""
        await self.store.delete(snapshot_key(tenant, key))
        return await self.versions.delete_all(tenant, key)

    # -- the session's mask (SPEC §7, §12; issue #24) --------------------------------------

    def sealed_mask(self, record: SessionRecord) -> list[str]:
        """The values of the record's sealed mask (``SessionRecord.mask``), oldest first.

        Raises:
            StoreUnavailable: it does not open for this session (moved, tampered with).
        """
        envelope = mask_envelope(record)
        if envelope is None:
            return []
        plain = self.cipher.open(envelope, tenant=record.tenant, kind=MASK_KIND, ident=record.key)
        return list(json.loads(plain))

    def with_mask(self, record: SessionRecord, values: Sequence[str]) -> SessionRecord:
        """``record`` with ``values`` added to its sealed mask: each once, newest last, at
        most :data:`MAX_MASKED` (the oldest go first); the same record when nothing is new."""
        old = self.sealed_mask(record) if values else []
        new = [v for v in dict.fromkeys(values) if v and v not in old]
        if not new:
            return record
        kept = [*old, *new][-MAX_MASKED:]
        sealed = self.cipher.seal(
            json_bytes(kept), tenant=record.tenant, kind=MASK_KIND, ident=record.key
        )
        return with_envelope(record, sealed)

    async def mask_values(self, tenant: str, record: SessionRecord) -> list[str]:
        """What the session masks in every result and view: its sealed mask (the values
        typed here as they were when typed, and those restored data carried in) and the
        current values of the secrets typed here (a record from before the mask was kept;
        a deleted or changed one is skipped)."""
        values = self.sealed_mask(record)
        for name, key in record.typed_secrets:
            with contextlib.suppress(SitekeepError):
                values.append(await self.vault.reveal(tenant, name, key))
        return list(dict.fromkeys(values))

    async def masker(
        self, tenant: str, record: SessionRecord, data: SiteData | None = None
    ) -> Masker:
        """What masks the session's values (:meth:`mask_values`) in its results and in
        ``data`` (its snapshot), with the values ``data`` carries (SPEC §7, §12)."""
        held = data.mask if data is not None else ()
        if not record.secret_typed and not held:
            return Masker({})
        return Masker.of([*await self.mask_values(tenant, record), *held])

    async def holds_secret(self, tenant: str, record: SessionRecord, url: str) -> bool:
        """Whether ``url`` holds a value the session masks (its URL is then withheld)."""
        values = await self.mask_values(tenant, record) if record.secret_typed else []
        return any(appears_in(value, url) for value in values)


def _record_of(tenant: str, key: str, found: Versioned | None) -> SessionRecord | None:
    revisions = _REVISIONS.get()
    if revisions is not None:
        revisions[(tenant, key)] = found.revision if found else 0
    if found is None:
        return None
    try:
        return RECORD_JSON.validate_json(found.value)
    except ValidationError as exc:
        raise StoreUnavailable(f"session {key!r} is stored in an unreadable form") from exc
