"""The seam: the one place every browser-affecting call passes through (SPEC §2, §8).

:meth:`Seam.call` holds the session's lock (shared by every process and replica on the
session store, :mod:`sitekeep.stores.locks`), loads the record and the session's journal
state, and hands the use case a :class:`Session`: the call's working state. Every
journaled operation of the call goes through one operation context
(:mod:`sitekeep.seam.context`): begin durable → work → mask → apply → finish.

Rooms, each a module::

    records     session records, snapshots, masks (sealed), revisions, the lock
    browsers    new browser under the caps, attach, release, proxy, restore
    saving      reads of the browser's site data; the save that keeps them
    signins     sign-in state from a live browser: its landing, checks in background tabs
    autosaving  an automatic save, guarded against trading a sign-in for a sign-out
    operations  what each agent operation does in a live browser (HANDLERS)
    context     the operation context; each session's journal as this process knows it
    session     one call's working state: Session (takes the rooms, not the Seam)

Refs come from the journal: a restarted service rebuilds them, and the history and URL,
from there and the record (SPEC §8 "Restarting the service rebuilds state from the
journal").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sitekeep.browser.manager import BrowserManager
from sitekeep.config import Settings
from sitekeep.errors import StoreUnavailable
from sitekeep.journal import Journal, JournalKey
from sitekeep.metrics import Metrics
from sitekeep.model import Principal
from sitekeep.policy import check_key
from sitekeep.profiles import GatedProfiles
from sitekeep.proxies import Proxies
from sitekeep.seam.autosaving import autosaves
from sitekeep.seam.browsers import Browsers
from sitekeep.seam.context import run_operation
from sitekeep.seam.journaling import CallJournal, Tracks
from sitekeep.seam.records import (
    MASK_KIND,
    MAX_MASKED,
    Records,
    mask_envelope,
    site_data_uri,
    with_envelope,
)
from sitekeep.seam.saving import Saving
from sitekeep.seam.session import Session, SessionParts
from sitekeep.stores import SessionLocks, SessionStore
from sitekeep.stores.base import RunLedger
from sitekeep.stores.cipher import Cipher
from sitekeep.vault import Vault

__all__ = [
    "MASK_KIND",
    "MAX_MASKED",
    "Seam",
    "Session",
    "mask_envelope",
    "run_operation",
    "site_data_uri",
    "with_envelope",
]

log = logging.getLogger(__name__)

Body = Callable[[Session], Awaitable[dict[str, Any]]]


class Seam:
    """Records, snapshots, locks, browsers and the journal of every session: the rooms
    wired together, and :meth:`call`.

    Attributes:
        records: records, snapshots, masks and the session lock (``seam.records``).
        browsers: the sessions' browsers (``seam.browsers``).
        saving: reads and saves of site data (``seam.saving``).
        tracks: each session's journal as this process knows it (``seam.context``).
        metrics: counters and histograms for ``GET /metrics`` (SPEC §13): saves and
            restores are timed here, where every facade's call passes.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: SessionStore,
        locks: SessionLocks,
        runs: RunLedger,
        cipher: Cipher,
        browsers: BrowserManager,
        vault: Vault,
        journal: Journal,
        profiles: GatedProfiles,
        proxies: Proxies,
        replica: str,
        own_origins: Callable[[], list[str]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.journal = journal
        self.records = Records(settings, store, locks, cipher, vault, clock)
        self.browsers = Browsers(
            settings, browsers, runs, self.records, proxies, profiles, self.metrics, replica
        )
        self.saving = Saving(settings, self.records, self.metrics)
        self.tracks = Tracks(journal)
        self._parts = SessionParts(self.records, self.browsers, self.saving, vault, own_origins)
        self.on_use: Callable[[Principal, str], None] | None = None
        """Told of each call that used a session's live browser (``use=True``): the
        service arms the session's checkpoint (``service.autosave``)."""

    async def call(
        self,
        who: Principal,
        key: str,
        body: Body,
        *,
        inspect: bool = True,
        key_field: str = "key",
        held: bool = False,
        use: bool = False,
    ) -> dict[str, Any]:
        """Run ``body`` on the session with its lock held; first, when ``inspect`` and an
        earlier call left the session unsettled, inspect and settle it (SPEC §8).
        ``key_field`` is the caller's argument that named the session; ``held``: the
        caller holds the session's lock already (``Records.held``: the reaper); ``use``:
        the call is a use of the session's browser (an agent's), told to :attr:`on_use`
        once it returns with a live browser recorded that saves by itself.

        Raises:
            InvalidInput: a malformed key (field ``key_field``).
            SessionBusy: another call held the session past ``SITEKEEP_LOCK_WAIT``.
        """
        key = check_key(key, key_field)
        if held:
            session, result = await self._run(who, key, body, inspect, key_field)
        else:
            async with self.records.held(who.tenant, key):
                session, result = await self._run(who, key, body, inspect, key_field)
        if use and self.on_use is not None and autosaves(session):
            self.on_use(who, key)
        return result

    async def _run(
        self, who: Principal, key: str, body: Body, inspect: bool, key_field: str
    ) -> tuple[Session, dict[str, Any]]:
        track = await self.tracks.take(JournalKey(who.tenant, key))
        record = await self.records.load(who.tenant, key)
        session = Session(self._parts, who, key, record, CallJournal(self.tracks, track), key_field)
        try:
            if inspect and track.state.unsettled:
                await session.inspect()
            return session, await body(session)
        finally:
            self.tracks.keep(session.track)

    async def remove_journal(self, tenant: str, key: str) -> None:
        """Remove the session's journal: it goes with the session (SPEC §8), deleted or
        expired. A journal that cannot be removed is logged (the reaper tries again)."""
        self.tracks.forget(tenant, key)
        try:
            await self.journal.remove(JournalKey(tenant, key))
        except (OSError, StoreUnavailable) as exc:
            log.warning("a journal could not be removed: %s", exc)
