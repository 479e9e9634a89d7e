"""The admin use cases (SPEC §11), grouped behind the service's one admin gate.

What people see and steer: the tenant's sessions with the revisions of their two panes,
each session's History (joined with secrets and snapshot counts), Journal (the timeline)
and Site data (the snapshot by host), Forget and Clear, and the run ledger. Every method
takes the caller's :class:`~sitekeep.model.Principal` and first passes the one admin gate
(``gates.require_admin``); another tenant's session does not exist for it (``NotFound``).
The secrets and tokens are the catalogue's (``service.catalogue``), the UI's sign-ins
``service.signins``'.

Forget and Clear change the stored snapshot only — never the live browser (it keeps what
it has; only the next browser opened comes back without it), never the history. Clear
history never touches site data. Each write runs in the session's seam, so it never
interleaves with a call that is saving or landing; its mark goes into the session's
journal through the seam's operation context.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from sitekeep import history as hist
from sitekeep import sitedata
from sitekeep.errors import InvalidInput, NotFound
from sitekeep.journal import JournalKey
from sitekeep.model import Principal, SessionRecord, SiteData
from sitekeep.seam import Session
from sitekeep.service import panes
from sitekeep.service.gates import require_admin
from sitekeep.service.parts import Parts
from sitekeep.signin import sign_in_of
from sitekeep.stores.base import Run

__all__ = ["Admin"]


class Admin:
    """The admin use cases (SPEC §11), each behind the one admin gate."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._seam = parts.seam
        self._records = parts.seam.records

    @staticmethod
    def _gate(who: Principal, what: str) -> Principal:
        return require_admin(who, what)

    # -- sessions -------------------------------------------------------------------------

    async def sessions(self, who: Principal) -> list[dict[str, Any]]:
        """The tenant's sessions, most recently used first, each with the revisions of
        its two panes (SPEC §11).

        Returns:
            ``[{key, owner, browser, url, created_at, last_used_at, history_count,
            history_rev, site_data_count, site_data_rev, sign_in}]``: ``history_count``
            counts the hosts History lists, ``history_rev`` is every entry's ``[origin,
            url]`` in order, ``site_data_count`` counts the hosts Site data lists,
            ``site_data_rev`` is ``[saved_at, hosts]`` and ``sign_in`` each site's
            sign-in state (``signin.sign_in_of``, SPEC §18).

        Raises:
            Forbidden: a member's token.
        """
        self._gate(who, "the admin sessions list")
        pairs = await self._records.of_tenant_with_snapshots(who.tenant)
        return [self._row(r, s) for r, s in pairs]

    async def session(self, who: Principal, key: str) -> dict[str, Any]:
        """One session's row, as in :meth:`sessions`.

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
        """
        self._gate(who, "an admin session row")
        record = await self._records.require(who, key)
        return self._row(record, await self._records.load_snapshot(record.tenant, record.key))

    @staticmethod
    def _row(record: SessionRecord, snapshot: SiteData | None) -> dict[str, Any]:
        site_rev = panes.site_data_rev(snapshot, record.history)
        return {
            "key": record.key,
            "owner": record.owner,
            "browser": record.kind,
            "url": record.url,
            "created_at": record.created_at,
            "last_used_at": record.last_used_at,
            "history_count": len({hist.host_of(e.origin) for e in record.history}),
            "history_rev": panes.history_rev(record.history),
            "site_data_count": len(site_rev[1]),
            "site_data_rev": site_rev,
            "sign_in": sign_in_of(record),
        }

    # -- History --------------------------------------------------------------------------

    async def history(self, who: Principal, key: str) -> panes.HistoryPane:
        """The History pane: the history joined by host with the secrets allowed there
        and the snapshot's counts (SPEC §11).

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
        """
        self._gate(who, "a session's history")
        record = await self._records.require(who, key)
        snapshot = await self._records.load_snapshot(who.tenant, key)
        catalogue = await self._parts.vault.list(who.tenant)
        return panes.history_pane(record.history, snapshot, catalogue)

    async def clear_history(self, who: Principal, key: str) -> dict[str, Any]:
        """Clear the history but its top entry (another port of the current host goes
        too). Site data and the browser are untouched.

        Returns:
            ``{key, gone: [origins], kept: [origin]}``.

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
        """
        self._gate(who, "clearing a session's history")
        records = self._records

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()
            kept, gone = hist.clear(record.history)
            await s.mark("cleared", "clear_history", detail={"history": len(gone)})
            if gone:
                await records.put(replace(record, history=kept))
            return {
                "key": key,
                "gone": [e.origin for e in gone],
                "kept": [e.origin for e in kept],
            }

        return await self._seam.call(who, key, body, inspect=False)

    # -- Journal --------------------------------------------------------------------------

    async def journal(
        self, who: Principal, key: str, *, after: str | None = None, limit: int = 100
    ) -> dict[str, Any]:
        """The session's journal as a timeline, oldest first (SPEC §8, §11): one row per
        operation — its redacted arguments, outcome, url and duration — and one per mark.

        Args:
            after: the ``next`` cursor of the page before; None from the start.
            limit: rows of records to read, 1–1000.

        Returns:
            ``{key, rows: [{position, at, op, call, step, args, outcome, url?,
            url_withheld?, duration?, refs?, error?} | {position, at, mark, op, detail}],
            next}`` — ``next`` is None at the end.

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
            InvalidInput: ``limit`` outside 1–1000, or an ``after`` no page gave.
        """
        self._gate(who, "a session's journal")
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be from 1 to 1000", field="limit")
        await self._records.require(who, key)
        rows, cursor = await self._parts.journal.timeline(
            JournalKey(who.tenant, key), after=after, limit=limit
        )
        return {"key": key, "rows": rows, "next": cursor}

    # -- Site data ------------------------------------------------------------------------

    async def site_data(
        self, who: Principal, key: str, expand: Collection[str] = (), *, first: bool = False
    ) -> panes.SiteDataPane:
        """The Site data pane: the snapshot by host, no secrets (SPEC §11); the hosts in
        ``expand`` (and the top one when ``first``) come with their per-host view
        (httpOnly values ``•••``, typed secret values too: :meth:`site_data_host`).

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
        """
        self._gate(who, "a session's site data")
        record = await self._records.require(who, key)
        snapshot = await self._records.load_snapshot(who.tenant, key)
        pane = panes.site_data_pane(snapshot, record.history, expand, first=first)
        if not pane.expanded:
            return pane
        masker = await self._records.masker(who.tenant, record, snapshot)
        views = {site: masker.value(dict(view)) for site, view in pane.expanded.items()}
        return replace(pane, expanded=views)

    async def site_data_host(self, who: Principal, key: str, site: str) -> dict[str, Any]:
        """One host of the snapshot in full — the owner's explicit per-host view, httpOnly
        values shown as ``•••``, and so is every stretch of a secret value typed in the
        session that a page copied into a cookie or its storage (``masking``; the admin
        UI's host pane shows this view).

        Returns:
            ``{key, site, cookies: [{name, value, domain, path, http_only, secure,
            same_site, expiry, shared}], local_storage: {origin: {k: v}},
            session_storage: {origin: {k: v}}, saved_at}``.

        Raises:
            Forbidden: a member's token. NotFound: no such session, or nothing saved for
            ``site``.
        """
        self._gate(who, "a session's site data")
        record = await self._records.require(who, key)
        snapshot = await self._records.load_snapshot(who.tenant, key)
        if snapshot is None:
            raise NotFound("site", site, field="site")
        masker = await self._records.masker(who.tenant, record, snapshot)
        return masker.value({"key": key, **sitedata.host_view(snapshot, site)})  # type: ignore[no-any-return]

    async def forget(self, who: Principal, key: str, site: str) -> dict[str, Any]:
        """Forget one host: its storage and its own cookies leave the stored snapshot and
        every version of it (issue #26); cookies of a parent domain stay (they belong to
        no host). ``saved_at`` stays: a Forget is not a save, and keeps no version.

        Returns:
            ``{key, site, gone: {cookies, local, session}, hosts: [the hosts left],
            versions: n}`` — ``gone`` counts the snapshot's (zeros when only versions
            held the host), ``versions`` how many versions held it.

        Raises:
            Forbidden: a member's token. NotFound: no such session, or nothing saved for
            ``site`` in the snapshot nor in any version; nothing changed.
        """
        self._gate(who, "forgetting a host's site data")
        records = self._records
        host = site.lower()

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()
            snapshot = await records.load_snapshot(who.tenant, key) or SiteData()
            rows = {r.site: r for r in sitedata.host_rows(snapshot, ())}
            if host not in rows and not await records.versions.holding(who.tenant, key, host):
                raise NotFound("site", site, field="site")
            await s.mark("forgotten", "forget_site_data", detail={"site": host})
            left = sitedata.forget_host(snapshot, host)
            if host in rows:
                await records.put_snapshot(who.tenant, key, left, keep_version=False)
            versions = await records.versions.forget_host(who.tenant, key, host)
            await records.put(record)  # the record and its snapshot keep one expiry
            gone = rows.get(host) or sitedata.HostRow(host, 0, 0, 0, 0)
            return {
                "key": key,
                "site": host,
                "gone": {"cookies": gone.cookies, "local": gone.local, "session": gone.session},
                "hosts": [r.site for r in sitedata.host_rows(left, record.history)],
                "versions": versions,
            }

        return await self._seam.call(who, key, body, inspect=False)

    async def clear_site_data(self, who: Principal, key: str) -> dict[str, Any]:
        """Delete the session's snapshot and its versions: a browser opened next comes
        back signed out, and no version can sign it back in.

        Returns:
            ``{key, gone: [hosts], versions: n}`` — how many versions went with it.

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
        """
        self._gate(who, "clearing a session's site data")
        records = self._records

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()
            snapshot = await records.load_snapshot(who.tenant, key)
            hosts = (
                [r.site for r in sitedata.host_rows(snapshot, record.history)] if snapshot else []
            )
            await s.mark("forgotten", "clear_site_data", detail={"hosts": len(hosts)})
            versions = await records.delete_snapshot(who.tenant, key)
            return {"key": key, "gone": hosts, "versions": versions}

        return await self._seam.call(who, key, body, inspect=False)

    # -- the run ledger (SPEC §13) -----------------------------------------------------

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
            self._gate(who, "the run ledger")
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be from 1 to 1000", field="limit")
        tenant = who.tenant if who is not None else None
        runs = await self._parts.stores.runs.list(tenant, open_only=open_only, limit=limit)
        return [_run_json(run, addresses) for run in runs]


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
