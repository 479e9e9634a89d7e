"""The session use cases: open, act, save, close, delete (SPEC §3, §5).

Every one runs in the seam (``sitekeep.seam``): the session's lock held, each journaled
operation through the one operation context (begin durable → work → mask → apply →
finish, SPEC §8), the record written back at the end. Results are plain JSON-able dicts
in the shapes of SPEC §5; none holds a value.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Any

import anyio

from sitekeep import history as hist
from sitekeep import sitedata
from sitekeep.args import OpenBody, SaveArgs, SaveBody, parse_args
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.useragent import override_user_agent
from sitekeep.errors import InvalidInput
from sitekeep.model import BrowserKind, Principal, SessionRecord, SiteData, well_formed
from sitekeep.policy import check_key, check_url
from sitekeep.profiles import Loaded, captured, first_site, profile_json
from sitekeep.seam import Session, run_operation
from sitekeep.seam.operations import Done
from sitekeep.service.autosave import save_or_report
from sitekeep.service.gates import values_gate
from sitekeep.service.parts import Parts
from sitekeep.service.profile_state import ProfileStates
from sitekeep.stores.base import ProxyRow

__all__ = ["INSECURE_HINT", "Sessions"]

_KINDS: tuple[BrowserKind, ...] = ("chromium", "firefox")
INSECURE_HINT = (
    "insecure=true: nothing was restored and nothing was deleted — restored cookies must "
    "never meet a man in the middle"
)


@dataclass(frozen=True, slots=True)
class _Plan:
    """An open, its options checked: the browser kind (and whether it was asked for),
    where to land, the profile it starts from and the proxy it runs through."""

    options: OpenBody
    kind: BrowserKind
    kind_given: bool
    url: str | None
    profile: Loaded | None
    route: ProxyRow | None

    @property
    def clean(self) -> bool:
        """Whether the open wants a new browser whatever runs now (SPEC §3)."""
        return self.options.fresh or self.profile is not None

    def journaled(self) -> dict[str, Any]:
        """The open's arguments as its begin record keeps them (redacted there)."""
        return {
            **self.options.model_dump(exclude={"key"}),
            "browser": self.kind if self.kind_given else None,
            "url": hist.trim_url(self.url) if self.url else None,
            "country": self.route.country if self.route else None,
        }


