"""The sessions' browsers: started under the caps, attached, filled, released (SPEC §3, §13, §14).

A new browser's run is reserved in the ledger before the browser starts (the caps count
every replica's runs), and where it runs is recorded before anything loads in it; it runs
through the session's proxy, gets the session's snapshot (or a profile's site data)
restored, then lands. A browser is released before its run is closed, and a ledger that
fails is logged, never in the way.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import anyio

from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.manager import BrowserManager
from sitekeep.browser.proxy import ProxySettings
from sitekeep.browser.restore import restore
from sitekeep.browser.useragent import changed_warning, current_user_agent, override_user_agent
from sitekeep.config import Settings
from sitekeep.errors import CapacityExceeded, Forbidden, InvalidInput, NotFound, StoreUnavailable
from sitekeep.metrics import Metrics
from sitekeep.model import BrowserRef, Principal, SessionRecord, SiteData
from sitekeep.profiles import GatedProfiles
from sitekeep.proxies import Proxies
from sitekeep.seam.records import Records, site_data_uri
from sitekeep.stores.base import ClosedReason, Run, RunLedger

__all__ = ["Browsers", "Opened"]

log = logging.getLogger(__name__)

Opened = tuple[LiveBrowser, dict[str, Any] | None, SiteData | None]
"""A new browser, its restore report (None when nothing was restored) and the data
restored into it (None: none), whose mask (``SiteData.mask``) and sign-in state
(``SiteData.sign_in``) the session takes on."""


@dataclass(frozen=True, slots=True)
class Browsers:
    """Every session's browser, over the browser manager and the run ledger."""

    settings: Settings
    manager: BrowserManager
    runs: RunLedger
    records: Records
    proxies: Proxies
    profiles: GatedProfiles
    metrics: Metrics
    replica: str

    def clock(self) -> float:
        """Seconds since the epoch, by the records' clock."""
        return self.records.clock()

    async def new_browser(
        self,
        record: SessionRecord,
        *,
        land: str | None,
        restore_data: bool,
        preset: SiteData | None = None,
        land_field: str | None = None,
    ) -> Opened:
        """A new browser for the session, its run in the ledger: reserved under the caps
        before the browser starts, and where it runs recorded before anything loads in it.
        It runs through the session's proxy (SPEC §14); ``preset`` (a profile's site data)
        is restored instead of the session's snapshot.

        Args:
            land_field: the caller's argument that held ``land``, which a failed load
                names (``NavigationFailed.field``); None when ``land`` is the last page.

        Returns:
            The browser, the restore report and the restored data (:data:`Opened`), whose
            mask the caller adds to the session's (``Records.with_mask``).

        Raises:
            CapacityExceeded: a cap is reached; no browser was started.
            StoreUnavailable: the ledger cannot be reached; no browser is left running.
            InvalidInput: ``country`` — the session's proxy left the pool.
        """
        proxy = await self.proxy_of(record)
        run = await self._reserve(record)
        try:
            live = await self.manager.start(record.kind, insecure=record.insecure, proxy=proxy)
        except BaseException:
            await self.ledger(self.runs.close_run(run.id, at=self.clock(), reason="crashed"))
            raise
        try:
            await self.runs.started(run.id, live.ref.endpoint, live.ref.session_id)
        except BaseException:
            await self.release(live.ref, "crashed")
            raise
        try:
            filled, restored = await self._fill(
                live, record, land, restore_data, preset, land_field
            )
            return live, filled, restored
        except BaseException:
            # No record names this browser yet: a failed first load (an unsafe port, a
            # page slower than the navigation timeout) would leave it running unowned.
            with anyio.CancelScope(shield=True):
                await self.release(live.ref, "closed")
            raise
        finally:
            self.manager.replenish()

    async def _reserve(self, record: SessionRecord) -> Run:
        """A run for a new browser of ``record``'s session, under the caps (SPEC §13),
        counted over every replica; this session's own runs do not count.

        Raises:
            CapacityExceeded: ``scope`` tenant (with its ``cap``) or global (no ``cap``:
                the global cap is the operator's, not a tenant's to know).
        """
        settings = self.settings
        run = Run(
            id=secrets.token_hex(12),
            tenant=record.tenant,
            session=record.key,
            browser=record.kind,
            opened_at=self.clock(),
            replica=self.replica,
        )
        full = await self.runs.reserve(
            run, per_tenant=settings.max_sessions_per_tenant, total=settings.max_sessions
        )
        if full == "tenant":
            cap = settings.max_sessions_per_tenant
            raise CapacityExceeded(
                f"this tenant has {cap} live browsers, its cap (SITEKEEP_MAX_SESSIONS_PER_TENANT):"
                " close one (DELETE /v1/sessions/{key}/browser) and try again",
                scope="tenant",
                cap=cap,
            )
        if full == "global":
            # The operator's cap, over every tenant: the caller learns only that no browser
            # can start now — neither the number nor that other tenants hold the browsers.
            log.warning("the global cap of %d live browsers is reached", settings.max_sessions)
            raise CapacityExceeded(
                "no browser can start now: the service is at capacity; try again later",
                scope="global",
            )
        return run

    async def attach(
        self, ref: BrowserRef, proxy: ProxySettings | None = None
    ) -> LiveBrowser | None:
        """The live browser ``ref`` names, or None — then its run is closed as crashed
        (a no-op when a close or the reaper came first). ``proxy``: the one it runs
        through, whose credentials a new BiDi connection answers again."""
        live = await self.manager.attach(ref, proxy=proxy)
        if live is None:
            await self.ledger(self.runs.close(ref.session_id, at=self.clock(), reason="crashed"))
        return live

    async def current(self, record: SessionRecord) -> LiveBrowser | None:
        """The session's browser as it is now (no reopen, no ledger write), or None."""
        if record.browser is None:
            return None
        proxy = await self.proxy_of(record, gone=None)
        return await self.manager.attach(record.browser, proxy=proxy)

    async def proxy_of(
        self, record: SessionRecord, *, gone: type[InvalidInput] | None = InvalidInput
    ) -> ProxySettings | None:
        """The proxy the session's browsers run through (SPEC §14), credentials included;
        None without one.

        Raises:
            InvalidInput: ``country`` — the proxy left the pool (None with ``gone=None``:
                a live browser keeps its routing).
        """
        if record.proxy is None:
            return None
        try:
            row = await self.proxies.get(record.tenant, record.proxy)
        except NotFound:
            if gone is None:
                return None
            raise gone(
                f"proxy {record.proxy!r} of this session left the pool: open it again with "
                "a country",
                field="country",
            ) from None
        return await self.proxies.settings(row)

    async def release(self, ref: BrowserRef, reason: ClosedReason) -> None:
        """End a browser, then close its run: the browser is released first, and a ledger
        that fails is logged, never in the way (SPEC §13)."""
        await self.manager.close(ref)
        await self.ledger(self.runs.close(ref.session_id, at=self.clock(), reason=reason))

    @staticmethod
    async def ledger(write: Awaitable[object]) -> None:
        """Await a ledger write; one that fails is logged (SPEC §13: never in the way)."""
        try:
            await write
        except StoreUnavailable as exc:
            log.warning("the run ledger missed a close: %s", exc.message)

    async def _fill(
        self,
        live: LiveBrowser,
        record: SessionRecord,
        land: str | None,
        restore_data: bool,
        preset: SiteData | None = None,
        land_field: str | None = None,
    ) -> tuple[dict[str, Any] | None, SiteData | None]:
        """Restore the session's snapshot (or ``preset``: a profile's site data) into a
        new browser, then land; the restore report (None when nothing was written) and
        the restored data."""
        snapshot = await self._to_restore(record, restore_data, preset)
        if snapshot is None:
            if land:
                await live.navigate(land, field=land_field)
            return None, None
        warnings = await self.user_agent(live, record, snapshot)
        with self.metrics.timed(self.metrics.restores):
            report = await restore(live, snapshot, land, now=self.clock())
        warnings.extend(report.warnings)
        if not report.restored and not report.skipped and not warnings:
            return None, snapshot
        result = {**report.as_json(), "uri": site_data_uri(record.key)}
        if warnings:
            result["warnings"] = warnings
        return result, snapshot

    async def _to_restore(
        self, record: SessionRecord, restore_data: bool, preset: SiteData | None
    ) -> SiteData | None:
        """What a new browser of the session gets restored: ``preset``, else its snapshot,
        else the profile it was opened from; nothing for an insecure browser (restored
        cookies must never meet a man in the middle)."""
        if record.insecure:
            return None
        if preset is not None or not restore_data:
            return preset
        snapshot = await self.records.load_snapshot(record.tenant, record.key)
        if snapshot is None and record.profile is not None:
            snapshot = await self._profile_data(record)
        return snapshot

    async def _profile_data(self, record: SessionRecord) -> SiteData | None:
        """The site data of the profile the session was opened from, for a browser of a
        session that has saved none of its own yet — if its owner may still use it."""
        assert record.profile is not None
        owner = Principal(record.tenant, record.owner, "member")
        try:
            return (await self.profiles.load(owner, record.profile, "use", field=None)).site_data
        except (NotFound, Forbidden):
            return None  # deleted, or no longer shared: the session starts signed out

    async def user_agent(
        self, live: LiveBrowser, record: SessionRecord, snapshot: SiteData
    ) -> list[dict[str, Any]]:
        """Apply the snapshot's User-Agent when the session keeps it; warn when the
        browser runs under another one (SPEC §3 Cross-browser)."""
        saved = snapshot.user_agent
        if saved is None:
            return []
        warnings: list[dict[str, Any]] = []
        if record.keep_user_agent:
            why = await override_user_agent(live, saved)
            if why is not None:
                warnings.append(
                    {
                        "type": "user_agent_not_applied",
                        "reason": why,
                        "message": f"this {live.ref.kind} cannot override its User-Agent "
                        "over BiDi (emulation.setUserAgentOverride)",
                    }
                )
        changed = changed_warning(saved, await current_user_agent(live))
        if changed is not None:
            warnings.append(changed)
        return warnings
