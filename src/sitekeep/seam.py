"""The seam: the one place every browser-affecting call passes through (SPEC §2, §8).

:meth:`Seam.call` holds the session's lock (shared by every process and replica on the
session store, :mod:`sitekeep.stores.locks`), loads the record and the session's journal
state, and hands the use case a :class:`Session`: the call's working state. A use case
runs operations with :meth:`Session.dispatch` — single calls (``Service.act``) and flow
steps (``flows.run_steps``) alike — which:

1. writes a **begin** record and waits until it is durable, *before* the browser is
   touched (it cannot be written: ``JournalUnavailable``, 503, nothing touched);
2. attaches to the session's browser, or reopens it silently (marks ``reopened`` and
   ``restored``);
3. runs the handler (``operations.HANDLERS``) with a narrow :class:`~sitekeep.operations.
   Context`; the handler returns its effects as a value (``operations.Done``);
4. looks where the browser is (or withholds the URL, SPEC §7), folds the effects into the
   call's state, and writes the **finish** (and a **snapshot** record first when the refs
   were replaced). A finish that cannot be written leaves the session *unsettled*: the
   result still comes back (with a ``journal_unsettled`` warning; the effects happened and
   a retry could repeat them), dependent flow steps stop, and the next call first inspects
   the browser — URL and tab tree — and settles the open begins as ``unknown`` before it
   acts. A mutation is never repeated automatically.

The journal state (:class:`~sitekeep.journal.SessionState`) of each session this process
touched is kept in memory after each call; the first call after a restart (or after a
journal write failed, or another replica moved the journal on) replays it. Refs come from
the journal: a restarted service rebuilds them, and the history and URL, from there and
the record (SPEC §8 "Restarting the service rebuilds state from the journal").
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import functools
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import unquote_plus

import anyio
from msgspec import UNSET, UnsetType
from pydantic import ValidationError

from sitekeep import history as hist
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.manager import BrowserManager
from sitekeep.browser.proxy import ProxySettings
from sitekeep.browser.restore import restore
from sitekeep.browser.snapshot import read_snapshot
from sitekeep.browser.useragent import changed_warning, current_user_agent, override_user_agent
from sitekeep.config import Settings
from sitekeep.errors import (
    CapacityExceeded,
    Conflict,
    Forbidden,
    InvalidInput,
    JournalConflict,
    JournalUnavailable,
    NotFound,
    SecretNotAllowed,
    SitekeepError,
    StoreUnavailable,
    error_json,
    quoted,
)
from sitekeep.journal import Journal, JournalKey, SessionState, fold, records
from sitekeep.journal.records import Begin, MarkKind, Record, RefsStatus
from sitekeep.masking import Masker, carried, forms
from sitekeep.metrics import Metrics
from sitekeep.model import (
    LONE_SURROGATE,
    RECORD_JSON,
    BrowserRef,
    HistoryEntry,
    Principal,
    RefMap,
    SessionRecord,
    SiteData,
    Skipped,
    dump_site_data,
    json_bytes,
    load_site_data,
)
from sitekeep.operations import HANDLERS, MAX_TYPED_SECRETS, Context, Done
from sitekeep.policy import check_key
from sitekeep.profiles import Profiles
from sitekeep.proxies import Proxies
from sitekeep.secrets import SecretInfo
from sitekeep.stores import SessionLocks, SessionStore
from sitekeep.stores.base import ClosedReason, Run, RunLedger, Versioned
from sitekeep.stores.cipher import Cipher
from sitekeep.vault import Vault

__all__ = ["MASK_KIND", "MAX_MASKED", "Seam", "Session", "Track"]

MASK_KIND = "mask"
"""The cipher's kind for a session's sealed mask (``SessionRecord.mask``, SPEC §12)."""
MAX_MASKED = 32
"""The most values a session's mask keeps; past it, the oldest go first."""

log = logging.getLogger(__name__)

_REVISIONS: contextvars.ContextVar[dict[tuple[str, str], int] | None] = contextvars.ContextVar(
    "sitekeep_revisions", default=None
)
"""Inside a seam: the revision of each session record the call read (0: absent)."""

UNSETTLED_WARNING = (
    "the operation ran but its journal finish could not be written: the session is "
    "unsettled — the next call inspects the browser first; do not repeat the operation "
    "without looking (snapshot) first"
)


@dataclass
class Track:
    """One session's journal as this process knows it: the folded state and the ref map
    of the snapshot it names (the shared ids stay out of the state)."""

    key: JournalKey
    state: SessionState
    refs: RefMap | None = None
    broken: bool = False
    """Not kept after the call (a write failed, or the journal was removed): the next
    call replays rather than trust this copy."""

    def usable_refs(self, generation: str | None, call: str) -> RefMap | None:
        """The refs an operation of ``call`` may use in a browser of ``generation``: none
        while another call's begin is unsettled, none of another generation."""
        state = self.state
        if state.unsettled_dropped or any(p.call != call for p in state.unsettled):
            return None
        pointer = state.refs
        if pointer is None or pointer.generation != generation or self.refs is None:
            return None
        return self.refs if self.refs.snapshot == pointer.number else None