class Sessions:
    """The session use cases (SPEC §3, §5)."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._seam = parts.seam

    async def open(self, who: Principal, options: OpenBody) -> dict[str, Any]:
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
        key = check_key(options.key) if options.key is not None else secrets.token_hex(6)
        plan = await self._plan(who, options)

        async def body(s: Session) -> dict[str, Any]:
            before = s.record.browser if s.record is not None else None

            async def work() -> Done:
                return Done(await self._open_locked(s, plan), refs="invalidated")

            try:
                done = await run_operation(s, "open_session", plan.journaled(), work)
                return await s.end(dict(done.result))
            except BaseException:
                # No stored record names a browser this open started: a failure (its
                # browser died mid-restore) would leave it unowned (issue #8 item 6).
                await self._release_new(s, before)
                raise

        opened = await self._seam.call(who, key, body, use=True)
        self._seam.metrics.opened.inc()
        return opened

    async def _plan(self, who: Principal, options: OpenBody) -> _Plan:
        """The open's options checked, the profile's gate first (a profile one may not
        use is refused before anything else). Raises: InvalidInput, NotFound, Forbidden."""
        parts = self._parts
        kind = _kind(options.browser)
        loaded = None
        if options.profile is not None:
            loaded = await parts.profiles.load(who, options.profile, "use", field="profile")
        country = options.country
        if country is None and loaded is not None:
            country = loaded.row.country  # a profile signs in from where it was captured
        route = await parts.proxies.choose(who.tenant, country) if country is not None else None
        url = options.url
        if url is not None:
            url = check_url(url, own=parts.browsers.own_address, own_origins=parts.own_origins())
        return _Plan(options, kind or parts.settings.browser, kind is not None, url, loaded, route)

    async def _release_new(self, s: Session, before: Any) -> None:
        """Release the browser this call started, if it started one."""
        if s.browser is not None and (
            before is None or s.browser.ref.generation != before.generation
        ):
            with anyio.CancelScope(shield=True):
                await self._seam.browsers.release(s.browser.ref, "closed")

    async def _open_locked(self, s: Session, plan: _Plan) -> dict[str, Any]:
        """The open inside the seam: the record as the options want it, the browser kept
        or a new one, and the open's result."""
        options = plan.options
        record = s.record or self._new_record(s, plan.kind)
        result: dict[str, Any] = {"key": s.key}
        if not options.restore_site_data:
            forgotten = await self._forget_snapshot(s.who.tenant, s.key)
            await s.mark("forgotten", detail={"hosts": forgotten})
            result["site_data"] = {"forgotten": forgotten}
        to = plan.kind if plan.kind_given else record.kind
        if to != record.kind:
            result["switched_browser"] = {"from": record.kind, "to": to}
        # Forgetting the site data forgets the browser that holds it too: a clean one.
        rerouted = plan.route is not None and plan.route.name != record.proxy
        clean = plan.clean or not options.restore_site_data or rerouted
        live = await self._reusable(record, to, options.insecure, clean)
        record = _as_asked(record, to, plan)
        if live is None:
            live, record = await self._new_browser(s, record, plan, result)
        else:
            await self._reuse(s, live, plan)
        if options.insecure:
            result["hint"] = INSECURE_HINT
        if record.proxy is not None:
            result["proxy"] = {"name": record.proxy, "country": record.country}
        s.browser = live
        s.record = replace(record, browser=live.ref, reopened=None, refs=None)
        return result

    def _new_record(self, s: Session, kind: BrowserKind) -> SessionRecord:
        now = self._parts.clock()
        return SessionRecord(
            tenant=s.who.tenant,
            key=s.key,
            owner=s.who.subject,
            kind=kind,
            created_at=now,
            last_used_at=now,
        )

    async def _new_browser(
        self, s: Session, record: SessionRecord, plan: _Plan, result: dict[str, Any]
    ) -> tuple[LiveBrowser, SessionRecord]:
        """A new browser for the open, its restore report (and the profile it came from)
        in ``result``; the record with the mask the restored data carried."""
        preset = plan.profile.site_data if plan.profile is not None else None
        live, report, restored = await self._seam.browsers.new_browser(
            record,
            land=plan.url or record.url or (first_site(preset) if preset else None),
            restore_data=plan.options.restore_site_data,
            preset=preset,
            land_field="url" if plan.url else None,
        )
        # The mask follows the data; so does its sign-in state (SPEC §18).
        record = self._seam.records.with_mask(record, restored.mask if restored else ())
        record = replace(record, sign_in=dict(restored.sign_in) if restored else {})
        s.browser = live
        await s.journal.new_browser("opened", live.ref, report)
        if report is not None:
            result["site_data"] = report
        if plan.profile is not None:
            named = {"id": plan.profile.row.id, "name": plan.profile.row.name}
            result["site_data"] = {**result.get("site_data", {}), "profile": named}
        return live, record

    async def _reuse(self, s: Session, live: LiveBrowser, plan: _Plan) -> None:
        """The browser kept: its User-Agent as asked, then to ``url``."""
        s.browser = live
        if plan.options.keep_user_agent:
            snapshot = await self._seam.records.load_snapshot(s.who.tenant, s.key)
            if snapshot is not None and snapshot.user_agent:
                await override_user_agent(live, snapshot.user_agent)
        if plan.url is not None:
            await live.navigate(plan.url, field="url")

    async def _reusable(
        self, record: SessionRecord, kind: BrowserKind, insecure: bool, fresh: bool
    ) -> LiveBrowser | None:
        """The live browser to keep using, or None (after closing one that cannot stay)."""
        if record.browser is None:
            return None
        browsers = self._seam.browsers
        live = await browsers.attach(record.browser, await browsers.proxy_of(record, gone=None))
        if live is None:
            return None
        if fresh or record.browser.kind != kind or record.browser.insecure != insecure:
            await browsers.release(record.browser, "closed")
            return None
        return live

    async def _forget_snapshot(self, tenant: str, key: str) -> int:
        """Delete the session's snapshot and its versions; how many hosts it held."""
        records = self._seam.records
        snapshot = await records.load_snapshot(tenant, key)
        await records.delete_snapshot(tenant, key)
        return 0 if snapshot is None else len(sitedata.host_rows(snapshot, ()))

    # -- agent operations -------------------------------------------------------------

    async def act(self, who: Principal, key: str, op: str, **args: Any) -> dict[str, Any]:
        """Run one agent operation (SPEC §5) on session ``key``.

        Args:
            op: ``navigate``, ``back``, ``forward``, ``snapshot``, ``click``, ``type``,
                ``type_secret``, ``press``, ``select``, ``read``, ``screenshot``,
                ``wait_for``, ``assert_text`` or ``save_site_data``.
            args: the operation's arguments (``sitekeep.args``).

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

        return await self._seam.call(who, key, body, use=True)

    async def navigate(self, who: Principal, key: str, url: str) -> dict[str, Any]:
        """Go to ``url`` and wait for the page to load. Returns ``{url, title}``.

        Raises:
            InvalidInput: a URL agents may not open (SPEC §12).
        """
        parts = self._parts
        check_url(url, own=parts.browsers.own_address, own_origins=parts.own_origins())
        return await self.act(who, key, "navigate", url=url)

    async def back(self, who: Principal, key: str) -> dict[str, Any]:
        """One step back in the main tab's history. Returns ``{url, title}``."""
        return await self.act(who, key, "back")

    async def forward(self, who: Principal, key: str) -> dict[str, Any]:
        """One step forward in the main tab's history. Returns ``{url, title}``."""
        return await self.act(who, key, "forward")

    async def save_site_data(self, who: Principal, key: str, options: SaveBody) -> dict[str, Any]:
        """Replace the session's snapshot with the browser's site data (SPEC §3 Save);
        with ``profile``, write the snapshot it stored into that profile too (SPEC §9).

        ``indexed_db`` also carries every visited origin's IndexedDB databases (SPEC §3
        IndexedDB); without it, each origin known to hold some is named in ``skipped`` as
        not carried. ``full`` reads every history origin through the spare tab, ignoring
        the copies captured on leave (slower; the reference the fast path must equal).

        Returns:
            ``{url, title, saved: {cookies, sites, skipped, spare_reads}, uri, profile?}``
            — never a value; ``spare_reads`` counts the origins read through the spare
            tab (the rest were read live or copied on leave).

        Raises:
            SnapshotTooLarge: the cookies alone pass the cap; the old snapshot stands.
            BrowserUnavailable: BiDi is down; nothing was saved.
            NotFound, Forbidden: the profile's gate (``capture``), and who may take the
                session's values out; checked before the browser.
            JournalUnavailable: the journal's begin could not be made durable (503,
                SPEC §8); the browser was not touched.
        """
        parts, profile = self._parts, options.profile
        if profile is not None:
            await parts.profiles.get(who, profile, "capture", field="profile")
            await values_gate(
                self._seam.records, parts.profiles, who, key, "save it into a profile"
            )
        args = SaveArgs(indexed_db=options.indexed_db, full=options.full)

        async def body(s: Session) -> dict[str, Any]:
            result = await s.dispatch("save_site_data", args)
            if profile is not None:
                # The snapshot this save just stored, as it stored it: not read back.
                kept = captured(s.saved or SiteData(), None, parts.clock())
                row = await parts.profiles.write(who, profile, kept)
                await ProfileStates(parts.stores.sessions).judged(row.tenant, row.id, kept)
                result["profile"] = profile_json(row, who, parts.clock())
            return await s.end(result)

        return await self._seam.call(who, key, body, use=True)

    # -- the end ----------------------------------------------------------------------

    async def close(self, who: Principal, key: str, *, autosave: bool = True) -> dict[str, Any]:
        """Close the session's browser; the record, history and snapshot stay. First the
        session saves by itself (SPEC §18: unless ``autosave`` — this call's or the
        session's — is off, or the browser is insecure), guarded: a site signed in at the
        last save and not now keeps that save's data. A save the browser could not answer
        is reported and the browser closes; ``sign_in`` is then what a reopen restores.

        Returns:
            ``{key, closed, autosave?}``: whether a browser was recorded for it, and the
            automatic save's result when it saved (``{reason: "close", saved, uri,
            guarded, signed_out}``) or failed (``{reason, error}``).

        Raises:
            StoreUnavailable: the automatic save could not be stored; the browser stays.
        """

        async def body(s: Session) -> dict[str, Any]:
            s.require()
            saved = await save_or_report(s, "close") if autosave else None
            record, s.browser = s.require(), None  # it goes: nothing looks at it again

            async def work() -> Done:
                if record.browser is not None:
                    await self._seam.browsers.release(record.browser, "closed")
                return Done(refs="invalidated")

            await run_operation(s, "close_browser", {}, work)
            self._parts.autosaves.forget(who.tenant, key)
            closed = await self._seam.records.without_browser(record)
            await self._seam.records.put(replace(closed, last_used_at=self._parts.clock()))
            result: dict[str, Any] = {"key": key, "closed": record.browser is not None}
            if saved is not None:
                result["autosave"] = saved
            return well_formed((await self._seam.records.masker(who.tenant, record)).value(result))

        return await self._seam.call(who, key, body, inspect=False)

    async def delete(self, who: Principal, key: str) -> dict[str, Any]:
        """Delete the session and everything keyed to it — its snapshot, its journal
        (SPEC §8); its browser closes.

        Returns:
            ``{key, deleted: true}``.
        """
        seam = self._seam

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()
            if record.browser is not None:
                await seam.browsers.release(record.browser, "closed")
            self._parts.autosaves.forget(who.tenant, key)
            await seam.records.delete(who.tenant, key)
            s.track.broken = True  # not kept: the journal is gone
            await seam.remove_journal(who.tenant, key)
            return {"key": key, "deleted": True}

        return await seam.call(who, key, body, inspect=False)


def _kind(browser: str | None) -> BrowserKind | None:
    """The browser kind asked for. Raises: InvalidInput (field ``browser``)."""
    if browser is None:
        return None
    for kind in _KINDS:
        if browser == kind:
            return kind
    raise InvalidInput(f"browser must be one of {', '.join(_KINDS)}", field="browser")


def _as_asked(record: SessionRecord, kind: BrowserKind, plan: _Plan) -> SessionRecord:
    """``record`` with the kind, certificate policy, proxy, User-Agent choice and
    profile the open asked for."""
    options = plan.options
    record = replace(record, kind=kind, insecure=options.insecure)
    if plan.route is not None:
        record = replace(record, country=plan.route.country, proxy=plan.route.name)
    if options.keep_user_agent is not None:
        record = replace(record, keep_user_agent=options.keep_user_agent)
    if options.autosave is not None:
        record = replace(record, autosave=options.autosave)
    if plan.profile is not None:
        record = replace(record, profile=plan.profile.row.id)
    return record
