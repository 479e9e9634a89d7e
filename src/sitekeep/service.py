"""The use cases. HTTP, MCP and the CLI call this module and nothing below it.

Every call that affects a browser passes through one seam, :meth:`Service._drive`: it
locks the session, reattaches to (or silently reopens) its browser, runs the operation,
records where the browser landed in the history, hands out a pending reopen report once,
and writes the record back. The journal (SPEC §8) will wrap that seam.

Results are plain JSON-able dicts in the shapes of SPEC §5; none holds a value except the
owner's per-host view (:meth:`Service.site_data_host`).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, quote_plus, unquote_plus

import anyio
from pydantic import ValidationError

from sitekeep import history as hist
from sitekeep import reaping, sitedata
from sitekeep.admin import Admin
from sitekeep.auth import Authenticator
from sitekeep.browser.indexeddb import NOT_CARRIED, read_databases
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.manager import BrowserManager
from sitekeep.browser.restore import restore
from sitekeep.browser.save import PARTITIONED, lost_reason, save_read, settle_jar
from sitekeep.browser.useragent import changed_warning, current_user_agent, override_user_agent
from sitekeep.config import Settings
from sitekeep.errors import (
    CapacityExceeded,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    SessionBusy,
    SitekeepError,
    StoreUnavailable,
)
from sitekeep.flows import run_steps
from sitekeep.model import (
    RECORD_JSON,
    BrowserKind,
    BrowserRef,
    Principal,
    Role,
    SessionRecord,
    SiteData,
    Skipped,
    dump_site_data,
    load_site_data,
)
from sitekeep.operations import HANDLERS, Call
from sitekeep.policy import check_key, check_url
from sitekeep.secrets import SecretInfo
from sitekeep.steps import parse_args, parse_steps
from sitekeep.stores import SessionLocks, SessionStore, open_database, open_sessions
from sitekeep.stores.base import ClosedReason, Run, RunLedger, SecretStore, TokenStore
from sitekeep.stores.cipher import Cipher, KeyFile
from sitekeep.stores.database import Database
from sitekeep.stores.health import database_health, session_store_health
from sitekeep.stores.runs import SqlRunLedger
from sitekeep.stores.secrets import SqlSecretStore
from sitekeep.stores.tokens import SqlTokenStore
from sitekeep.vault import Vault

__all__ = ["Service"]

log = logging.getLogger(__name__)

_REVISIONS: contextvars.ContextVar[dict[tuple[str, str], int] | None] = contextvars.ContextVar(
    "sitekeep_revisions", default=None
)
"""Inside a seam: the revision of each session record the call read (0: absent)."""

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
        )

    async def aclose(self) -> None:
        await self.locks.aclose()
        await self.sessions.aclose()
        self.database.dispose()


class Service:
    """sitekeep's use cases over the stores, a cipher and a browser manager."""

    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        cipher: Cipher,
        browsers: BrowserManager,
        clock: Callable[[], float] = time.time,
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
        self.admin = Admin(self)
        """The admin use cases (SPEC §11), behind :meth:`require_admin`."""

    @classmethod
    def from_settings(cls, settings: Settings, clock: Callable[[], float] = time.time) -> Service:
        """Open the stores, load (or generate) the master key, prepare the browsers."""
        cipher = Cipher(KeyFile(settings.key_file, settings.master_key))
        stores = Stores.open(settings, clock)
        return cls(settings, stores, cipher, BrowserManager(settings), clock)

    async def aclose(self) -> None:
        """Close sockets and store connections; browsers live on (SPEC §2)."""
        await self.browsers.aclose()
        await self.stores.aclose()

    # -- storage of records and snapshots -------------------------------------------------

    @staticmethod
    def _record_key(tenant: str, key: str) -> str:
        return f"session/{tenant}/{key}"

    @staticmethod
    def _snapshot_key(tenant: str, key: str) -> str:
        return f"site-data/{tenant}/{key}"

    async def _load(self, tenant: str, key: str) -> SessionRecord | None:
        """The record, or None; inside a seam, its revision is kept for :meth:`_put`."""
        found = await self._store.read(self._record_key(tenant, key))
        revisions = _REVISIONS.get()
        if revisions is not None:
            revisions[(tenant, key)] = found.revision if found else 0
        if found is None:
            return None
        try:
            return RECORD_JSON.validate_json(found.value)
        except ValidationError as exc:
            raise StoreUnavailable(f"session {key!r} is stored in an unreadable form") from exc

    async def _require(self, who: Principal, key: str) -> SessionRecord:
        record = await self._load(who.tenant, check_key(key))
        if record is None:
            raise NotFound("session", key)
        return record

    async def _put(self, record: SessionRecord) -> None:
        """Write the record — only over the revision this call read (SPEC §13: a replica
        whose lock ran out never overwrites a newer record) — and move its snapshot's
        expiry with it (first: a failed write then leaves only a longer-lived snapshot).

        Raises:
            Conflict: another call wrote the record since this one read it; nothing was
                written.
        """
        ttl = self.settings.session_ttl
        ident = (record.tenant, record.key)
        revisions = _REVISIONS.get()
        assert revisions is not None, "a session record is written only inside a seam"
        await self._store.expire(self._snapshot_key(*ident), ttl)
        written = await self._store.write(
            self._record_key(*ident),
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

    async def _load_snapshot(self, tenant: str, key: str) -> SiteData | None:
        sealed = await self._store.get(self._snapshot_key(tenant, key))
        if sealed is None:
            return None
        plain = self._cipher.open(sealed, tenant=tenant, kind="site-data", ident=key)
        return load_site_data(plain)

    async def _put_snapshot(self, tenant: str, key: str, snapshot: SiteData) -> None:
        sealed = self._cipher.seal(
            dump_site_data(snapshot), tenant=tenant, kind="site-data", ident=key
        )
        await self._store.set(
            self._snapshot_key(tenant, key), sealed, ttl=self.settings.session_ttl
        )

    # -- the seam -------------------------------------------------------------------------

    async def _seam(
        self,
        who: Principal,
        key: str,
        op: str,
        args: Mapping[str, Any],
        body: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """The one seam every browser-affecting call passes through: the session's lock
        held, ``op`` and ``args`` naming the call (``args`` never holds a value). The
        journal (SPEC §8) wraps it: a begin record before ``body``, a finish after.

        The lock is shared by every process and replica on the same session store
        (:mod:`sitekeep.stores.locks`): one call at a time per session, one browser per
        session.

        Raises:
            SessionBusy: another call held the session past ``SITEKEEP_LOCK_WAIT``.
        """
        async with self._held(who.tenant, check_key(key)):
            return await body()

    @contextlib.asynccontextmanager
    async def _held(
        self, tenant: str, key: str, *, wait: float | None = None
    ) -> AsyncIterator[None]:
        """The session's lock held, and a fresh table of the revisions this call reads."""
        wait = self.settings.lock_wait if wait is None else wait
        async with self.stores.locks.hold(f"{tenant}/{key}", wait=wait):
            token = _REVISIONS.set({})
            try:
                yield
            finally:
                _REVISIONS.reset(token)

    async def _drive(self, who: Principal, key: str, op: str, args: Any) -> dict[str, Any]:
        """Run one operation (``operations.HANDLERS[op]``) in the session's live browser,
        reopened silently if gone, then record where it landed."""

        async def body() -> dict[str, Any]:
            call = await self._call(who, key)
            result = await HANDLERS[op](call, args)
            return await self._finish(call, result)

        return await self._seam(who, key, op, _redacted(op, args), body)

    async def _call(self, who: Principal, key: str) -> Call:
        record = await self._require(who, key)
        browser, record = await self._browser_for(record)
        return Call(self, who, browser, record)

    async def where(self, call: Call) -> tuple[PageInfo, bool]:
        """Where the browser is now, and whether its URL must be withheld: it holds the
        value of a secret typed in this session (SPEC §7). A URL shown goes into
        ``call.landed`` for the history."""
        page = call.page or await call.browser.page_info()
        call.page = None
        withheld = await self._holds_secret(call.who.tenant, call.record, page.url)
        if not withheld:
            call.landed.append(page.url)
        return page, withheld

    async def _holds_secret(self, tenant: str, record: SessionRecord, url: str) -> bool:
        for name, key in record.typed_secrets:
            try:
                value = await self.secrets.reveal(tenant, name, key)
            except SitekeepError:
                continue  # deleted or changed since: nothing of it can be in the URL
            if _appears_in(value, url):
                return True
        return False

    async def _finish(self, call: Call, result: dict[str, Any]) -> dict[str, Any]:
        """Add where the browser landed (or withhold it), bump the history with every URL
        the call reached, hand out a pending reopen report once, store the record."""
        page, withheld = await self.where(call)
        result = _well_formed({**result, **_landing(page, withheld)})
        now = self._clock()
        record = call.record
        if record.reopened is not None:
            result.setdefault("site_data", dict(record.reopened))
        history = hist.bump_many(
            record.history,
            call.landed,
            now,
            ttl=self.settings.session_ttl,
            cap=self.settings.history_cap,
        )
        await self._put(
            replace(
                record,
                browser=call.browser.ref,
                history=history,
                reopened=None,
                last_used_at=now,
            )
        )
        return result

    async def _browser_for(self, record: SessionRecord) -> tuple[LiveBrowser, SessionRecord]:
        """The session's live browser; a gone one is reopened silently with a restore whose
        report waits in ``record.reopened`` for the first result (SPEC §3)."""
        if record.browser is not None:
            live = await self._attach(record.browser)
            if live is not None:
                return live, record
        live, report = await self._new_browser(record, land=record.url, restore_data=True)
        record = replace(record, browser=live.ref, reopened=report)
        await self._put(record)
        return live, record

    async def _new_browser(
        self, record: SessionRecord, *, land: str | None, restore_data: bool
    ) -> tuple[LiveBrowser, dict[str, Any] | None]:
        """A new browser for the session, its run in the ledger: reserved under the caps
        before the browser starts, and where it runs recorded before anything loads in it.

        Raises:
            CapacityExceeded: a cap is reached; no browser was started.
            StoreUnavailable: the ledger cannot be reached; no browser is left running.
        """
        run = await self._reserve(record)
        try:
            live = await self.browsers.start(record.kind, insecure=record.insecure)
        except BaseException:
            await self._ledger(
                self.stores.runs.close_run(run.id, at=self._clock(), reason="crashed")
            )
            raise
        try:
            await self.stores.runs.started(run.id, live.ref.endpoint, live.ref.session_id)
        except BaseException:
            await self._release(live.ref, "crashed")
            raise
        try:
            return live, await self._fill_new_browser(live, record, land, restore_data)
        finally:
            self.browsers.replenish()

    async def _reserve(self, record: SessionRecord) -> Run:
        """A run for a new browser of ``record``'s session, under the caps (SPEC §13),
        counted over every replica; this session's own runs do not count.

        Raises:
            CapacityExceeded: ``scope`` tenant or global.
        """
        settings = self.settings
        run = Run(
            id=secrets.token_hex(12),
            tenant=record.tenant,
            session=record.key,
            browser=record.kind,
            opened_at=self._clock(),
            replica=self.replica,
        )
        full = await self.stores.runs.reserve(
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
            cap = settings.max_sessions
            raise CapacityExceeded(
                f"sitekeep runs {cap} live browsers, its cap (SITEKEEP_MAX_SESSIONS): try again"
                " later",
                scope="global",
                cap=cap,
            )
        return run

    async def _attach(self, ref: BrowserRef) -> LiveBrowser | None:
        """The live browser ``ref`` names, or None — then its run is closed as crashed
        (a no-op when a close or the reaper came first)."""
        live = await self.browsers.attach(ref)
        if live is None:
            await self._ledger(
                self.stores.runs.close(ref.session_id, at=self._clock(), reason="crashed")
            )
        return live

    async def _release(self, ref: BrowserRef, reason: ClosedReason) -> None:
        """End a browser, then close its run: the browser is released first, and a ledger
        that fails is logged, never in the way (SPEC §13)."""
        await self.browsers.close(ref)
        await self._ledger(self.stores.runs.close(ref.session_id, at=self._clock(), reason=reason))

    @staticmethod
    async def _ledger(write: Awaitable[object]) -> None:
        try:
            await write
        except StoreUnavailable as exc:
            log.warning("the run ledger missed a close: %s", exc.message)

    async def _fill_new_browser(
        self, live: LiveBrowser, record: SessionRecord, land: str | None, restore_data: bool
    ) -> dict[str, Any] | None:
        snapshot = None
        if restore_data and not record.insecure:
            snapshot = await self._load_snapshot(record.tenant, record.key)
        if snapshot is None:
            if land:
                await live.navigate(land)
            return None
        warnings = await self._user_agent(live, record, snapshot)
        report = await restore(live, snapshot, land, now=self._clock())
        warnings.extend(report.warnings)
        if not report.restored and not report.skipped and not warnings:
            return None
        result = {**report.as_json(), "uri": self._site_data_uri(record.key)}
        if warnings:
            result["warnings"] = warnings
        return result

    async def _user_agent(
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

    @staticmethod
    def _site_data_uri(key: str) -> str:
        return f"sitekeep://sessions/{key}/site-data"

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
        the snapshot (``{"forgotten": N}``, N hosts); the history stays.
        ``keep_user_agent`` (kept for the session's later browsers; None leaves it as it
        is) runs the browser under the User-Agent the snapshot was saved under; a restore
        under another one warns ``{type: "user_agent_changed"}`` in ``site_data.warnings``.

        Returns:
            ``{key, url, title, site_data?, hint?}``.

        Raises:
            InvalidInput: a bad key, browser or URL, or an option not available yet.
            BrowserUnavailable: no browser could be started (503).
        """
        key = check_key(key) if key is not None else secrets.token_hex(6)
        kind = self._kind(browser)
        for name, value in (("profile", profile), ("country", country)):
            if value is not None:
                raise InvalidInput(f"{name} is not available yet", field=name)
        if url is not None:
            url = check_url(url, own_origins=self.own_origins())
        args = {
            "browser": kind,
            "url": hist.trim_url(url) if url else None,
            "restore_site_data": restore_site_data,
            "fresh": fresh,
            "insecure": insecure,
            "keep_user_agent": keep_user_agent,
        }

        async def body() -> dict[str, Any]:
            return await self._open_locked(
                who,
                key,
                kind or self.settings.browser,
                kind is not None,
                url,
                restore_site_data=restore_site_data,
                fresh=fresh,
                insecure=insecure,
                keep_user_agent=keep_user_agent,
            )

        return await self._seam(who, key, "open_session", args, body)

    async def _open_locked(
        self,
        who: Principal,
        key: str,
        kind: BrowserKind,
        kind_given: bool,
        url: str | None,
        *,
        restore_site_data: bool,
        fresh: bool,
        insecure: bool,
        keep_user_agent: bool | None = None,
    ) -> dict[str, Any]:
        now = self._clock()
        record = await self._load(who.tenant, key) or SessionRecord(
            tenant=who.tenant,
            key=key,
            owner=who.subject,
            kind=kind,
            created_at=now,
            last_used_at=now,
        )
        result: dict[str, Any] = {"key": key}
        if not restore_site_data:
            result["site_data"] = {"forgotten": await self._forget_snapshot(who.tenant, key)}
        live = await self._reusable(record, kind if kind_given else record.kind, insecure, fresh)
        record = replace(record, kind=kind if kind_given else record.kind, insecure=insecure)
        if keep_user_agent is not None:
            record = replace(record, keep_user_agent=keep_user_agent)
        if live is None:
            live, report = await self._new_browser(
                record, land=url or record.url, restore_data=restore_site_data
            )
            if report is not None:
                result["site_data"] = report
        else:
            if keep_user_agent:
                snapshot = await self._load_snapshot(who.tenant, key)
                if snapshot is not None and snapshot.user_agent:
                    await override_user_agent(live, snapshot.user_agent)
            if url is not None:
                await live.navigate(url)
        if insecure:
            result["hint"] = INSECURE_HINT
        record = replace(record, browser=live.ref, reopened=None, refs=None)
        return await self._finish(Call(self, who, live, record), result)

    async def _reusable(
        self, record: SessionRecord, kind: BrowserKind, insecure: bool, fresh: bool
    ) -> LiveBrowser | None:
        """The live browser to keep using, or None (after closing one that cannot stay)."""
        if record.browser is None:
            return None
        live = await self._attach(record.browser)
        if live is None:
            return None
        if fresh or record.browser.kind != kind or record.browser.insecure != insecure:
            await self._release(record.browser, "closed")
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

        Raises:
            InvalidInput: a bad argument, naming the field. NotFound: no such session,
            secret or element. StaleRef: a ref from an old snapshot. SecretNotAllowed:
            a secret on a host it may not be typed on. NavigationFailed, BrowserUnavailable.
        """
        return await self._drive(who, key, op, parse_args(op, args))

    async def navigate(self, who: Principal, key: str, url: str) -> dict[str, Any]:
        """Go to ``url`` and wait for the page to load. Returns ``{url, title}``.

        Raises:
            InvalidInput: a URL agents may not open (SPEC §12).
        """
        check_url(url, own_origins=self.own_origins())
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
        """
        if on_error not in ("stop", "continue"):
            raise InvalidInput("on_error is stop or continue", field="on_error")
        parsed = parse_steps(steps)

        async def body() -> dict[str, Any]:
            call = await self._call(who, key)
            report = await run_steps(call, parsed, "continue" if on_error == "continue" else "stop")
            return await self._finish(call, report)

        args = {"steps": [_redacted(s.op, s.args) for s in parsed], "on_error": on_error}
        return await self._seam(who, key, "run_flow", args, body)

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
        """
        if profile is not None:
            raise InvalidInput("profile is not available yet", field="profile")

        async def body() -> dict[str, Any]:
            call = await self._call(who, key)
            return await self._finish(
                call, await self.save_in(call, full=full, indexed_db=indexed_db)
            )

        args = {"full": full, "indexed_db": indexed_db}
        return await self._seam(who, key, "save_site_data", args, body)

    async def save_in(
        self, call: Call, *, full: bool = False, indexed_db: bool = False
    ) -> dict[str, Any]:
        """The save itself, inside a call: the pages the call reached so far go into the
        history first, so the save reads their storage too (SPEC §4 flows)."""
        record = replace(
            call.record,
            history=hist.bump_many(
                call.record.history,
                call.landed,
                self._clock(),
                ttl=self.settings.session_ttl,
                cap=self.settings.history_cap,
            ),
        )
        call.record, call.landed = record, []
        browser = call.browser
        history = [e.origin for e in record.history]
        read = await save_read(browser, history, deadline=self.settings.save_deadline, full=full)
        page, order = read.page, read.order
        databases: dict[str, list[dict[str, Any]]] | None = None
        databases_failed: dict[str, str] = {}
        if indexed_db:
            databases, databases_failed = await read_databases(
                browser, order, deadline=self.settings.save_deadline
            )
        previous = await self._load_snapshot(record.tenant, record.key)
        session = read.session if read.session_read or previous is None else previous.session
        cookies = settle_jar(browser, read.cookies, previous.cookies if previous else ())
        snapshot, skipped = sitedata.compose(
            previous,
            cookies=cookies,
            read=read.local,
            session=session,
            not_read=read.not_read,
            visit_order=order,
            saved_at=self._clock(),
            cap=self.settings.snapshot_cap,
            tabs=read.tabs,
            user_agent=read.user_agent,
            indexed_db=databases,
            indexed_db_failed=databases_failed,
        )
        if not indexed_db:
            skipped.extend(Skipped(o, NOT_CARRIED) for o in order if o in read.idb_origins)
        skipped.extend(Skipped(o, PARTITIONED) for o in read.partitioned)
        skipped.extend(lost_reason(c) for c in read.lost_cookies)
        await self._put_snapshot(record.tenant, record.key, snapshot)
        call.page = page
        saved = {
            "cookies": len(snapshot.cookies),
            "sites": [o for o in order if o in snapshot.origins]
            + sorted(set(snapshot.origins) - set(order)),
            "skipped": [s.as_json() for s in skipped],
            "spare_reads": read.spare_reads,
        }
        return {"saved": saved, "uri": self._site_data_uri(record.key)}

    async def current(self, who: Principal, key: str) -> dict[str, Any]:
        """The current page (without touching the browser's state) and a site-data summary.

        Returns:
            ``{key, url, title, browser: {kind, live}, site_data: {saved_at, hosts}}``.
        """
        record = await self._require(who, key)
        live = await self.browsers.attach(record.browser) if record.browser else None
        page = await live.page_info() if live is not None else None
        url = page.url if page else record.url
        withheld = url is not None and await self._holds_secret(who.tenant, record, url)
        snapshot = await self._load_snapshot(who.tenant, key)
        return _well_formed(
            {
                "key": key,
                **({"url_withheld": True} if withheld else {"url": url}),
                "title": page.title if page else None,
                "browser": {"kind": record.kind, "live": live is not None},
                "site_data": {
                    "saved_at": snapshot.saved_at if snapshot else None,
                    "hosts": len(sitedata.host_rows(snapshot, record.history)) if snapshot else 0,
                    "uri": self._site_data_uri(key),
                },
            }
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
                await self._release(record.browser, "closed")
                await self._put(replace(record, browser=None))
            ended += 1
        await self.browsers.end_pools()
        self.browsers.stop_local_drivers()
        return ended

    async def live_browser(self, who: Principal, key: str) -> LiveBrowser | None:
        """The session's live browser as it is now (no reopen), or None: for tools that
        drive it directly — tests, and later the live view (SPEC §10)."""
        record = await self._require(who, key)
        return await self.browsers.attach(record.browser) if record.browser else None

    async def record(self, who: Principal, key: str) -> SessionRecord:
        """The session record (history included) — the admin surface, not the agent's."""
        return await self._require(who, key)

    async def close_browser(self, who: Principal, key: str) -> dict[str, Any]:
        """Close the session's browser; the record, history and snapshot stay."""

        async def body() -> dict[str, Any]:
            record = await self._require(who, key)
            if record.browser is not None:
                await self._release(record.browser, "closed")
            await self._put(replace(record, browser=None, last_used_at=self._clock()))
            return {"key": key, "closed": record.browser is not None}

        return await self._seam(who, key, "close_browser", {}, body)

    async def delete_session(self, who: Principal, key: str) -> dict[str, Any]:
        """Delete the session and everything keyed to it (its browser closes)."""

        async def body() -> dict[str, Any]:
            record = await self._require(who, key)
            if record.browser is not None:
                await self._release(record.browser, "closed")
            await self._store.delete(
                self._record_key(who.tenant, key), self._snapshot_key(who.tenant, key)
            )
            return {"key": key, "deleted": True}

        return await self._seam(who, key, "delete_session", {}, body)

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
        owner's explicit per-host view, the one place values are shown.

        Raises:
            NotFound: the session, or nothing saved for ``site``.
        """
        await self._require(who, key)
        snapshot = await self._load_snapshot(who.tenant, key)
        if snapshot is None:
            raise NotFound("site", site)
        return _well_formed({"key": key, **sitedata.host_view(snapshot, site)})

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
        values: Mapping[str, str],
    ) -> SecretInfo:
        """Create or replace a secret of the caller's tenant (admin; SPEC §7)."""
        self.require_admin(who, "managing secrets")
        return await self.secrets.put(who.tenant, name, description, hosts, values)

    async def list_secrets(self, who: Principal) -> list[SecretInfo]:
        """The tenant's secrets, without values."""
        return await self.secrets.list(who.tenant)

    async def get_secret(self, who: Principal, name: str) -> SecretInfo:
        """One secret's info. Raises: NotFound."""
        return await self.secrets.get_info(who.tenant, name)

    async def delete_secret(self, who: Principal, name: str) -> None:
        """Delete a secret (admin). Raises: NotFound when the tenant has none of that name."""
        self.require_admin(who, "managing secrets")
        if not await self.secrets.delete(who.tenant, name):
            raise NotFound("secret", name)

    async def runs(
        self, who: Principal | None, *, open_only: bool = True, limit: int = 100
    ) -> list[dict[str, Any]]:
        """The run ledger, newest first (SPEC §13): the caller's tenant (admin), or every
        tenant for ``who=None`` (the operator's CLI).

        Returns:
            ``[{id, tenant, session, browser, where: {endpoint, session_id}, replica,
            opened_at, closed_at, closed_reason}]``.

        Raises:
            Forbidden: a member's token. InvalidInput: ``limit`` outside 1–1000.
        """
        if who is not None:
            self.require_admin(who, "the run ledger")
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be from 1 to 1000", field="limit")
        tenant = who.tenant if who is not None else None
        return [
            _run_json(run)
            for run in await self.stores.runs.list(tenant, open_only=open_only, limit=limit)
        ]

    async def reap(self) -> dict[str, int]:
        """One pass of the reaper (SPEC §13) over every open run of every replica: a run
        whose session expired, that no session owns any more (a replica died opening it),
        or whose browser idled past ``browser_idle`` is ended — browser first, then the
        row. A session in use (its lock held) is left alone.

        Returns:
            How many runs were closed, by reason.
        """
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
        return counts

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

    async def _reap_run(self, run: Run) -> ClosedReason | None:
        record = await self._load(run.tenant, run.session)
        reason = reaping.verdict(run, record, now=self._clock(), idle=self.settings.browser_idle)
        if reason is None:
            return None
        if run.endpoint and run.webdriver_session:
            await self.browsers.end(run.endpoint, run.webdriver_session)
        owned = record is not None and reaping.owns(record, run)
        if owned and record is not None:
            await self._put(replace(record, browser=None))
        await self._ledger(self.stores.runs.close_run(run.id, at=self._clock(), reason=reason))
        return reason


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _well_formed(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with each lone UTF-16 surrogate in its strings (a page's title, a storage
    key, a value in the owner's view) replaced by U+FFFD, so every facade can encode it as
    UTF-8. Results show state; the snapshot keeps it exactly (``model.json_bytes``)."""
    cleaned: dict[str, Any] = _scrub(result)
    return cleaned


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value if value.isascii() else _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def _landing(page: PageInfo, withheld: bool) -> dict[str, Any]:
    """``{url, title}`` of where a call landed, or the title alone with ``url_withheld``."""
    if withheld:
        return {"url_withheld": True, "title": page.title}
    return {"url": page.url, "title": page.title}


def _appears_in(value: str, url: str) -> bool:
    """Whether a secret value stands in a URL, as typed or URL-encoded (a GET form puts
    field values in the query string, RFC 3986 / HTML §form submission)."""
    if not value:
        return False
    forms = {value, quote(value, safe=""), quote_plus(value), quote(value)}
    return any(form in url for form in forms) or value in unquote_plus(url)


def _run_json(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "tenant": run.tenant,
        "session": run.session,
        "browser": run.browser,
        "where": {"endpoint": run.endpoint, "session_id": run.webdriver_session},
        "replica": run.replica,
        "opened_at": run.opened_at,
        "closed_at": run.closed_at,
        "closed_reason": run.closed_reason,
    }


def _redacted(op: str, args: Any) -> dict[str, Any]:
    """An operation's arguments fit for a log or the journal: no typed text, no URL
    query or fragment (they may carry codes and tokens)."""
    if args is None:
        return {}
    raw = args.model_dump() if hasattr(args, "model_dump") else dict(args)
    if "text" in raw and op == "type":
        raw["text"] = f"<{len(raw['text'])} characters>"
    if isinstance(raw.get("url"), str):
        raw["url"] = hist.trim_url(raw["url"])
    return raw
