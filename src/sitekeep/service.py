"""The use cases. HTTP, MCP and the CLI call this module and nothing below it.

Every call that affects a browser passes through one seam, ``sitekeep.seam``: it locks
the session, journals a begin before the browser is touched and a finish after the
effects were seen (SPEC §8), reattaches to (or silently reopens) its browser, dispatches
the operation, records where the browser landed in the history, hands out a pending
reopen report once, and writes the record back. This module keeps the use cases.

Results are plain JSON-able dicts in the shapes of SPEC §5; none holds a value except the
owner's per-host view (:meth:`Service.site_data_host`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from sitekeep import history as hist
from sitekeep import reaping, sitedata
from sitekeep.admin import Admin
from sitekeep.auth import Authenticator, TokenInfo
from sitekeep.browser.docs import read_cookies
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.manager import BrowserManager
from sitekeep.browser.useragent import override_user_agent
from sitekeep.config import Settings
from sitekeep.cookies import cookie_host
from sitekeep.errors import (
    Forbidden,
    InvalidInput,
    NotFound,
    SessionBusy,
    StoreUnavailable,
)
from sitekeep.flows import run_steps
from sitekeep.handover import Handovers
from sitekeep.interop import FORMATS, Format, export_site_data, import_text
from sitekeep.journal import Journal, JournalKey, open_journal
from sitekeep.live import LiveSessions
from sitekeep.masking import Masker, masked_site_data
from sitekeep.metrics import check_scraper
from sitekeep.model import (
    BrowserKind,
    Cookie,
    Principal,
    Role,
    SessionRecord,
    SiteData,
    well_formed,
)
from sitekeep.policy import check_key, check_url
from sitekeep.profiles import Loaded, Profiles, captured, first_site, profile_json
from sitekeep.proxies import Proxies, proxy_json
from sitekeep.seam import Seam, Session, run_operation, site_data_uri
from sitekeep.seam.operations import Done
from sitekeep.seam.records import record_key, snapshot_key
from sitekeep.secrets import SecretInfo
from sitekeep.state_preview import state_preview
from sitekeep.steps import OnError, SaveArgs, parse_args, parse_steps
from sitekeep.stores import SessionLocks, SessionStore, open_database, open_sessions
from sitekeep.stores.base import (
    ClosedReason,
    ProfileRow,
    ProfileStore,
    ProxyRow,
    ProxyStore,
    Run,
    RunLedger,
    SecretStore,
    TokenStore,
)
from sitekeep.stores.cipher import Cipher, KeyFile
from sitekeep.stores.database import Database
from sitekeep.stores.health import database_health, session_store_health
from sitekeep.stores.profiles import SqlProfileStore, SqlProxyStore
from sitekeep.stores.runs import SqlRunLedger
from sitekeep.stores.secrets import SqlSecretStore
from sitekeep.stores.tokens import SqlTokenStore
from sitekeep.vault import Vault

__all__ = ["Service"]

log = logging.getLogger(__name__)

_KINDS: tuple[BrowserKind, ...] = ("chromium", "firefox")
INSECURE_HINT = (
    "insecure=true: nothing was restored and nothing was deleted — restored cookies must "
    "never meet a man in the middle"
)


@dataclass(frozen=True, slots=True)
class Stores:
    """Every store a service uses, opened from the settings' URLs (SPEC §13)."""

    sessions: SessionStore
    locks: SessionLocks
    database: Database
    tokens: TokenStore
    secrets: SecretStore
    runs: RunLedger
    profiles: ProfileStore
    proxies: ProxyStore

    @classmethod
    def open(cls, settings: Settings, clock: Callable[[], float] = time.time) -> Stores:
        """Open (and upgrade to the newest schema) the database and the session store.

        Raises:
            InvalidInput: a store URL naming no known backend (field: its setting).
            StoreUnavailable: a store cannot be reached or upgraded.
        """
        database = open_database(settings.database)
        try:
            sessions, locks = open_sessions(
                settings.session_store_url, clock, lock_ttl=settings.lock_ttl
            )
        except BaseException:
            database.dispose()
            raise
        return cls(
            sessions,
            locks,
            database,
            SqlTokenStore(database),
            SqlSecretStore(database),
            SqlRunLedger(database),
            SqlProfileStore(database),
            SqlProxyStore(database),
        )

    async def aclose(self) -> None:
        await self.locks.aclose()
        await self.sessions.aclose()
        await self.database.aclose()


GAUGES_EVERY = 5.0
"""Seconds ``/metrics`` answers the gauges it last read (sessions, live browsers): however
often the scraper asks (a leaked scrape token must be no lever), the stores are read at most
this often. The session count is the store's own (``SessionStore.count``: an index range in
a worker thread, or Redis's per-tenant index), not a list of every key (which, at 100k
sessions on Redis, took 3 s a read and, with 4 clients asking in a loop, held /healthz's p95
at 1.1 s)."""


