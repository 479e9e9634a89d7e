"""One seam call on one session: its working state (SPEC §2, §4, §8).

:class:`Session` holds the record as the call changes it, the call's journal
(``context.CallJournal``), the live browser once attached (or silently reopened, SPEC §3),
and the pages the call reached (for the history, SPEC §4). It takes the seam's parts —
records, browsers, saving, the vault — never the seam itself. Every operation it runs goes
through the operation context (:func:`sitekeep.seam.context.run_operation`): an agent's
operation by :meth:`Session.dispatch`, any other use case by calling it with its own work.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from msgspec import UNSET, UnsetType
from pydantic import BaseModel

from sitekeep.browser import wire
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.errors import NotFound, SecretNotAllowed, quoted
from sitekeep.journal.records import MarkKind
from sitekeep.masking import Masker, appears_in
from sitekeep.model import Principal, SessionRecord, SiteData, well_formed
from sitekeep.seam.browsers import Browsers
from sitekeep.seam.context import run_operation
from sitekeep.seam.journaling import CallJournal, Track
from sitekeep.seam.operations import HANDLERS, MAX_TYPED_SECRETS, Context, Done
from sitekeep.seam.records import Records
from sitekeep.seam.saving import Saving, SiteReader
from sitekeep.secrets import SecretInfo
from sitekeep.vault import Vault

__all__ = ["Session", "SessionParts", "landing"]


@dataclass(frozen=True, slots=True)
class SessionParts:
    """What a call's :class:`Session` works with: the seam's rooms and the vault."""

    records: Records
    browsers: Browsers
    saving: Saving
    vault: Vault
    own_origins: Callable[[], list[str]]


@dataclass
class Session:
    """One seam call on one session: the record as the call changes it, its journal, the
    live browser once attached, the pages reached (for the history, SPEC §4)."""

    parts: SessionParts
    who: Principal
    key: str
    record: SessionRecord | None
    journal: CallJournal
    key_field: str = "key"
    """The caller's argument that named the session (a missing one's error names it)."""
    browser: LiveBrowser | None = None
    pages: list[str] = field(default_factory=list)
    last: tuple[PageInfo, bool] | None = None
    saved: SiteData | None = None
    """The snapshot a save of this call stored (a save into a profile writes it too)."""
    _typed: tuple[tuple[tuple[tuple[str, str], ...], str | None], list[str]] | None = None
    """The typed secrets' names and the record's sealed mask, and the values they give,
    revealed once per call."""

    @property
    def track(self) -> Track:
        return self.journal.track

    @property
    def unsettled(self) -> bool:
        """Whether an effect of this call could not be journaled (SPEC §8)."""
        return self.journal.unsettled

    def require(self) -> SessionRecord:
        """The session's record. Raises: NotFound (field :attr:`key_field`)."""
        if self.record is None:
            raise NotFound("session", self.key, field=self.key_field)
        return self.record

    async def put(self) -> None:
        """Write the record as the call holds it (``Records.put``)."""
        await self.parts.records.put(self.require())

    # -- running operations ---------------------------------------------------------------

    async def dispatch(
        self, op: str, args: BaseModel, *, step: int | None = None
    ) -> dict[str, Any]:
        """Run agent operation ``op`` (``operations.HANDLERS``; arguments as
        ``sitekeep.args`` validated them) journaled. Returns its result with ``{url,
        title}`` (or ``url_withheld``).

        Raises:
            JournalUnavailable: the begin could not be written; nothing was touched.
            SitekeepError: the operation failed (its finish says so).
        """
        self.require()
        self.last = None
        secrets = _Secrets(self.parts.vault, self.who.tenant)

        async def work() -> Done:
            browser = await self.live(step)
            secrets.handed_over = functools.partial(
                self.parts.records.handed_over, self.who.tenant, self.key, browser.ref.generation
            )
            context = Context(
                browser,
                self.journal.usable_refs(browser.ref.generation),
                tuple(self.parts.own_origins()),
                secrets,
                self.reader(timed=True),
                self.parts.browsers.manager.own_address,
                secret_typed=self.require().secret_typed,
            )
            return await HANDLERS[op](context, args)

        args_json = args.model_dump(exclude_none=True)
        done = await run_operation(
            self, op, args_json, work, step=step, secrets=secrets, look_on_failure=True
        )
        assert self.last is not None
        return {**done.result, **landing(*self.last)}

    def reader(self, *, timed: bool = False) -> SiteReader:
        """A reader of the session's site data as this call holds it: the history with
        the pages reached so far (SPEC §4 flows), the begin awaited before a spare tab."""
        return self.parts.saving.reader(self.require(), self.pages, self.journaled, timed=timed)

    async def journaled(self) -> None:
        """Wait until the begin of the operation under way is durable: before anything
        that changes the browser or a store (a no-op once it is).

        Raises:
            JournalUnavailable: the begin could not be written (503); the operation has
                only read.
        """
        await self.journal.durable()

    async def mark(
        self,
        kind: MarkKind,
        op: str | None = None,
        *,
        generation: str | UnsetType | None = UNSET,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """A mark in the session's journal (``CallJournal.mark``); counts only."""
        await self.journal.mark(kind, op, generation=generation, detail=detail)

    async def apply(self, done: Done, values: Sequence[str] = ()) -> None:
        """Fold an operation's effects into the record — its refs, the secrets it typed,
        their ``values`` sealed into the session's mask — and store a save's snapshot."""
        record = self.require()
        if done.snapshot is not None:
            record = replace(record, refs=done.snapshot)
        for name in done.typed:
            kept = tuple(t for t in record.typed_secrets if t != name)
            record = replace(record, typed_secrets=(*kept, name)[-MAX_TYPED_SECRETS:])
        states = done.sign_in
        if states is None and done.save is not None:
            states = done.save.sign_in
        if states is not None:
            record = replace(record, sign_in=dict(states))
        self.record = record = self.parts.records.with_mask(record, values)
        if done.save is not None:
            await self.parts.saving.keep(record, done.save)
            self.saved = done.save

    # -- the browser ----------------------------------------------------------------------

    async def live(self, step: int | None = None) -> LiveBrowser:
        """The session's live browser; a gone one is reopened silently with a restore
        whose report waits in ``record.reopened`` for the first result (SPEC §3)."""
        if self.browser is not None:
            return self.browser
        record = self.require()
        browsers = self.parts.browsers
        if record.browser is not None:
            proxy = await browsers.proxy_of(record, gone=None)
            live = await browsers.attach(record.browser, proxy)
            if live is not None:
                self.browser = live
                return live
        await self.journaled()  # a reopen changes the browser and writes marks after it
        live, report, restored = await browsers.new_browser(
            record, land=record.url, restore_data=True
        )
        self.browser = live
        record = self.parts.records.with_mask(record, restored.mask if restored else ())
        self.record = replace(
            record,
            browser=live.ref,
            reopened=report,
            refs=None,
            sign_in=dict(restored.sign_in) if restored else {},
        )
        await self.put()
        await self.journal.new_browser("reopened", live.ref, report, step=step)
        return live

    async def look(self) -> tuple[PageInfo, bool]:
        """Where the browser is now, and whether its URL must be withheld: it holds the
        value of a secret typed in this session (SPEC §7). A URL shown is a page reached."""
        assert self.browser is not None
        page = await self.browser.page_info()
        return await self.landed(page)

    async def landed(self, page: PageInfo) -> tuple[PageInfo, bool]:
        """:meth:`look`, of a page the operation already saw."""
        withheld = any(appears_in(value, page.url) for value in await self.typed_values())
        if not withheld:
            self.pages.append(page.url)
        self.last = (page, withheld)
        return self.last

    async def typed_values(self) -> list[str]:
        """The values the session masks (``Records.mask_values``), revealed (decrypted)
        once per call and again only after the call typed another or restored data that
        carried more — not at every look of a flow."""
        record = self.require()
        names = (record.typed_secrets, record.mask)
        if self._typed is None or self._typed[0] != names:
            values = await self.parts.records.mask_values(self.who.tenant, record)
            self._typed = (names, values)
        return self._typed[1]

    # -- the end --------------------------------------------------------------------------

    async def end(self, result: dict[str, Any]) -> dict[str, Any]:
        """Add where the browser landed (or withhold it), bump the history with every URL
        the call reached, hand out a pending reopen report once, store the record."""
        record = self.require()
        if self.browser is None and record.browser is not None:
            self.browser = await self.parts.browsers.attach(record.browser)
        if self.last is None and self.browser is not None:
            await self.look()
        if self.last is not None:
            result = {**result, **landing(*self.last)}
        result = well_formed(Masker.of(await self.typed_values()).value(result))
        if record.reopened is not None:
            result.setdefault("site_data", dict(record.reopened))
        if self.journal.warnings:
            result["warnings"] = [*result.get("warnings", ()), *self.journal.warnings]
        records = self.parts.records
        now = records.clock()
        ref = self.browser.ref if self.browser is not None else None
        self.record = replace(
            record,
            browser=ref,
            history=records.bumped(record.history, self.pages, now),
            reopened=None,
            refs=self.journal.usable_refs(ref.generation if ref else None),
            last_used_at=now,
        )
        await self.put()
        return result

    async def inspect(self) -> None:
        """Settle the begins another call left open (a finish not written, a process that
        died mid-call): look at the browser — its URL and its tab tree — and write each
        one's finish as ``unknown``, refs invalidated. Nothing is repeated.

        Raises:
            JournalUnavailable: the finishes could not be written (503); the browser was
                only read.
        """
        record = self.record
        page: PageInfo | None = None
        tabs = 0
        if record is not None and record.browser is not None:
            live = await self.parts.browsers.attach(record.browser)
            if live is not None:
                self.browser = live
                page = await live.page_info()
                top = wire.browsing_context_get_tree(max_depth=0)
                tree = await wire.call(live.conn, top)
                tabs = len(tree.get("contexts", ()))
        withheld = (
            page is not None
            and record is not None
            and await self.parts.records.holds_secret(self.who.tenant, record, page.url)
        )
        generation = self.browser.ref.generation if self.browser else None
        await self.journal.settle_unknown(page, withheld, generation, tabs)


def landing(page: PageInfo, withheld: bool) -> dict[str, Any]:
    """``{url, title}`` of where a call landed, or the title alone with ``url_withheld``."""
    if withheld:
        return {"url_withheld": True, "title": page.title}
    return {"url": page.url, "title": page.title}


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