@dataclass
class _Op:
    """A begun operation: its begin record and the first of the call's pages it reached."""

    started: Begin
    first_page: int


READS_FIRST = frozenset({"save_site_data"})
"""Operations whose first browser calls only read (``storage.getCookies``, the READ
script): their begin is appended beside those reads, and awaited before anything that
changes the browser or a store (a spare tab, a reopen, the snapshot) — a save waits on
the slower of its fsync and its first round trip, not on both (issue #15). A begin that
cannot be written still fails the call with 503, the reads thrown away."""


class _Beginning(Protocol):
    """A begin record on its way to the journal: every operation's begin goes this one
    way (:func:`_beginning` chooses how, once per operation).

    :meth:`before_browser` waits for it unless it may go out beside the first reads;
    :meth:`durable` waits for it; :meth:`settle` waits for it whatever happened, so no
    append outlives its call.
    """

    async def before_browser(self) -> None:
        """Wait until the begin is durable, unless it may go out beside the first reads.

        Raises:
            JournalUnavailable / JournalConflict: it could not be written.
        """

    async def durable(self) -> _Op:
        """The begun operation, once its begin is durable.

        Raises:
            JournalUnavailable / JournalConflict: it could not be written.
        """

    async def settle(self) -> None: ...


def _beginning(write: Coroutine[Any, Any, _Op], *, beside_reads: bool) -> _Beginning:
    """The begin of an operation, written beside its first reads (``READS_FIRST``) or
    durable before its browser is touched (any other, SPEC §8)."""
    return _BesideReads(write) if beside_reads else _BeforeBrowser(write)


class _BeforeBrowser:
    """A begin awaited in place, in :meth:`before_browser`: a cancelled call cancels its
    write as any await does, and no task is made (a few µs an operation)."""

    def __init__(self, write: Coroutine[Any, Any, _Op]) -> None:
        self._write = write
        self._outcome: _Op | Exception | None = None

    async def before_browser(self) -> None:
        try:
            self._outcome = await self._write
        except Exception as exc:
            self._outcome = exc
            raise

    async def durable(self) -> _Op:
        if isinstance(self._outcome, Exception):
            raise self._outcome
        assert self._outcome is not None, "durable() before before_browser()"
        return self._outcome

    async def settle(self) -> None:
        self._write.close()  # a no-op once awaited


class _BesideReads:
    """A begin written in a task of its own while the operation's first reads run;
    a waiter cancelled does not cancel the write."""

    def __init__(self, write: Coroutine[Any, Any, _Op]) -> None:
        self._task: asyncio.Future[_Op] = asyncio.ensure_future(write)

    async def before_browser(self) -> None:
        return None  # the reads go first; journaled() waits before any change

    async def durable(self) -> _Op:
        return await asyncio.shield(self._task)

    async def settle(self) -> None:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await self._task


