"""The read views of sessions: current page, the list, site data by host (SPEC §5).

Nothing here changes a session or touches its browser's state: a view reads the record
and the snapshot (in one store round trip where it can) and, at most, asks the live
browser where it is. A URL holding a typed secret's value is withheld, and every view
masks the session's values (SPEC §7, §12); only the owner's per-host view shows values.
"""

from __future__ import annotations

from typing import Any

from sitekeep import sitedata
from sitekeep.browser.live import LiveBrowser
from sitekeep.errors import NotFound
from sitekeep.masking import Masker, appears_in
from sitekeep.model import Principal, SessionRecord, SiteData, well_formed
from sitekeep.policy import check_key
from sitekeep.seam import site_data_uri
from sitekeep.service.gates import values_gate
from sitekeep.service.parts import Parts
from sitekeep.signin import sign_in_of

__all__ = ["Views"]


class Views:
    """The read views of the caller's tenant's sessions."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._records = parts.seam.records

    async def current(self, who: Principal, key: str) -> dict[str, Any]:
        """The current page (without touching the browser's state) and a site-data summary.

        Returns:
            ``{key, url | url_withheld, title, browser: {kind, live}, site_data: {saved_at,
            hosts, uri}, autosave, sign_in: {host: {state, evidence, at}}}`` —
            ``autosave``: whether it saves by itself; ``sign_in``: each site's sign-in
            state (SPEC §18, ``signin.sign_in_of``).

        Raises:
            InvalidInput: a malformed key. NotFound: no such session.
        """
        records = self._records
        # The record and the snapshot in one store round trip (the hot read, SPEC §16).
        [(record, snapshot)] = await records.load_with_snapshots(who.tenant, [check_key(key)])
        if record is None:
            raise NotFound("session", key, field="key")
        live = await self._parts.seam.browsers.current(record)
        page = await live.page_info() if live is not None else None
        url = page.url if page else record.url
        withheld = url is not None and await records.holds_secret(who.tenant, record, url)
        hosts = len(sitedata.host_rows(snapshot, record.history)) if snapshot else 0
        view = {
            "key": key,
            **({"url_withheld": True} if withheld else {"url": url}),
            "title": page.title if page else None,
            "browser": {"kind": record.kind, "live": live is not None},
            "site_data": {
                "saved_at": snapshot.saved_at if snapshot else None,
                "hosts": hosts,
                "uri": site_data_uri(key),
            },
            "autosave": record.autosave and not record.insecure,
            "sign_in": sign_in_of(record),
        }
        return well_formed((await records.masker(who.tenant, record)).value(view))

    async def sessions(self, who: Principal) -> list[dict[str, Any]]:
        """The caller's tenant's sessions, most recently used first (``GET /v1/sessions``).
        No browser is touched: ``browser.live`` says a browser is recorded for it.

        Returns:
            ``[{key, owner, url | url_withheld, browser: {kind, live}, created_at,
            last_used_at, sign_in}]``, times in seconds since the epoch; ``sign_in`` as in
            :meth:`current`.
        """
        return [await self._row(who, r) for r in await self._records.of_tenant(who.tenant)]

    async def _row(self, who: Principal, record: SessionRecord) -> dict[str, Any]:
        url = record.url
        # The values the session masks, revealed once for the URL and the sign-in state.
        values = await self._records.mask_values(who.tenant, record) if record.secret_typed else []
        withheld = url is not None and any(appears_in(value, url) for value in values)
        return {
            "key": record.key,
            "owner": record.owner,
            **({"url_withheld": True} if withheld else {"url": url}),
            "browser": {"kind": record.kind, "live": record.browser is not None},
            "created_at": record.created_at,
            "last_used_at": record.last_used_at,
            "sign_in": Masker.of(values).value(sign_in_of(record)),
        }

    async def sign_in(self, who: Principal, key: str) -> dict[str, Any]:
        """Whether each site of the session is signed in (SPEC §18), without touching
        its browser: as the last save, check or close judged it.

        Returns:
            ``{key, autosave, sign_in: {host: {state, evidence, at}}}``.

        Raises:
            InvalidInput: a malformed key. NotFound: no such session.
        """
        record = await self._records.require(who, key)
        view = {
            "key": key,
            "autosave": record.autosave and not record.insecure,
            "sign_in": sign_in_of(record),
        }
        return well_formed((await self._records.masker(who.tenant, record)).value(view))

    async def record(self, who: Principal, key: str) -> SessionRecord:
        """The session record (history included) — the admin surface, not the agent's.

        Raises:
            InvalidInput: a malformed key. NotFound: no such session.
        """
        return await self._records.require(who, key)

    async def live_browser(self, who: Principal, key: str) -> LiveBrowser | None:
        """The session's live browser as it is now (no reopen), or None: for what drives
        it directly — the live view (SPEC §10), tests.

        Raises:
            NotFound: no such session.
        """
        return await self._parts.seam.browsers.current(await self._records.require(who, key))

    async def site_data(self, who: Principal, key: str) -> dict[str, Any]:
        """The snapshot by host, counts only (SPEC §5 resource).

        Returns:
            ``{key, saved_at, hosts: [{site, uri, cookies, shared_cookies, local,
            session}]}``.

        Raises:
            NotFound: no such session.
        """
        record = await self._records.require(who, key)
        snapshot = await self._records.load_snapshot(who.tenant, key) or SiteData()
        masker = await self._records.masker(who.tenant, record, snapshot)
        view: dict[str, Any] = masker.value(
            {  # a host a page named after a typed value (masking)
                "key": key,
                "saved_at": snapshot.saved_at or None,
                "hosts": [
                    {
                        "site": r.site,
                        "uri": f"{site_data_uri(key)}/{r.site}",
                        "cookies": r.cookies,
                        "shared_cookies": r.shared_cookies,
                        "local": r.local,
                        "session": r.session,
                    }
                    for r in sitedata.host_rows(snapshot, record.history)
                ],
            }
        )
        return view

    async def site_data_host(self, who: Principal, key: str, site: str) -> dict[str, Any]:
        """One host of the snapshot in full, httpOnly values shown as ``•••`` — the
        owner's explicit per-host view, the one place values are shown (the owner or an
        admin; who may manage the profile the session was opened from: ``values_gate``).

        Raises:
            NotFound: the session, or nothing saved for ``site``. Forbidden: the gate.
        """
        records = self._records
        record = await values_gate(records, self._parts.profiles, who, key, "see its values")
        snapshot = await records.load_snapshot(who.tenant, key)
        if snapshot is None:
            raise NotFound("site", site, field="site")
        masker = await records.masker(who.tenant, record, snapshot)
        return well_formed(masker.value({"key": key, **sitedata.host_view(snapshot, site)}))