class Service:
    """sitekeep's use cases over the stores, a cipher and a browser manager."""

    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        cipher: Cipher,
        browsers: BrowserManager,
        clock: Callable[[], float] = time.time,
        journal: Journal | None = None,
    ) -> None:
        self.settings = settings
        self.stores = stores
        self._store = stores.sessions
        self._cipher = cipher
        self.browsers = browsers
        self.secrets = Vault(stores.secrets, cipher, clock)
        self.auth = Authenticator(stores.tokens, clock)
        self._clock = clock
        self.replica = f"{socket.gethostname()}:{os.getpid()}"
        self.journal = journal or open_journal(settings)
        """Every session's journal (SPEC §8)."""
        self.profiles = Profiles(stores.profiles, cipher, clock)
        """The profile use cases (SPEC §9), each behind the one gate (``profiles.gate``)."""
        self.proxies = Proxies(stores.proxies, self.secrets, clock)
        """The tenant's proxy pool (SPEC §14)."""
        self.seam = Seam(
            settings,
            store=stores.sessions,
            locks=stores.locks,
            runs=stores.runs,
            cipher=cipher,
            browsers=browsers,
            vault=self.secrets,
            journal=self.journal,
            profiles=self.profiles,
            proxies=self.proxies,
            replica=self.replica,
            own_origins=self.own_origins,
            clock=clock,
        )
        """Where every browser-affecting call passes (``sitekeep.seam``)."""
        self.admin = Admin(self)
        self.live = LiveSessions(self)
        self.handovers = Handovers(self)
        """WebDriver handovers (SPEC §21)."""
        """The admin use cases (SPEC §11), behind :meth:`require_admin`."""
        self.metrics = self.seam.metrics
        """Counters and histograms for ``GET /metrics`` (SPEC §13)."""
        self._gauges: tuple[float, int, Counter[str]] | None = None
        """When the gauges of ``/metrics`` were read (monotonic seconds), and what."""
        self._gauges_lock = anyio.Lock()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        clock: Callable[[], float] = time.time,
        journal: Journal | None = None,
    ) -> Service:
        """Open the stores, load (or generate) the master key, prepare the browsers; the
        journal is ``journal`` when given, else the one the settings name."""
        cipher = Cipher(KeyFile(settings.key_file, settings.master_key))
        stores = Stores.open(settings, clock)
        return cls(settings, stores, cipher, BrowserManager(settings), clock, journal)

    async def aclose(self) -> None:
        """Close sockets and store connections; browsers live on (SPEC §2)."""
        await self.browsers.aclose()
        await self.handovers.aclose()
        await self.stores.aclose()
        await self.journal.aclose()

    # -- the seam (sitekeep.seam): records, snapshots, locks, browsers, the journal -------

    @staticmethod
    def _record_key(tenant: str, key: str) -> str:
        return record_key(tenant, key)

    @staticmethod
    def _snapshot_key(tenant: str, key: str) -> str:
        return snapshot_key(tenant, key)

    async def _load(self, tenant: str, key: str) -> SessionRecord | None:
        return await self.seam.records.load(tenant, key)

    async def _require(self, who: Principal, key: str, field: str = "key") -> SessionRecord:
        return await self.seam.records.require(who, key, field)

    async def _values_gate(
        self, who: Principal, key: str, what: str, *, profile: bool = True, field: str = "key"
    ) -> SessionRecord:
        """The session's record when ``who`` may take its values out (attacker review M2,
        M4): a storage-state export or import, a capture or save into a profile, the
        browser handed over. Only the session's owner or an admin of its tenant may; and
        a session opened from a profile holds that profile's sign-ins, so when it was
        (``record.profile``), only one who may manage that profile (``capture``: see its
        values) may — one who may only *use* a workspace profile never gets its values
        out through a session. A profile deleted since: admins only. ``profile``
        False: a write that takes no value out (an import) needs the owner or an admin only.

        Raises:
            NotFound: no such session (naming ``field``, the argument that held ``key``).
            Forbidden: none of those; nothing was changed.
        """
        record = await self._require(who, key, field)
        if who.role != "admin" and who.subject != record.owner:
            raise Forbidden(f"only an admin or the session's owner may {what}")
        if profile and record.profile is not None:
            try:
                await self.profiles.get(who, record.profile, "capture")
            except NotFound:
                if who.role != "admin":
                    raise Forbidden(
                        f"the session was opened from a profile: only an admin may {what}"
                    ) from None
            except Forbidden:
                raise Forbidden(
                    "the session was opened from a profile you may use but not manage: "
                    f"only one who may manage it may {what}"
                ) from None
        return record

    async def _put(self, record: SessionRecord) -> None:
        await self.seam.records.put(record)

    async def _load_snapshot(self, tenant: str, key: str) -> SiteData | None:
        return await self.seam.records.load_snapshot(tenant, key)

    async def _put_snapshot(self, tenant: str, key: str, snapshot: SiteData) -> None:
        await self.seam.records.put_snapshot(tenant, key, snapshot)

    def _held(
        self, tenant: str, key: str, *, wait: float | None = None
    ) -> contextlib.AbstractAsyncContextManager[None]:
        return self.seam.records.held(tenant, key, wait=wait)

    async def _seam(
        self,
        who: Principal,
        key: str,
        op: str,
        args: Mapping[str, Any],
        body: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """``body`` with the session's lock held and nothing journaled: for writes that
        touch no browser and need no mark (tests arranging a session). ``op`` and
        ``args`` name the call."""
        del op, args

        async def run(_: Session) -> dict[str, Any]:
            return await body()

        return await self.seam.call(who, key, run, inspect=False)

    def session_held(self, tenant: str, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """The session's lock held for a block (key rotation reseals a snapshot so).

        Raises:
            SessionBusy: not acquired within ``SITEKEEP_LOCK_WAIT``.
        """
        return self._held(tenant, key)

    @property
    def cipher(self) -> Cipher:
        """The cipher every blob is sealed with (its key ring follows the key file)."""
        return self._cipher

    @staticmethod
    def _site_data_uri(key: str) -> str:
        return site_data_uri(key)

    # -- use cases ------------------------------------------------------------------------

    async def open_session(
        self,
        who: Principal,
        *,
        key: str | None = None,
        browser: str | None = None,
        url: str | None = None,
        profile: str | None = None,
        restore_site_data: bool = True,
        fresh: bool = False,
        insecure: bool = False,
        country: str | None = None,
        keep_user_agent: bool | None = None,
    ) -> dict[str, Any]:
        """Open (or return to) a session's browser (SPEC §3 Restore, §5 ``open_session``).

        A new browser — none live, ``fresh``, another kind or another certificate policy —
        gets the snapshot restored (unless ``restore_site_data`` is false or ``insecure``)
        before it lands on ``url`` or the last page. ``restore_site_data=false`` deletes
        the snapshot (``{"forgotten": N}``, N hosts) and starts a clean browser (a live
        one, signed in, is closed); the history stays. A browser of another kind than
        the session's last says so: ``switched_browser: {from, to}``.
        ``keep_user_agent`` (kept for the session's later browsers; None leaves it as it
        is) runs the browser under the User-Agent the snapshot was saved under; a restore
        under another one warns ``{type: "user_agent_changed"}`` in ``site_data.warnings``.
        ``profile`` (an id ``who`` may use, SPEC §9) starts a new browser with the
        profile's site data restored before it lands (on ``url``, else the last page,
        else the profile's first site); ``site_data.profile`` names it. Later saves of
        the session do not write back into the profile.

        Returns:
            ``{key, url, title, site_data?, switched_browser?, hint?}``.

        Raises:
            InvalidInput: a bad key, browser or URL, or an option not available yet.
            BrowserUnavailable: no browser could be started (503).
            JournalUnavailable: the journal's begin could not be made durable (503,
                SPEC §8); the browser was not touched.
        """
        key = check_key(key) if key is not None else secrets.token_hex(6)
        kind = self._kind(browser)
        # The gate first: a profile one may not use is refused before anything else.
        loaded = (
            await self.profiles.load(who, profile, "use", field="profile")
            if profile is not None
            else None
        )
        if country is None and loaded is not None:
            country = loaded.row.country  # a profile signs in from where it was captured
        route = await self.proxies.choose(who.tenant, country) if country is not None else None
        if url is not None:
            url = check_url(url, own=self.browsers.own_address, own_origins=self.own_origins())
        args = {
            "browser": kind,
            "url": hist.trim_url(url) if url else None,
            "profile": profile,
            "country": route.country if route else None,
            "restore_site_data": restore_site_data,
            "fresh": fresh,
            "insecure": insecure,
            "keep_user_agent": keep_user_agent,
        }

        async def body(s: Session) -> dict[str, Any]:
            before = s.record.browser if s.record is not None else None

            async def work() -> Done:
                result = await self._open_locked(
                    s,
                    kind or self.settings.browser,
                    kind is not None,
                    url,
                    restore_site_data=restore_site_data,
                    fresh=fresh or loaded is not None,
                    insecure=insecure,
                    keep_user_agent=keep_user_agent,
                    profile=loaded,
                    route=route,
                )
                return Done(result, refs="invalidated")

            try:
                done = await run_operation(s, "open_session", args, work)
                return await s.end(dict(done.result))
            except BaseException:
                # No stored record names a browser this open started: a failure (its
                # browser died mid-restore) would leave it unowned (issue #8 item 6).
                if s.browser is not None and (
                    before is None or s.browser.ref.generation != before.generation
                ):
                    with anyio.CancelScope(shield=True):
                        await self.seam.browsers.release(s.browser.ref, "closed")
                raise

        opened = await self.seam.call(who, key, body)
        self.metrics.opened.inc()
        return opened

    async def _open_locked(
        self,
        s: Session,
        kind: BrowserKind,
        kind_given: bool,
        url: str | None,
        *,
        restore_site_data: bool,
        fresh: bool,
        insecure: bool,
        keep_user_agent: bool | None = None,
        profile: Loaded | None = None,
        route: ProxyRow | None = None,
    ) -> dict[str, Any]:
        now = self._clock()
        who, key = s.who, s.key
        record = s.record or SessionRecord(
            tenant=who.tenant,
            key=key,
            owner=who.subject,
            kind=kind,
            created_at=now,
            last_used_at=now,
        )
        result: dict[str, Any] = {"key": key}
        if not restore_site_data:
            forgotten = await self._forget_snapshot(who.tenant, key)
            await s.mark("forgotten", detail={"hosts": forgotten})
            result["site_data"] = {"forgotten": forgotten}
        to = kind if kind_given else record.kind
        if to != record.kind:
            result["switched_browser"] = {"from": record.kind, "to": to}
        # Forgetting the site data forgets the browser that holds it too: a clean one.
        rerouted = route is not None and route.name != record.proxy
        clean = fresh or not restore_site_data or rerouted
        live = await self._reusable(record, to, insecure, clean)
        record = replace(record, kind=to, insecure=insecure)
        if route is not None:
            record = replace(record, country=route.country, proxy=route.name)
        if keep_user_agent is not None:
            record = replace(record, keep_user_agent=keep_user_agent)
        if profile is not None:
            record = replace(record, profile=profile.row.id)
        if live is None:
            preset = profile.site_data if profile is not None else None
            live, report, mask = await self.seam.browsers.new_browser(
                record,
                land=url or record.url or (first_site(preset) if preset else None),
                restore_data=restore_site_data,
                preset=preset,
                land_field="url" if url else None,
            )
            record = self.seam.records.with_mask(record, mask)  # the mask follows the data
            s.browser = live
            await s.journal.new_browser("opened", live.ref, report)
            if report is not None:
                result["site_data"] = report
            if profile is not None:
                named = {"id": profile.row.id, "name": profile.row.name}
                result["site_data"] = {**result.get("site_data", {}), "profile": named}
        else:
            s.browser = live
            if keep_user_agent:
                snapshot = await self._load_snapshot(who.tenant, key)
                if snapshot is not None and snapshot.user_agent:
                    await override_user_agent(live, snapshot.user_agent)
            if url is not None:
                await live.navigate(url, field="url")
        if insecure:
            result["hint"] = INSECURE_HINT
        if record.proxy is not None:
            result["proxy"] = {"name": record.proxy, "country": record.country}
        s.record = replace(record, browser=live.ref, reopened=None, refs=None)
        return result

    async def _reusable(
        self, record: SessionRecord, kind: BrowserKind, insecure: bool, fresh: bool
    ) -> LiveBrowser | None:
        """The live browser to keep using, or None (after closing one that cannot stay)."""
        if record.browser is None:
            return None
        live = await self.seam.browsers.attach(
            record.browser, await self.seam.browsers.proxy_of(record, gone=None)
        )
        if live is None:
            return None
        if fresh or record.browser.kind != kind or record.browser.insecure != insecure:
            await self.seam.browsers.release(record.browser, "closed")
            return None
        return live

    async def _forget_snapshot(self, tenant: str, key: str) -> int:
        snapshot = await self._load_snapshot(tenant, key)
        if snapshot is None:
            return 0
        await self._store.delete(self._snapshot_key(tenant, key))
        return len(sitedata.host_rows(snapshot, ()))

    def _kind(self, browser: str | None) -> BrowserKind | None:
        if browser is None:
            return None
        for kind in _KINDS:
            if browser == kind:
                return kind
        raise InvalidInput(f"browser must be one of {', '.join(_KINDS)}", field="browser")

    def own_origins(self) -> list[str]:
        port = self.settings.port
        return [f"http://{host}:{port}" for host in (self.settings.host, "127.0.0.1", "localhost")]

    async def act(self, who: Principal, key: str, op: str, **args: Any) -> dict[str, Any]:
        """Run one agent operation (SPEC §5) on session ``key``.

        Args:
            op: ``navigate``, ``back``, ``forward``, ``snapshot``, ``click``, ``type``,
                ``type_secret``, ``press``, ``select``, ``read``, ``screenshot``,
                ``wait_for``, ``assert_text`` or ``save_site_data``.
            args: the operation's arguments (``sitekeep.steps``).

        Returns:
            The operation's result with ``{url, title}`` of where the browser landed —
            or ``url_withheld: true`` instead of the URL when it holds a typed secret.
            ``warnings: [{type: journal_unsettled | journal_inspected, message}]`` when
            the journal could not record this call's finish (its effects happened: look
            before repeating it), or when an earlier call's outcome was unknown and the
            browser was inspected first (SPEC §8).

        Raises:
            InvalidInput: a bad argument, naming the field. NotFound: no such session,
            secret or element. StaleRef: a ref from an old snapshot. SecretNotAllowed:
            a secret on a host it may not be typed on. NavigationFailed, BrowserUnavailable.
            JournalUnavailable: the journal's begin could not be made durable (503,
                SPEC §8); the browser was not touched.
        """
        parsed = parse_args(op, args)

        async def body(s: Session) -> dict[str, Any]:
            return await s.end(await s.dispatch(op, parsed))

        return await self.seam.call(who, key, body)

    async def navigate(self, who: Principal, key: str, url: str) -> dict[str, Any]:
        """Go to ``url`` and wait for the page to load. Returns ``{url, title}``.

        Raises:
            InvalidInput: a URL agents may not open (SPEC §12).
        """
        check_url(url, own=self.browsers.own_address, own_origins=self.own_origins())
        return await self.act(who, key, "navigate", url=url)

    async def back(self, who: Principal, key: str) -> dict[str, Any]:
        """One step back in the main tab's history. Returns ``{url, title}``."""
        return await self.act(who, key, "back")

    async def forward(self, who: Principal, key: str) -> dict[str, Any]:
        """One step forward in the main tab's history. Returns ``{url, title}``."""
        return await self.act(who, key, "forward")

    async def run_flow(
        self,
        who: Principal,
        key: str,
        steps: Sequence[Mapping[str, Any]],
        on_error: str = "stop",
    ) -> dict[str, Any]:
        """Run ``steps`` in one call (SPEC §6): every step reports its outcome and where it
        left the browser; a failed step stops the flow unless its ``on_error`` (or the
        flow's) is ``continue``. The history is written once at the end, in order — and,
        before a ``save_site_data`` step, first with the pages reached so far.

        Returns:
            ``{url, title, ok, steps: [{step, op, status, url, title, ...}], site_data?}``.

        Raises:
            InvalidInput: a malformed step, naming it (``steps[2].url``); nothing has run.
            JournalUnavailable: the journal's begin could not be made durable (503,
                SPEC §8); the browser was not touched.
        """
        if on_error not in ("stop", "continue"):
            raise InvalidInput("on_error is stop or continue", field="on_error")
        parsed = parse_steps(steps)

        steps_args = [{"op": p.op, **p.args.model_dump(exclude_none=True)} for p in parsed]

        async def body(s: Session) -> dict[str, Any]:
            s.require()
            mode: OnError = "continue" if on_error == "continue" else "stop"

            async def work() -> Done:
                return Done(await run_steps(s, parsed, mode))

            done = await run_operation(
                s, "run_flow", {"steps": steps_args, "on_error": on_error}, work
            )
            return await s.end(dict(done.result))

        return await self.seam.call(who, key, body)

    async def save_site_data(
        self,
        who: Principal,
        key: str,
        *,
        profile: str | None = None,
        full: bool = False,
        indexed_db: bool = False,
    ) -> dict[str, Any]:
        """Replace the session's snapshot with the browser's site data (SPEC §3 Save).

        Args:
            indexed_db: also carry every visited origin's IndexedDB databases (SPEC §3
                IndexedDB); without it, each origin known to hold some is named in
                ``skipped`` as not carried.
            full: read every history origin through the spare tab, ignoring the copies
                captured on leave (slower; the reference the fast path must equal).

        Returns:
            ``{url, title, saved: {cookies, sites, skipped, spare_reads}, uri}`` — never a
            value; ``spare_reads`` counts the origins read through the spare tab (the rest
            were read live or copied on leave).

        Raises:
            SnapshotTooLarge: the cookies alone pass the cap; the old snapshot stands.
            BrowserUnavailable: BiDi is down; nothing was saved.
            JournalUnavailable: the journal's begin could not be made durable (503,
                SPEC §8); the browser was not touched.
        """
        if profile is not None:
            # the gates, before the browser
            await self.profiles.get(who, profile, "capture", field="profile")
            await self._values_gate(who, key, "save it into a profile")

        async def body(s: Session) -> dict[str, Any]:
            args = SaveArgs(indexed_db=indexed_db, full=full)
            result = await s.dispatch("save_site_data", args)
            if profile is not None:
                # The snapshot this save just stored, as it stored it: not read back.
                kept = captured(s.saved or SiteData(), None, self._clock())
                row = await self.profiles.write(who, profile, kept)
                result["profile"] = profile_json(row, who, self._clock())
            return await s.end(result)

        return await self.seam.call(who, key, body)

    async def current(self, who: Principal, key: str) -> dict[str, Any]:
        """The current page (without touching the browser's state) and a site-data summary.

        Returns:
            ``{key, url, title, browser: {kind, live}, site_data: {saved_at, hosts}}``.
        """
        # The record and the snapshot in one store round trip (the hot read, SPEC §16).
        [(record, snapshot)] = await self.seam.records.load_with_snapshots(
            who.tenant, [check_key(key)]
        )
        if record is None:
            raise NotFound("session", key, field="key")
        live = await self._live(record)
        page = await live.page_info() if live is not None else None
        url = page.url if page else record.url
        withheld = url is not None and await self.seam.records.holds_secret(who.tenant, record, url)
        masker = await self.seam.records.masker(who.tenant, record)
        return well_formed(
            masker.value(
                {
                    "key": key,
                    **({"url_withheld": True} if withheld else {"url": url}),
                    "title": page.title if page else None,
                    "browser": {"kind": record.kind, "live": live is not None},
                    "site_data": {
                        "saved_at": snapshot.saved_at if snapshot else None,
                        "hosts": len(sitedata.host_rows(snapshot, record.history))
                        if snapshot
                        else 0,
                        "uri": self._site_data_uri(key),
                    },
                }
            )
        )

    async def end_browsers(self) -> int:
        """End every session's browser and every pool browser on this data dir, then the
        embedded drivers (``sitekeep stop``). Ending sessions first lets each driver clean
        its browser's profile up. Records, history and snapshots stay.

        Returns:
            How many session browsers were ended.
        """
        ended = 0
        for store_key in await self._store.keys("session/"):
            _, tenant, key = store_key.split("/", 2)
            async with self._held(tenant, key):
                record = await self._load(tenant, key)
                if record is None or record.browser is None:
                    continue
                await self.seam.browsers.release(record.browser, "closed")
                await self._put(replace(record, browser=None))
            ended += 1
        await self.browsers.end_pools()
        self.browsers.stop_local_drivers()
        return ended

    async def live_browser(self, who: Principal, key: str) -> LiveBrowser | None:
        """The session's live browser as it is now (no reopen), or None: for tools that
        drive it directly — tests, and later the live view (SPEC §10)."""
        return await self._live(await self._require(who, key))

    async def _live(self, record: SessionRecord) -> LiveBrowser | None:
        """The session's browser as it is now (no reopen), or None."""
        if record.browser is None:
            return None
        proxy = await self.seam.browsers.proxy_of(record, gone=None)
        return await self.browsers.attach(record.browser, proxy=proxy)

    async def sessions(self, who: Principal) -> list[dict[str, Any]]:
        """The caller's tenant's sessions, most recently used first (``GET /v1/sessions``).
        No browser is touched: ``browser.live`` says a browser is recorded for it.

        Returns:
            ``[{key, owner, url | url_withheld, browser: {kind, live}, created_at,
            last_used_at}]``, times in seconds since the epoch.
        """
        return [await self._session_row(who, r) for r in await self.records(who.tenant)]

    async def metrics_text(self, authorization: str | None) -> bytes:
        """``GET /metrics``: the Prometheus text format, the gauges read from the session
        store (records) and the run ledger (live browsers of every replica) at most every
        :data:`GAUGES_EVERY` seconds, once for every caller waiting meanwhile — for the
        scraper holding ``SITEKEEP_METRICS_TOKEN`` alone (the counts span tenants).

        Raises:
            Unauthorized: ``authorization`` does not carry the scrape token, or none is set
                (checked before any store is read).
            StoreUnavailable: a store cannot be reached.
        """
        check_scraper(self.settings.metrics_token, authorization)
        async with self._gauges_lock:  # callers at once share one read of the stores
            if self._gauges is None or time.monotonic() - self._gauges[0] >= GAUGES_EVERY:
                sessions = await self._store.count("session/")
                runs = await self.stores.runs.open_runs()
                browsers = Counter(r.browser for r in runs)
                self._gauges = (time.monotonic(), sessions, browsers)
            _, sessions, browsers = self._gauges
        return self.metrics.render(sessions=sessions, browsers=browsers)

    async def records(self, tenant: str) -> list[SessionRecord]:
        """Every session record of ``tenant``, most recently used first."""
        keys = await self._keys_of(tenant)
        records = [
            record
            for record in await self.seam.records.load_many(tenant, keys)  # one round trip, not N
            if record is not None and record.tenant == tenant
        ]
        records.sort(key=lambda r: r.last_used_at, reverse=True)
        return records

    async def records_with_snapshots(
        self, tenant: str
    ) -> list[tuple[SessionRecord, SiteData | None]]:
        """:meth:`records`, each with its snapshot (None without one): two store round
        trips whatever the number of sessions."""
        pairs = [
            (record, snapshot)
            for record, snapshot in await self.seam.records.load_with_snapshots(
                tenant, await self._keys_of(tenant)
            )
            if record is not None and record.tenant == tenant
        ]
        pairs.sort(key=lambda pair: pair[0].last_used_at, reverse=True)
        return pairs

    async def _keys_of(self, tenant: str) -> list[str]:
        return [k.rsplit("/", 1)[-1] for k in await self._store.keys(self._record_key(tenant, ""))]

    async def _session_row(self, who: Principal, record: SessionRecord) -> dict[str, Any]:
        url = record.url
        withheld = url is not None and await self.seam.records.holds_secret(who.tenant, record, url)
        return {
            "key": record.key,
            "owner": record.owner,
            **({"url_withheld": True} if withheld else {"url": url}),
            "browser": {"kind": record.kind, "live": record.browser is not None},
            "created_at": record.created_at,
            "last_used_at": record.last_used_at,
        }

    async def webdriver(self, who: Principal, key: str, base: str = "") -> dict[str, Any]:
        """Hand the session's live browser to a tool that drives it itself
        (``GET /v1/sessions/{key}/webdriver``; SPEC §21): endpoints sitekeep serves, that
        reach this one browser only, while the handover stands (:mod:`sitekeep.handover`).

        Args:
            base: this server's URL as the caller reached it (``http://host:port``).

        Returns:
            ``{key, browser, webdriver_url, session_id, bidi_url, context, expires_at}``:
            ``POST {webdriver_url}/session/{session_id}/…`` drives it (W3C WebDriver
            classic), ``bidi_url`` is its BiDi WebSocket, ``context`` the main tab.

        Raises:
            NotFound: no such session. Forbidden: neither admin nor owner.
            Conflict: the session has no live browser (open it first), or it runs on
                the mapper engine (no WebDriver classic endpoint; ``chromium_bidi``).
        """
        return await self.handovers.issue(who, key, base)

    async def record(self, who: Principal, key: str) -> SessionRecord:
        """The session record (history included) — the admin surface, not the agent's."""
        return await self._require(who, key)

    async def close_browser(self, who: Principal, key: str) -> dict[str, Any]:
        """Close the session's browser; the record, history and snapshot stay."""

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()

            async def work() -> Done:
                if record.browser is not None:
                    await self.seam.browsers.release(record.browser, "closed")
                return Done(refs="invalidated")

            await run_operation(s, "close_browser", {}, work)
            await self._put(replace(record, browser=None, last_used_at=self._clock()))
            return {"key": key, "closed": record.browser is not None}

        return await self.seam.call(who, key, body, inspect=False)

    async def delete_session(self, who: Principal, key: str) -> dict[str, Any]:
        """Delete the session and everything keyed to it (its browser closes)."""

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()
            if record.browser is not None:
                await self.seam.browsers.release(record.browser, "closed")
            await self._store.delete(
                self._record_key(who.tenant, key), self._snapshot_key(who.tenant, key)
            )
            s.track.broken = True  # not kept: the journal is gone
            await self._remove_journal(who.tenant, key)
            return {"key": key, "deleted": True}

        return await self.seam.call(who, key, body, inspect=False)

    async def _remove_journal(self, tenant: str, key: str) -> None:
        """The session's journal goes with it (SPEC §8): deleted, or expired."""
        self.seam.tracks.forget(tenant, key)
        try:
            await self.journal.remove(JournalKey(tenant, key))
        except (OSError, StoreUnavailable) as exc:
            log.warning("a journal could not be removed: %s", exc)

    async def site_data(self, who: Principal, key: str) -> dict[str, Any]:
        """The snapshot by host, counts only (SPEC §5 resource)."""
        record = await self._require(who, key)
        snapshot = await self._load_snapshot(who.tenant, key) or SiteData()
        rows = sitedata.host_rows(snapshot, record.history)
        return {
            "key": key,
            "saved_at": snapshot.saved_at or None,
            "hosts": [
                {
                    "site": r.site,
                    "uri": f"{self._site_data_uri(key)}/{r.site}",
                    "cookies": r.cookies,
                    "shared_cookies": r.shared_cookies,
                    "local": r.local,
                    "session": r.session,
                }
                for r in rows
            ],
        }

    async def site_data_host(self, who: Principal, key: str, site: str) -> dict[str, Any]:
        """One host of the snapshot in full, httpOnly values shown as ``•••`` — the
        owner's explicit per-host view, the one place values are shown (the owner or an
        admin; who may manage the profile the session was opened from: :meth:`_values_gate`).

        Raises:
            NotFound: the session, or nothing saved for ``site``. Forbidden: the gate.
        """
        record = await self._values_gate(who, key, "see its values")
        snapshot = await self._load_snapshot(who.tenant, key)
        if snapshot is None:
            raise NotFound("site", site, field="site")
        masker = await self.seam.records.masker(who.tenant, record, snapshot)
        return well_formed(masker.value({"key": key, **sitedata.host_view(snapshot, site)}))

    # -- profiles (SPEC §9): the gate lives in ``self.profiles``; these join it to sessions

    def _profile(self, row: ProfileRow, who: Principal) -> dict[str, Any]:
        return profile_json(row, who, self._clock())

    async def create_profile(
        self, who: Principal, name: str, visibility: str = "private", country: str | None = None
    ) -> dict[str, Any]:
        """A new, empty profile created by ``who`` (``profiles.profile_json``).

        Raises:
            InvalidInput: a bad name, visibility or country; nothing stored.
        """
        row = await self.profiles.create(who, name, visibility=visibility, country=country)
        return self._profile(row, who)

    async def list_profiles(self, who: Principal) -> dict[str, Any]:
        """``{now, profiles: [...]}``: ``who``'s own and the workspace's shared ones."""
        rows = await self.profiles.list(who)
        return {"now": self._clock(), "profiles": [self._profile(r, who) for r in rows]}

    async def get_profile(self, who: Principal, ident: str) -> dict[str, Any]:
        """One profile and its site data by host: counts and cookie names, never a value
        (SPEC §9: what someone who may only use a shared profile sees).

        Raises:
            NotFound, Forbidden: the gate (``read``).
        """
        loaded = await self.profiles.load(who, ident, "read")
        cookies = loaded.site_data.cookies
        sites: list[dict[str, Any]] = [
            {
                "site": r.site,
                "cookies": r.cookies,
                "cookie_names": sorted({c.name for c in cookies if cookie_host(c) == r.site}),
                "local": r.local,
                "session": r.session,
            }
            for r in sitedata.host_rows(loaded.site_data, ())
        ]
        sites = Masker.of(loaded.site_data.mask).value(sites)  # cookie names too (issue #24)
        return {**self._profile(loaded.row, who), "sites": sites}

    async def update_profile(
        self, who: Principal, ident: str, changes: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Change a profile's ``name``, ``visibility`` or ``country``.

        Raises:
            InvalidInput: a bad value. NotFound, Forbidden: the gate (``update``).
        """
        return self._profile(await self.profiles.update(who, ident, changes), who)

    async def capture_profile(
        self,
        who: Principal,
        ident: str,
        session: str,
        cookies: Sequence[Mapping[str, object]] | None = None,
    ) -> dict[str, Any]:
        """Capture session ``session``'s site data into profile ``ident`` (SPEC §9): its
        unexpired cookies (all, or those ``cookies`` names by ``{domain, name}``), the
        localStorage of its origins and its sessionStorage. The session's own snapshot is
        left as it was.

        Returns:
            ``{url, title, profile, captured: {cookies, sites}}``.

        Raises:
            NotFound, Forbidden: the gate (``capture``), or no such session.
            InvalidInput: ``cookies`` — the selection matches no unexpired cookie;
                nothing was written.
        """
        await self.profiles.get(who, ident, "capture")
        await self._values_gate(who, session, "capture it into a profile", field="session")

        args = {"profile": ident, "cookies": None if cookies is None else len(cookies)}

        async def body(s: Session) -> dict[str, Any]:
            s.require()

            async def work() -> Done:
                browser = await s.live()
                read = await s.reader().read(browser, full=False, indexed_db=False)
                kept = captured(read.snapshot, cookies, self._clock(), read.page.url)
                row = await self.profiles.write(who, ident, kept)
                done = {"cookies": len(kept.cookies), "sites": sorted(kept.origins)}
                result = {"profile": self._profile(row, who), "captured": done}
                return Done(result, page=read.page, refs="reused")

            done = await run_operation(s, "capture_profile", args, work)
            return await s.end(dict(done.result))

        return await self.seam.call(who, session, body, key_field="session")

    async def import_profile_state(
        self,
        who: Principal,
        ident: str,
        data: bytes,
        fmt: str | None = None,
        *,
        strict: bool = False,
    ) -> dict[str, Any]:
        """Replace a profile's site data with a storage state JSON or cookies.txt file
        (SPEC §15), normalised; expired cookies are never kept.

        Returns:
            ``{profile, report}`` — the report of what was changed or dropped, and why.

        Raises:
            InvalidInput: not UTF-8, not the format, a bad field (named); nothing written.
            NotFound, Forbidden: the gate (``capture``).
        """
        await self.profiles.get(who, ident, "capture")
        form = _interop_format(fmt, optional=True)
        imported = import_text(_utf8(data), form, self._clock(), strict=strict)
        kept = captured(imported.site_data, None, self._clock())
        row = await self.profiles.write(who, ident, kept)
        return {"profile": self._profile(row, who), "report": imported.report.as_json()}

    async def export_profile_state(
        self, who: Principal, ident: str, fmt: str = "storage-state"
    ) -> tuple[bytes, str]:
        """A profile's site data as a file, and its media type — values, so only for
        those who may manage the profile.

        Raises:
            InvalidInput: an unknown ``format``. NotFound, Forbidden: the gate.
        """
        form = _interop_format(fmt)
        return _exported(await self.profile_site_data(who, ident), form)

    async def profile_site_data(self, who: Principal, ident: str) -> SiteData:
        """A profile's site data, values and all, for exports — only for those who may
        manage it — except the secret values its mask names (``SiteData.mask``): a page
        copied them into the data in the session it came from, and every stretch of one
        is ``•••`` (``masking``; issue #24).

        Raises:
            NotFound, Forbidden: the gate (``capture``).
        """
        data = (await self.profiles.load(who, ident, "capture")).site_data
        return masked_site_data(Masker.of(data.mask), data)

    # -- a session's state: preview and storage state (SPEC §9, §15) ------------------------

    async def state_preview(self, who: Principal, key: str) -> dict[str, Any]:
        """What the session holds now, for choosing what a profile keeps (SPEC §9): per
        domain, cookie names, expiry, flags and the heuristic's ``selected``, and the
        server's ``now`` — never a value. Read from the live browser (``source:
        browser``), else from the saved snapshot (``source: snapshot``).

        Raises:
            NotFound: no such session.
        """
        record = await self._require(who, key)
        live = await self._live(record)
        if live is not None:
            cookies: Sequence[Cookie] = await read_cookies(live)
            source = "browser"
        else:
            snapshot = await self._load_snapshot(who.tenant, key)
            cookies, source = (snapshot.cookies if snapshot else ()), "snapshot"
        return {"key": key, "source": source, **state_preview(cookies, self._clock())}

    async def import_session_state(
        self,
        who: Principal,
        key: str,
        data: bytes,
        fmt: str | None = None,
        *,
        strict: bool = False,
    ) -> dict[str, Any]:
        """Replace the session's snapshot with a storage state JSON or cookies.txt file
        (SPEC §15); its next new browser restores it (``open_session(fresh=true)``).

        Returns:
            ``{key, report}``.

        Raises:
            InvalidInput: a broken file (the field named); nothing written.
            NotFound: no such session. Forbidden: neither its owner nor an admin, or a
                session opened from a profile the caller may not manage; nothing written.
        """
        form = _interop_format(fmt, optional=True)
        imported = import_text(_utf8(data), form, self._clock(), strict=strict)

        async def body() -> dict[str, Any]:
            await self._values_gate(who, key, "replace its storage state", profile=False)
            await self._put_snapshot(who.tenant, key, imported.site_data)
            return {"key": key, "report": imported.report.as_json()}

        return await self._seam(who, key, "import_storage_state", {"format": fmt}, body)

    async def export_session_state(
        self, who: Principal, key: str, fmt: str = "storage-state"
    ) -> tuple[bytes, str]:
        """The session's saved snapshot as a file, and its media type (SPEC §15): only for
        the session's owner or an admin, and for a session opened from a profile only for
        one who may manage that profile (:meth:`_values_gate`). Secret values typed in the
        session are never exported: a page that copied one into a cookie or storage has
        it exported as ``•••``.

        Raises:
            InvalidInput: an unknown ``format``. NotFound: no such session.
            Forbidden: the gate above; nothing is exported.
        """
        form = _interop_format(fmt)
        return _exported(await self.saved_site_data(who, key), form)

    async def saved_site_data(self, who: Principal, key: str) -> SiteData:
        """The session's saved snapshot, values and all (empty when none) — for exports,
        behind :meth:`_values_gate` (the owner or an admin; who may manage the profile
        the session was opened from) — except the secret values typed in the session:
        an export never carries one, each stretch of one is ``•••`` (``masking``).

        Raises:
            NotFound: no such session. Forbidden: the gate.
        """
        record = await self._values_gate(who, key, "export its storage state")
        snapshot = await self._load_snapshot(who.tenant, key) or SiteData()
        return masked_site_data(
            await self.seam.records.masker(who.tenant, record, snapshot), snapshot
        )

    # -- tokens, secrets, runs: the facades reach the stores only through these -----------

    @staticmethod
    async def store_health(settings: Settings) -> tuple[tuple[bool, str], tuple[bool, str]]:
        """Whether the database and the session store can be reached and read, each with a
        line for a person — changing nothing (``sitekeep doctor``)."""
        database = await anyio.to_thread.run_sync(database_health, settings.database)
        return database, await session_store_health(settings.session_store_url)

    async def authenticate(self, authorization: str | None) -> Principal:
        """Who an ``Authorization: Bearer <token>`` header value stands for (the one
        parser of it, for HTTP, MCP over HTTP and the CLI).

        Raises:
            Unauthorized: no bearer token, or an unknown one.
            StoreUnavailable: the token database cannot be reached.
        """
        return await self.auth.principal(authorization)

    async def create_token(self, tenant: str, subject: str, role: Role) -> str:
        """A new bearer token (shown this once; stored as its SHA-256).

        Raises:
            InvalidInput: a tenant or subject outside ``[A-Za-z0-9-_.@]``, 1–128 chars.
        """
        return await self.auth.create(tenant, subject, role)

    async def list_tokens(self, tenant: str | None = None) -> list[TokenInfo]:
        """The tokens of ``tenant`` (every tenant's when None), oldest first: ids, whom
        they stand for and when made — never a token (``sitekeep token list``, the Tokens
        tab).

        Raises:
            StoreUnavailable: the token database cannot be reached.
        """
        return await self.auth.list(tenant)

    async def revoke_token(self, id_: str, tenant: str | None = None) -> TokenInfo:
        """Revoke a token by id (within ``tenant`` when given): it stops authenticating
        and the admin UI sign-ins made with it end (``sitekeep token revoke``, the Tokens
        tab).

        Raises:
            InvalidInput: a malformed id (field ``id``). NotFound: no such token.
            StoreUnavailable: the token database cannot be reached.
        """
        info = await self.auth.revoke(id_, tenant)
        await self.admin.end_sign_ins(info.id)
        return info

    @staticmethod
    def require_admin(who: Principal, what: str) -> Principal:
        """``who`` when its role is admin — the one admin gate (SPEC §11).

        Raises:
            Forbidden: a member's token.
        """
        if who.role != "admin":
            raise Forbidden(f"{what} needs an admin token (sitekeep token create --admin)")
        return who

    async def put_secret(
        self,
        who: Principal,
        name: str,
        description: str,
        hosts: Sequence[str],
        values: Mapping[str, object],
    ) -> SecretInfo:
        """Create or replace a secret of the caller's tenant (admin; SPEC §7)."""
        self.require_admin(who, "managing secrets")
        return await self.secrets.put(who.tenant, name, description, hosts, values)

    async def list_secrets(self, who: Principal) -> list[SecretInfo]:
        """The tenant's secrets, without values."""
        return await self.secrets.list(who.tenant)

    async def get_secret(self, who: Principal, name: str) -> SecretInfo:
        """One secret's info. Raises: NotFound."""
        return await self.secrets.get_info(who.tenant, name, name_field="name")

    async def delete_secret(self, who: Principal, name: str) -> None:
        """Delete a secret (admin). Raises: NotFound when the tenant has none of that name."""
        self.require_admin(who, "managing secrets")
        if not await self.secrets.delete(who.tenant, name):
            raise NotFound("secret", name, field="name")

    async def put_proxy(
        self,
        who: Principal,
        name: str,
        country: str,
        url: str,
        auth_secret: str | None = None,
    ) -> dict[str, Any]:
        """Create or replace a proxy of the caller's tenant (admin; SPEC §14).

        Raises:
            Forbidden: a member's token. InvalidInput: a bad field, named; nothing stored.
        """
        self.require_admin(who, "managing proxies")
        return proxy_json(await self.proxies.put(who.tenant, name, country, url, auth_secret))

    async def list_proxies(self, who: Principal) -> dict[str, Any]:
        """``{proxies: [...], countries: [...]}`` of the caller's tenant."""
        rows = await self.proxies.list(who.tenant)
        countries = sorted({r.country for r in rows})
        return {"proxies": [proxy_json(r) for r in rows], "countries": countries}

    async def get_proxy(self, who: Principal, name: str) -> dict[str, Any]:
        """One proxy. Raises: NotFound."""
        return proxy_json(await self.proxies.get(who.tenant, name))

    async def delete_proxy(self, who: Principal, name: str) -> None:
        """Delete a proxy (admin). Raises: Forbidden, NotFound."""
        self.require_admin(who, "managing proxies")
        await self.proxies.delete(who.tenant, name)

    async def runs(
        self,
        who: Principal | None,
        *,
        open_only: bool = True,
        limit: int = 100,
        addresses: bool = False,
    ) -> list[dict[str, Any]]:
        """The run ledger, newest first (SPEC §13): the caller's tenant (admin), or every
        tenant for ``who=None`` (the operator's CLI).

        Args:
            addresses: add ``where: {endpoint, session_id}``, the driver's address and its
                session id — for the operator only (``sitekeep runs``): the driver serves
                every tenant's browsers, so no client ever gets them (SPEC §21).

        Returns:
            ``[{id, tenant, session, browser, replica, opened_at, closed_at,
            closed_reason, where?}]``.

        Raises:
            Forbidden: a member's token. InvalidInput: ``limit`` outside 1–1000.
        """
        if who is not None:
            self.require_admin(who, "the run ledger")
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be from 1 to 1000", field="limit")
        tenant = who.tenant if who is not None else None
        return [
            _run_json(run, addresses)
            for run in await self.stores.runs.list(tenant, open_only=open_only, limit=limit)
        ]

    async def reap(self) -> dict[str, int]:
        """One pass of the reaper (SPEC §13) over every open run of every replica: a run
        whose session expired, that no session owns any more (a replica died opening it),
        whose browser idled past ``browser_idle`` or is gone (``crashed``: its driver
        died) is ended — browser first, then the row. A session in use (its lock held) is
        left alone. First, the browsers this data dir's dead drivers left running are
        ended (``BrowserManager.end_orphans``).

        Returns:
            How many runs were closed, by reason.
        """
        await self.browsers.end_orphans()  # before the runs: theirs are then gone
        counts: dict[str, int] = {}
        for run in await self.stores.runs.open_runs():
            try:
                async with self._held(run.tenant, run.session, wait=0):
                    reason = await self._reap_run(run)
            except SessionBusy:
                continue
            except StoreUnavailable as exc:
                log.warning("the reaper skipped a run: %s", exc.message)
                continue
            if reason is not None:
                counts[reason] = counts.get(reason, 0) + 1
        removed = await self._reap_journals()
        if removed:
            log.info("reaper: removed the journals of %d expired sessions", removed)
        return counts

    async def _reap_journals(self) -> int:
        """Remove the journals of sessions that expired (or never came to be): a journal
        lives exactly as long as its session's record (SPEC §8). A session in use is left
        alone."""
        removed = 0
        for jkey in await self.journal.backend.keys():
            try:
                async with self._held(jkey.tenant, jkey.key, wait=0):
                    if await self._load(jkey.tenant, jkey.key) is None:
                        await self._remove_journal(jkey.tenant, jkey.key)
                        removed += 1
            except SessionBusy:
                continue
            except StoreUnavailable as exc:
                log.warning("the reaper skipped a journal: %s", exc.message)
        return removed

    async def run_reaper(self) -> None:
        """Reap every ``reap_interval`` seconds until cancelled (each ``sitekeep serve``
        runs one; every replica's reaper may end any replica's runs)."""
        while True:
            await anyio.sleep(self.settings.reap_interval)
            try:
                reaped = await self.reap()
            except Exception:  # the next pass tries again; a reaper never takes serve down
                log.exception("a reaper pass failed")
                continue
            if reaped:
                log.info("reaper: %s", ", ".join(f"{n} {why}" for why, n in sorted(reaped.items())))

    async def _gone(self, run: Run) -> bool:
        """Whether ``run``'s browser is known to be gone (``BrowserManager.gone``): a
        driver that died takes its browsers with it, so its runs count none."""
        if not run.endpoint or not run.webdriver_session:
            return False
        here = _host(run.replica) == _host(self.replica)
        return await self.browsers.gone(run.endpoint, run.webdriver_session, here=here)

    async def _reap_run(self, run: Run) -> ClosedReason | None:
        record = await self._load(run.tenant, run.session)
        reason = reaping.verdict(run, record, now=self._clock(), idle=self.settings.browser_idle)
        if reason is None and await self._gone(run):
            reason = "crashed"
        if reason is None:
            return None
        if run.endpoint and run.webdriver_session:
            await self.browsers.end(run.endpoint, run.webdriver_session)
        owned = record is not None and reaping.owns(record, run)
        if owned and record is not None:
            await self._put(replace(record, browser=None))
        await self.seam.browsers.ledger(
            self.stores.runs.close_run(run.id, at=self._clock(), reason=reason)
        )
        return reason


def _host(replica: str) -> str:
    """The machine of a replica name (``host:pid``)."""
    return replica.rsplit(":", 1)[0]


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("the file is not UTF-8 text", field="body") from exc


def _interop_format(fmt: str | None, *, optional: bool = False) -> Format | None:
    if fmt is None and optional:
        return None
    for form in FORMATS:
        if fmt == form:
            return form
    raise InvalidInput(f"format must be {' or '.join(FORMATS)}", field="format")


_MEDIA = {"storage-state": "application/json", "cookies-txt": "text/plain; charset=utf-8"}


def _exported(site_data: SiteData, fmt: Format | None) -> tuple[bytes, str]:
    form: Format = fmt or "storage-state"
    return export_site_data(site_data, form).data, _MEDIA[form]


def _run_json(run: Run, addresses: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": run.id,
        "tenant": run.tenant,
        "session": run.session,
        "browser": run.browser,
        "replica": run.replica,
        "opened_at": run.opened_at,
        "closed_at": run.closed_at,
        "closed_reason": run.closed_reason,
    }
    if addresses:
        row["where"] = {"endpoint": run.endpoint, "session_id": run.webdriver_session}
    return row