@dataclass
class Session:
    """One seam call on one session: the record as the call changes it, its journal, the
    live browser once attached, the pages reached (for the history, SPEC §4)."""

    seam: Seam
    who: Principal
    key: str
    record: SessionRecord | None
    track: Track
    call: str = field(default_factory=records.new_id)
    browser: LiveBrowser | None = None
    pages: list[str] = field(default_factory=list)
    last: tuple[PageInfo, bool] | None = None
    _typed: tuple[tuple[tuple[tuple[str, str], ...], str | None], list[str]] | None = None
    """The typed secrets' names and the record's sealed mask, and the values they give,
    revealed once per call."""
    unsettled: bool = False
    warnings: list[dict[str, Any]] = field(default_factory=list)
    save_full: bool = False
    key_field: str = "key"
    """The caller's argument that named the session (a missing one's error names it)."""
    _beginning: _Beginning | None = None
    """The begin of the operation under way, until its call has waited for it (for an
    operation in ``READS_FIRST``: while it is written beside its first reads)."""

    # -- the journal ----------------------------------------------------------------------

    async def write(self, record: Record) -> None:
        """Append ``record`` durably and fold it in.

        Raises:
            JournalUnavailable / JournalConflict: not written; this copy is dropped.
        """
        track = self.track
        try:
            await self.seam.journal.write(track.key, record)
        except (JournalUnavailable, JournalConflict):
            track.broken = True
            raise
        track.state = fold(track.state, record, self.seam.journal.rules)

    async def begin(self, op: str, args: Mapping[str, Any], step: int | None = None) -> _Op:
        """A begin record for ``op``, durable before anything touches the browser.

        Raises:
            JournalUnavailable: it could not be made durable (503); nothing was touched.
        """
        generation = self.record.browser.generation if self.record and self.record.browser else None
        for attempt in (1, 2):
            started = records.begin(
                op,
                args,
                parent=self.track.state.head,
                call=self.call,
                step=step,
                generation=generation,
            )
            try:
                await self.write(started)
                return _Op(started, len(self.pages))
            except JournalConflict:
                if attempt == 2:
                    raise
                self.track = await self.seam.replay(self.track.key)  # another replica wrote
        raise AssertionError("unreachable")

    async def mark(
        self,
        kind: MarkKind,
        op: str | None = None,
        *,
        step: int | None = None,
        generation: str | UnsetType | None = UNSET,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """A mark (opened, reopened, saved, restored, forgotten, cleared); counts only."""
        await self.write(
            records.mark(
                kind,
                parent=self.track.state.head,
                op=op,
                call=self.call,
                step=step,
                generation=generation,
                detail=detail,
            )
        )

    async def finish(
        self,
        op: _Op,
        error: SitekeepError | None = None,
        *,
        refs: RefsStatus = "unknown",
        snapshot: RefMap | None = None,
        typed: Sequence[tuple[str, str]] = (),
        looked: bool = True,
        saved: Mapping[str, Any] | None = None,
    ) -> bool:
        """The finish of ``op`` (after a snapshot record when ``snapshot`` replaced the
        refs), with a save's counts in its effects when ``saved``; False — the session
        unsettled, a warning added — when it could not be written."""
        started = op.started
        page, withheld = self.last if looked and self.last else (None, False)
        generation = self.browser.ref.generation if self.browser else None
        try:
            name = None
            if snapshot is not None:
                made = records.snapshot(
                    started,
                    snapshot.snapshot,
                    snapshot.generation,
                    snapshot.shared_ids,
                    parent=self.track.state.head or started.id,
                )
                await self.write(made)
                self.track.refs, name = snapshot, made.id
            await self.write(
                records.finish(
                    started,
                    "failed" if error is not None else "ok",
                    parent=self.track.state.head or started.id,
                    pages=self.pages[op.first_page :],
                    page=page.url if page is not None else None,
                    withheld=withheld,
                    refs=refs if name is None else "replaced",
                    snapshot=name,
                    secrets=typed,
                    generation=generation,
                    error=error_json(error) if error is not None else None,
                    saved=saved,
                )
            )
            return True
        except (JournalUnavailable, JournalConflict) as exc:
            log.warning("a journal finish of %s was not written: %s", started.op, exc.message)
            self._unsettle()
            return False

    def _unsettle(self) -> None:
        """This call's effects are not all journaled: say so once in its result."""
        if not self.unsettled:
            self.warnings.append({"type": "journal_unsettled", "message": UNSETTLED_WARNING})
        self.unsettled = True

    # -- the browser ----------------------------------------------------------------------

    def require(self) -> SessionRecord:
        """The session's record. Raises: NotFound (field :attr:`key_field`)."""
        if self.record is None:
            raise NotFound("session", self.key, field=self.key_field)
        return self.record

    async def live(self, step: int | None = None) -> LiveBrowser:
        """The session's live browser; a gone one is reopened silently with a restore
        whose report waits in ``record.reopened`` for the first result (SPEC §3)."""
        if self.browser is not None:
            return self.browser
        record = self.require()
        if record.browser is not None:
            proxy = await self.seam.proxy_of(record, gone=None)
            live = await self.seam.attach(record.browser, proxy)
            if live is not None:
                self.browser = live
                return live
        await self.journaled()  # a reopen changes the browser and writes marks after it
        live, report, mask = await self.seam.new_browser(record, land=record.url, restore_data=True)
        self.browser = live
        record = self.seam.with_mask(record, mask)
        self.record = replace(record, browser=live.ref, reopened=report, refs=None)
        await self.seam.put(self.record)
        await self.journal_new_browser("reopened", report, step=step)
        return live

    async def journal_new_browser(
        self, kind: MarkKind, report: Mapping[str, Any] | None, *, step: int | None = None
    ) -> None:
        """Marks for a browser this call started: ``opened``/``reopened`` with its
        generation, then ``restored`` with the restore's counts when it restored any."""
        assert self.browser is not None
        generation = self.browser.ref.generation
        await self.mark(
            kind, step=step, generation=generation, detail={"browser": self.browser.ref.kind}
        )
        if report is not None:
            await self.mark("restored", step=step, detail=_restore_counts(report))

    async def look(self) -> tuple[PageInfo, bool]:
        """Where the browser is now, and whether its URL must be withheld: it holds the
        value of a secret typed in this session (SPEC §7). A URL shown is a page reached."""
        assert self.browser is not None
        page = await self.browser.page_info()
        return await self.landed(page)

    async def landed(self, page: PageInfo) -> tuple[PageInfo, bool]:
        withheld = any(_appears_in(value, page.url) for value in await self.typed_values())
        if not withheld:
            self.pages.append(page.url)
        self.last = (page, withheld)
        return self.last

    async def typed_values(self) -> list[str]:
        """The values the session masks (:meth:`Seam.mask_values`), revealed (decrypted)
        once per call and again only after the call typed another or restored data that
        carried more — not at every look of a flow."""
        record = self.require()
        names = (record.typed_secrets, record.mask)
        if self._typed is None or self._typed[0] != names:
            self._typed = (names, await self.seam.mask_values(self.who.tenant, record))
        return self._typed[1]

    # -- dispatch -------------------------------------------------------------------------

    async def dispatch(self, op: str, args: Any, *, step: int | None = None) -> dict[str, Any]:
        """Run operation ``op`` (arguments as ``sitekeep.steps`` validated them) journaled:
        begin, browser, handler, look, finish. Returns its result with ``{url, title}``
        (or ``url_withheld``).

        Raises:
            JournalUnavailable: the begin could not be written; nothing was touched.
            SitekeepError: the operation failed (its finish says so).
        """
        self.require()
        secrets = _Secrets(self.seam.vault, self.who.tenant)
        # Ruling on SPEC §8 (lead, issue #15): "begin durable before dispatch … browser not
        # touched" guards effects on the browser. A save's first calls only read, so its
        # begin may go out beside them — provided a begin that cannot be written still ends
        # the call with 503 and no snapshot, record change or finish (tests/faults).
        beginning = self._beginning = _beginning(
            self.begin(op, args.model_dump(exclude_none=True), step),
            beside_reads=op in READS_FIRST,
        )
        try:
            await beginning.before_browser()
            browser = await self.live(step)
            secrets.handed_over = functools.partial(
                self.seam.handed_over, self.who.tenant, self.key, browser.ref.generation
            )
            context = Context(
                browser,
                self.track.usable_refs(browser.ref.generation, self.call),
                tuple(self.seam.own_origins()),
                secrets,
                self._save,
                self.seam.browsers.own_address,
                secret_typed=self.require().secret_typed,
            )
            done = await HANDLERS[op](context, args)
        except SitekeepError as exc:
            begun = await self._begun_after(beginning, exc)
            await self._failed(begun, exc, tuple(secrets.revealed), secrets.values)
            raise
        except BaseException:
            await beginning.settle()
            self._beginning = None
            raise
        begun = await self._begun_after(beginning)
        self._apply(done, secrets.values)
        page, withheld = await self.landed(done.page) if done.page else await self.look()
        await self.finish(
            begun, refs=done.refs, snapshot=done.snapshot, typed=done.typed, saved=done.saved
        )
        return {**done.result, **_landing(page, withheld)}

    async def journaled(self) -> None:
        """Wait until the begin of the operation under way is durable: before anything
        that changes the browser or a store (a no-op once it is: an operation not in
        ``READS_FIRST`` waited for it before the browser).

        Raises:
            JournalUnavailable: the begin could not be written (503); the operation has
                only read.
        """
        if self._beginning is not None:
            await self._beginning.durable()

    async def _begun_after(self, beginning: _Beginning, failed: SitekeepError | None = None) -> _Op:
        """The begun operation once its begin is durable; a begin that could not be
        written fails the call in place of ``failed`` (only reads had run), or is
        ``failed`` itself (it was refused before the browser was touched)."""
        try:
            return await beginning.durable()
        except (JournalUnavailable, JournalConflict) as exc:
            if failed is not None and failed is not exc:
                raise exc from failed
            raise
        finally:
            await beginning.settle()
            self._beginning = None

    async def _failed(
        self,
        begun: _Op,
        exc: SitekeepError,
        typed: tuple[tuple[str, str], ...],
        values: Sequence[str] = (),
    ) -> None:
        """The failed operation's finish: where the browser is when it can still be seen
        (a flow reports it), refs unknown. Secrets it revealed are kept as typed (some of
        a value may be in the page) and their values masked in the error (SPEC §7)."""
        if typed:
            self._apply(Done(typed=typed), values)
            with contextlib.suppress(SitekeepError):
                await self.seam.put(self.require())
        if self.browser is not None:
            with contextlib.suppress(SitekeepError):
                await self.look()
        await self.finish(begun, exc, typed=typed)
        masker = Masker.of(await self.typed_values())
        if masker:
            for name, value in vars(exc).items():
                if isinstance(value, str):
                    setattr(exc, name, masker.text(value))
            exc.args = tuple(masker.value(list(exc.args)))

    def _apply(self, done: Done, typed: Sequence[str] = ()) -> None:
        """Fold an operation's effects into the record; ``typed``: the secret values it
        revealed, kept (sealed) in the session's mask as they are now."""
        record = self.require()
        if done.snapshot is not None:
            record = replace(record, refs=done.snapshot)
        for name in done.typed:
            kept = tuple(t for t in record.typed_secrets if t != name)
            record = replace(record, typed_secrets=(*kept, name)[-MAX_TYPED_SECRETS:])
        self.record = self.seam.with_mask(record, typed)

    async def _save(self, indexed_db: bool) -> tuple[dict[str, Any], PageInfo, Mapping[str, Any]]:
        """The save inside this call: the pages reached so far go into the history first,
        so the save reads their storage too (SPEC §4 flows)."""
        record = self.require()
        seam = self.seam
        self.record = record = replace(record, history=seam.bumped(record.history, self.pages))
        self.pages = []
        assert self.browser is not None
        return await seam.save(
            record, self.browser, self.save_full, indexed_db, journaled=self.journaled
        )

    # -- the end --------------------------------------------------------------------------

    async def end(self, result: dict[str, Any]) -> dict[str, Any]:
        """Add where the browser landed (or withhold it), bump the history with every URL
        the call reached, hand out a pending reopen report once, store the record."""
        record = self.require()
        if self.browser is None and record.browser is not None:
            self.browser = await self.seam.attach(record.browser)
        if self.last is None and self.browser is not None:
            await self.look()
        if self.last is not None:
            result = {**result, **_landing(*self.last)}
        result = well_formed(Masker.of(await self.typed_values()).value(result))
        if record.reopened is not None:
            result.setdefault("site_data", dict(record.reopened))
        if self.warnings:
            result["warnings"] = [*result.get("warnings", ()), *self.warnings]
        now = self.seam.clock()
        ref = self.browser.ref if self.browser is not None else None
        self.record = replace(
            record,
            browser=ref,
            history=self.seam.bumped(record.history, self.pages, now),
            reopened=None,
            refs=self.track.usable_refs(ref.generation if ref else None, self.call),
            last_used_at=now,
        )
        await self.seam.put(self.record)
        return result

    async def inspect(self) -> None:
        """Settle the begins another call left open (a finish not written, a process that
        died mid-call): look at the browser — its URL and its tab tree — and write each
        one's finish as ``unknown``, refs invalidated. Nothing is repeated.

        Raises:
            JournalUnavailable: the finishes could not be written (503); the browser was
                only read.
        """
        pending = [p for p in self.track.state.unsettled if p.call != self.call]
        record = self.record
        page: PageInfo | None = None
        tabs = 0
        if record is not None and record.browser is not None:
            live = await self.seam.attach(record.browser)
            if live is not None:
                self.browser = live
                page = await live.page_info()
                tree = await live.conn.send("browsingContext.getTree", {"maxDepth": 0})
                tabs = len(tree.get("contexts", ()))
        withheld = (
            page is not None
            and record is not None
            and await self.seam.holds_secret(self.who.tenant, record, page.url)
        )
        generation = self.browser.ref.generation if self.browser else None
        for pending_op in pending:
            started = records.Begin(
                v=1,
                id=pending_op.begin,
                parent=None,
                at=pending_op.at,
                op=pending_op.op,
                call=pending_op.call,
                step=pending_op.step,
                args={},
            )
            await self.write(
                records.finish(
                    started,
                    "unknown",
                    parent=self.track.state.head or started.id,
                    page=page.url if page else None,
                    withheld=withheld,
                    refs="invalidated",
                    generation=generation,
                )
            )
        self.warnings.append(
            {
                "type": "journal_inspected",
                "message": "an earlier operation's outcome was unknown: the browser was "
                "inspected and nothing was repeated",
                "ops": [p.op for p in pending],
                "tabs": tabs,
            }
        )


@dataclass(slots=True)
class _Secrets:
    """The one tenant's secrets, as ``operations.SecretsReader``; ``revealed`` names every
    (secret, field) an operation read — typed, or perhaps partly typed when it failed.

    ``handed_over`` tells whether the browser the operation runs in was handed over
    (``GET …/webdriver``, SPEC §21): its holder reads the page, so no secret is revealed
    for it (SPEC §7)."""

    vault: Vault
    tenant: str
    revealed: list[tuple[str, str]] = field(default_factory=list)
    values: list[str] = field(default_factory=list, repr=False)
    """Their values, for the session's mask (never in a result)."""
    handed_over: Callable[[], Awaitable[bool]] | None = None

    async def info(self, name: str) -> SecretInfo:
        return await self.vault.get_info(self.tenant, name, name_field="secret")

    async def reveal(self, name: str, field: str) -> str:
        if self.handed_over is not None and await self.handed_over():
            raise SecretNotAllowed(
                name,
                "a handed-over browser",
                message=f"secret {quoted(name)} is not typed into a browser that was handed "
                "over (GET /v1/sessions/{key}/webdriver): close it (DELETE …/browser) and "
                "open the session again; nothing was typed",
                field="secret",
            )
        value = await self.vault.reveal(self.tenant, name, field, name_field="secret")
        self.revealed.append((name, field))
        self.values.append(value)
        return value


class Seam:
    """Records, snapshots, locks, browsers and the journal of every session."""

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
        profiles: Profiles,
        proxies: Proxies,
        replica: str,
        own_origins: Callable[[], list[str]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.locks = locks
        self.runs = runs
        self.cipher = cipher
        self.browsers = browsers
        self.vault = vault
        self.journal = journal
        self.profiles = profiles
        self.proxies = proxies
        self.replica = replica
        self.own_origins = own_origins
        self.clock = clock
        self._tracks: dict[JournalKey, Track] = {}
        self.metrics = Metrics()
        """Counters and histograms for ``GET /metrics`` (SPEC §13): saves and restores
        are timed here, where every facade's call passes."""

    # -- the call -------------------------------------------------------------------------

    async def call(
        self,
        who: Principal,
        key: str,
        body: Callable[[Session], Awaitable[dict[str, Any]]],
        *,
        inspect: bool = True,
        key_field: str = "key",
    ) -> dict[str, Any]:
        """Run ``body`` on the session with its lock held; first, when ``inspect`` and an
        earlier call left the session unsettled, inspect and settle it (SPEC §8).
        ``key_field`` is the caller's argument that named the session.

        Raises:
            InvalidInput: a malformed key (field ``key_field``).
            SessionBusy: another call held the session past ``SITEKEEP_LOCK_WAIT``.
        """
        key = check_key(key, key_field)
        async with self.held(who.tenant, key):
            jkey = JournalKey(who.tenant, key)
            track = self._tracks.pop(jkey, None) or await self.replay(jkey)
            record = await self.load(who.tenant, key)
            session = Session(self, who, key, record, track, key_field=key_field)
            try:
                if inspect and track.state.unsettled:
                    await session.inspect()
                return await body(session)
            finally:
                if not session.track.broken:
                    self._tracks[jkey] = session.track

    async def replay(self, key: JournalKey) -> Track:
        """The session's journal state, replayed from the backend (bounded memory)."""
        replayed = await self.journal.replay(key)
        for problem in replayed.report.problems:
            log.warning("journal %s/%s: %s", key.tenant, key.key, problem.message)
        return Track(key, replayed.state, replayed.refs)

    def forget_track(self, tenant: str, key: str) -> None:
        self._tracks.pop(JournalKey(tenant, key), None)

    @contextlib.asynccontextmanager
    async def held(
        self, tenant: str, key: str, *, wait: float | None = None
    ) -> AsyncIterator[None]:
        """The session's lock held, and a fresh table of the revisions this call reads."""
        wait = self.settings.lock_wait if wait is None else wait
        async with self.locks.hold(f"{tenant}/{key}", wait=wait):
            token = _REVISIONS.set({})
            try:
                yield
            finally:
                _REVISIONS.reset(token)

    # -- records and snapshots ------------------------------------------------------------

    @staticmethod
    def record_key(tenant: str, key: str) -> str:
        return f"session/{tenant}/{key}"

    @staticmethod
    def snapshot_key(tenant: str, key: str) -> str:
        return f"site-data/{tenant}/{key}"

    @staticmethod
    def handover_key(tenant: str, key: str) -> str:
        """Where the generation of the session's browser last handed over is kept."""
        return f"webdriver-browser/{tenant}/{key}"

    async def hand_over(self, record: SessionRecord, generation: str) -> None:
        """Mark the browser ``generation`` of the session as handed over (SPEC §21): no
        secret is typed into it from now on (:meth:`handed_over`). Call with the session's
        lock held, so no type_secret runs meanwhile."""
        mark = self.handover_key(record.tenant, record.key)
        await self.store.set(mark, generation.encode(), ttl=self.settings.session_ttl)

    async def handed_over(self, tenant: str, key: str, generation: str) -> bool:
        """Whether the session's browser ``generation`` was ever handed over."""
        return await self.store.get(self.handover_key(tenant, key)) == generation.encode()

    async def load(self, tenant: str, key: str) -> SessionRecord | None:
        """The record, or None; inside a seam, its revision is kept for :meth:`put`."""
        return self._record_of(tenant, key, await self.store.read(self.record_key(tenant, key)))

    async def secret_typed(self, tenant: str, key: str) -> bool:
        """Whether a secret was typed in session ``key`` (``SessionRecord.secret_typed``):
        what the live socket's input is judged by, as an operation's is by
        ``Context.secret_typed``."""
        record = await self.load(tenant, key)
        return record is not None and record.secret_typed

    async def load_many(self, tenant: str, keys: Sequence[str]) -> list[SessionRecord | None]:
        """:meth:`load` of each key, in one store round trip."""
        found = await self.store.read_many([self.record_key(tenant, key) for key in keys])
        return [self._record_of(tenant, k, f) for k, f in zip(keys, found, strict=True)]

    async def load_with_snapshots(
        self, tenant: str, keys: Sequence[str]
    ) -> list[tuple[SessionRecord | None, SiteData | None]]:
        """:meth:`load` and :meth:`load_snapshot` of each key, all in one store round trip
        (no snapshot is opened without its record)."""
        found = await self.store.read_many(
            [self.record_key(tenant, k) for k in keys]
            + [self.snapshot_key(tenant, k) for k in keys]
        )
        pairs: list[tuple[SessionRecord | None, SiteData | None]] = []
        for key, item, sealed in zip(keys, found, found[len(keys) :], strict=False):
            record = self._record_of(tenant, key, item)
            if record is None or sealed is None:
                pairs.append((record, None))
            else:
                pairs.append((record, self._snapshot_of(tenant, key, sealed.value)))
        return pairs

    @staticmethod
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

    async def require(self, who: Principal, key: str, field: str = "key") -> SessionRecord:
        """The session's record. Raises: InvalidInput, NotFound (both naming ``field``)."""
        record = await self.load(who.tenant, check_key(key, field))
        if record is None:
            raise NotFound("session", key, field=field)
        return record

    async def put(self, record: SessionRecord) -> None:
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
        await self.store.expire(self.snapshot_key(*ident), ttl)
        written = await self.store.write(
            self.record_key(*ident),
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

    async def load_snapshot(self, tenant: str, key: str) -> SiteData | None:
        sealed = await self.store.get(self.snapshot_key(tenant, key))
        return None if sealed is None else self._snapshot_of(tenant, key, sealed)

    def _snapshot_of(self, tenant: str, key: str, sealed: bytes) -> SiteData:
        plain = self.cipher.open(sealed, tenant=tenant, kind="site-data", ident=key)
        return load_site_data(plain)

    async def put_snapshot(self, tenant: str, key: str, snapshot: SiteData) -> None:
        sealed = self.cipher.seal(
            dump_site_data(snapshot), tenant=tenant, kind="site-data", ident=key
        )
        await self.store.set(self.snapshot_key(tenant, key), sealed, ttl=self.settings.session_ttl)

    def bumped(
        self, history: Sequence[HistoryEntry], pages: Sequence[str], now: float | None = None
    ) -> tuple[HistoryEntry, ...]:
        return hist.bump_many(
            history,
            pages,
            self.clock() if now is None else now,
            ttl=self.settings.session_ttl,
            cap=self.settings.history_cap,
        )

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
        values = await self.mask_values(tenant, record) if record.secret_typed else []
        return any(_appears_in(value, url) for value in values)

    # -- browsers -------------------------------------------------------------------------

    async def new_browser(
        self,
        record: SessionRecord,
        *,
        land: str | None,
        restore_data: bool,
        preset: SiteData | None = None,
        land_field: str | None = None,
    ) -> tuple[LiveBrowser, dict[str, Any] | None, tuple[str, ...]]:
        """A new browser for the session, its run in the ledger: reserved under the caps
        before the browser starts, and where it runs recorded before anything loads in it.
        It runs through the session's proxy (SPEC §14); ``preset`` (a profile's site data)
        is restored instead of the session's snapshot.

        Args:
            land_field: the caller's argument that held ``land``, which a failed load
                names (``NavigationFailed.field``); None when ``land`` is the last page.

        Returns:
            The browser, the restore report (None when nothing was restored), and the mask
            the restored data carried (``SiteData.mask``), which the caller adds to the
            session's (:meth:`with_mask`).

        Raises:
            CapacityExceeded: a cap is reached; no browser was started.
            StoreUnavailable: the ledger cannot be reached; no browser is left running.
            InvalidInput: ``country`` — the session's proxy left the pool.
        """
        proxy = await self.proxy_of(record)
        run = await self._reserve(record)
        try:
            live = await self.browsers.start(record.kind, insecure=record.insecure, proxy=proxy)
        except BaseException:
            await self.ledger(self.runs.close_run(run.id, at=self.clock(), reason="crashed"))
            raise
        try:
            await self.runs.started(run.id, live.ref.endpoint, live.ref.session_id)
        except BaseException:
            await self.release(live.ref, "crashed")
            raise
        try:
            filled, mask = await self._fill_new_browser(
                live, record, land, restore_data, preset, land_field
            )
            return live, filled, mask
        except BaseException:
            # No record names this browser yet: a failed first load (an unsafe port, a
            # page slower than the navigation timeout) would leave it running unowned.
            with anyio.CancelScope(shield=True):
                await self.release(live.ref, "closed")
            raise
        finally:
            self.browsers.replenish()

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
        live = await self.browsers.attach(ref, proxy=proxy)
        if live is None:
            await self.ledger(self.runs.close(ref.session_id, at=self.clock(), reason="crashed"))
        return live

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
        await self.browsers.close(ref)
        await self.ledger(self.runs.close(ref.session_id, at=self.clock(), reason=reason))

    @staticmethod
    async def ledger(write: Awaitable[object]) -> None:
        try:
            await write
        except StoreUnavailable as exc:
            log.warning("the run ledger missed a close: %s", exc.message)

    async def _fill_new_browser(
        self,
        live: LiveBrowser,
        record: SessionRecord,
        land: str | None,
        restore_data: bool,
        preset: SiteData | None = None,
        land_field: str | None = None,
    ) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
        """Restore the session's snapshot (or ``preset``: a profile's site data) into a
        new browser, then land; the restore report (None when nothing was written) and
        the restored data's mask."""
        snapshot = None
        if not record.insecure:  # restored cookies must never meet a man in the middle
            snapshot = preset
            if snapshot is None and restore_data:
                snapshot = await self.load_snapshot(record.tenant, record.key)
            if snapshot is None and restore_data and record.profile is not None:
                snapshot = await self._profile_data(record)
        if snapshot is None:
            if land:
                await live.navigate(land, field=land_field)
            return None, ()
        warnings = await self.user_agent(live, record, snapshot)
        with self.metrics.timed(self.metrics.restores):
            report = await restore(live, snapshot, land, now=self.clock())
        warnings.extend(report.warnings)
        if not report.restored and not report.skipped and not warnings:
            return None, snapshot.mask
        result = {**report.as_json(), "uri": site_data_uri(record.key)}
        if warnings:
            result["warnings"] = warnings
        return result, snapshot.mask

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

    # -- the save -------------------------------------------------------------------------

    async def save(
        self,
        record: SessionRecord,
        browser: LiveBrowser,
        full: bool,
        indexed_db: bool,
        *,
        journaled: Callable[[], Awaitable[None]] | None = None,
    ) -> tuple[dict[str, Any], PageInfo, dict[str, Any]]:
        """Replace the session's snapshot with the browser's site data (SPEC §3 Save).

        ``journaled``: waits until the call's begin is durable (``Session.journaled``);
        awaited after the first reads, before a spare tab and before the snapshot is stored.

        Returns:
            The result ``{saved: {cookies, sites, skipped, spare_reads}, uri}``, where the
            browser is, and the counts its journal finish carries (``effects.saved``).
        """
        with self.metrics.timed(self.metrics.saves):
            read = await self.read_site_data(
                record, browser, full=full, indexed_db=indexed_db, journaled=journaled
            )
        snapshot, skipped, order = read.snapshot, read.skipped, read.order
        if journaled is not None:
            await journaled()
        await self.put_snapshot(record.tenant, record.key, snapshot)
        saved = {
            "cookies": len(snapshot.cookies),
            "sites": [o for o in order if o in snapshot.origins]
            + sorted(set(snapshot.origins) - set(order)),
            "skipped": [s.as_json() for s in skipped],
            "spare_reads": read.spare_reads,
        }
        counts = {
            "cookies": len(snapshot.cookies),
            "sites": len(snapshot.origins),
            "skipped": len(skipped),
        }
        return {"saved": saved, "uri": site_data_uri(record.key)}, read.page, counts

    async def read_site_data(
        self,
        record: SessionRecord,
        browser: LiveBrowser,
        *,
        full: bool,
        indexed_db: bool,
        journaled: Callable[[], Awaitable[None]] | None = None,
    ) -> SiteDataRead:
        """What a save would store — composed over the session's snapshot — and what it
        left out; nothing is written (a profile capture keeps it elsewhere, SPEC §9). The
        last snapshot is loaded beside the browser's first reads. It carries the mask of
        the values it holds (``masking.carried``: the session's and the last snapshot's)."""
        captured = await read_snapshot(
            browser,
            [e.origin for e in record.history],
            self.load_snapshot(record.tenant, record.key),
            deadline=self.settings.save_deadline,
            cap=self.settings.snapshot_cap,
            now=self.clock(),
            full=full,
            indexed_db=indexed_db,
            journaled=journaled,
        )
        page = captured.page or await browser.page_info()
        snapshot = captured.snapshot
        values = [*await self.mask_values(record.tenant, record), *snapshot.mask]
        snapshot = replace(snapshot, mask=carried(values, snapshot))
        return SiteDataRead(snapshot, captured.skipped, captured.order, captured.spare_reads, page)


@dataclass(frozen=True, slots=True)
class SiteDataRead:
    """A read of the browser's site data composed over the session's snapshot: the
    snapshot a save would store, what it left out, the origins in visit order, how many
    were read through the spare tab, and where the browser is."""

    snapshot: SiteData
    skipped: list[Skipped]
    order: list[str]
    spare_reads: int
    page: PageInfo


def mask_envelope(record: SessionRecord) -> bytes | None:
    """The sealed envelope of the record's mask (``SessionRecord.mask``), or None."""
    return None if record.mask is None else base64.b64decode(record.mask)


def with_envelope(record: SessionRecord, envelope: bytes) -> SessionRecord:
    """``record`` holding ``envelope`` as its sealed mask (key rotation reseals it so)."""
    return replace(record, mask=base64.b64encode(envelope).decode("ascii"))


def site_data_uri(key: str) -> str:
    return f"sitekeep://sessions/{key}/site-data"


def _restore_counts(report: Mapping[str, Any]) -> dict[str, Any]:
    """A restore report's counts for the ``restored`` mark: never a name or value."""
    return {
        name: len(value) if isinstance(value, list | tuple | dict) else value
        for name, value in report.items()
        if name in ("restored", "skipped", "warnings", "cookies")
    }


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
    return any(form in url for form in forms(value)) or value in unquote_plus(url)


def well_formed(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with each lone UTF-16 surrogate in its strings (a page's title, a storage
    key, a value in the owner's view) replaced by U+FFFD, so every facade can encode it as
    UTF-8. Results show state; the snapshot keeps it exactly (``model.json_bytes``)."""
    cleaned: dict[str, Any] = _scrub(result)
    return cleaned


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value if value.isascii() else LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value
