"""When sessions save by themselves (SPEC §18; issue #26): as their browser closes — a
close call, the reaper, ``sitekeep stop``, the server's shutdown — and at a checkpoint
while in use.

**Checkpoints** are per-session asyncio timer tasks owned by the service's lifecycle, not
a scheduler: a call that uses a session's browser arms one timer for it (none while one
is armed); ``SITEKEEP_CHECKPOINT`` seconds later it saves the session once — through the
seam, so under the session's lock, never beside an agent's call — and is gone. A session
nobody uses is not saved again until it is used (its browser holds nothing new an agent
did; the reaper's close saves it last). The timers live in this process only, tied to a
browser it drives: a session used on another replica is checkpointed there, and a process
that dies takes its timers with it — its browsers are then saved by the reaper's close
(issue #26 allows such an in-process interval; a job that must survive restarts and run
once across replicas would take APScheduler or procrastinate instead).

Every automatic save runs the seam's ``autosave`` (journaled as operation ``autosave``
with its reason, guarded against trading a sign-in for a sign-out).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from sitekeep.args import AutosaveReason
from sitekeep.browser.manager import BrowserManager
from sitekeep.config import Settings
from sitekeep.errors import BrowserUnavailable, InvalidInput, SitekeepError, error_json
from sitekeep.model import Principal
from sitekeep.seam import Seam, Session
from sitekeep.seam.autosaving import autosave

__all__ = ["SYSTEM", "Autosaves", "save_or_report"]

log = logging.getLogger(__name__)

SYSTEM = "sitekeep"
"""The subject an automatic save runs as (it is nobody's call)."""


async def save_or_report(s: Session, reason: AutosaveReason) -> dict[str, Any] | None:
    """:func:`~sitekeep.seam.autosaving.autosave` before a browser closes: a save the
    browser or the snapshot's size made impossible is reported in the result
    (``{reason, error}``) and the browser may close; a store that cannot be reached raises
    (the browser must stay: closing it would lose what it holds).

    Raises:
        StoreUnavailable: the journal or the session store could not be reached.
    """
    try:
        return await autosave(s, reason)
    except (BrowserUnavailable, InvalidInput) as exc:
        log.warning("an automatic save (%s) failed: %s", reason, type(exc).__name__)
        return {"reason": reason, "error": error_json(exc)}


class Autosaves:
    """The checkpoint timers of the sessions this process uses, and the automatic saves
    of their browsers as they close (the module's docstring)."""

    def __init__(self, settings: Settings, seam: Seam, browsers: BrowserManager) -> None:
        self._settings = settings
        self._seam = seam
        self._browsers = browsers
        self._timers: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._used: set[tuple[str, str]] = set()
        self._closing = False

    def used(self, who: Principal, key: str) -> None:
        """A call used session ``key``'s browser: arm its checkpoint unless one is armed
        (or checkpoints are off, ``SITEKEEP_CHECKPOINT=0``)."""
        ident = (who.tenant, key)
        self._used.add(ident)
        interval = self._settings.checkpoint
        if interval <= 0 or self._closing or ident in self._timers:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timers[ident] = loop.create_task(self._checkpoint(ident, interval))

    def forget(self, tenant: str, key: str) -> None:
        """The session's browser closed (or the session went): no checkpoint for it."""
        ident = (tenant, key)
        self._used.discard(ident)
        timer = self._timers.pop(ident, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    async def _checkpoint(self, ident: tuple[str, str], interval: float) -> None:
        try:
            await asyncio.sleep(interval)
        finally:
            # From here on a use arms the next checkpoint (this one is under way).
            if self._timers.get(ident) is asyncio.current_task():
                del self._timers[ident]
        try:
            await self.save(*ident, "checkpoint")
        except SitekeepError as exc:
            log.warning("a checkpoint failed: %s", type(exc).__name__)
        except Exception:  # a checkpoint never takes the server down
            log.exception("a checkpoint failed")

    async def save(
        self, tenant: str, key: str, reason: AutosaveReason, *, held: bool = False
    ) -> dict[str, Any] | None:
        """An automatic save of session ``key`` through the seam (its lock taken, unless
        ``held``: the caller holds it). Returns its result, None when nothing was saved.

        Raises:
            SessionBusy: the lock was not free within ``SITEKEEP_LOCK_WAIT``.
            SitekeepError: the save failed (``seam.autosaving.autosave``).
        """
        who = Principal(tenant, SYSTEM)

        async def body(s: Session) -> dict[str, Any]:
            return await autosave(s, reason) or {}

        saved = await self._seam.call(who, key, body, held=held)
        return saved or None

    async def shutdown(self) -> int:
        """The server stops: cancel every checkpoint, then save each session used here
        whose browser this process still drives (the browsers live on, SPEC §2).

        Returns:
            How many sessions were saved.
        """
        self._closing = True
        timers, self._timers = list(self._timers.values()), {}
        for timer in timers:
            timer.cancel()
        for timer in timers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await timer
        saved = 0
        for tenant, key in sorted(self._used):
            saved += await self._save_at_shutdown(tenant, key)
        self._used.clear()
        return saved

    async def _save_at_shutdown(self, tenant: str, key: str) -> int:
        try:
            record = await self._seam.records.load(tenant, key)
            if record is None or record.browser is None or not self._browsers.holds(record.browser):
                return 0
            return 1 if await self.save(tenant, key, "shutdown") else 0
        except SitekeepError as exc:
            log.warning("an automatic save at shutdown failed: %s", type(exc).__name__)
            return 0
