"""The admin use cases (SPEC §11), grouped behind the service's one admin gate.

What people see and steer: the tenant's sessions with the revisions of their two panes,
each session's History (joined with secrets and snapshot counts) and Site data (the
snapshot by host), Forget and Clear, the secrets catalogue, and the admin UI's sign-ins.
Every method takes the caller's :class:`~sitekeep.model.Principal` and first passes
:meth:`Service.require_admin <sitekeep.service.Service.require_admin>`; another tenant's
session does not exist for it (``NotFound``).

Forget and Clear change the stored snapshot only — never the live browser (it keeps what
it has; only the next browser opened comes back without it), never the history. Clear
history never touches site data. Each write runs in the session's seam, so it never
interleaves with a call that is saving or landing.

A sign-in is the server-side session behind the admin UI's cookie: the cookie holds a
random id, the store keeps only its SHA-256 with the principal and a CSRF token, and the
admin token itself is never kept — only its id, so revoking the token ends the sign-ins
made with it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sitekeep import history as hist
from sitekeep import panes, sitedata
from sitekeep.auth import TokenInfo
from sitekeep.errors import InvalidInput, NotFound
from sitekeep.journal import JournalKey
from sitekeep.model import Principal, SessionRecord, SiteData
from sitekeep.secrets import SecretInfo

if TYPE_CHECKING:
    from sitekeep.seam import Session
    from sitekeep.service import Service

__all__ = ["SIGN_IN_TTL", "Admin", "SignIn", "sign_in_ref"]

SIGN_IN_TTL = 8 * 3600.0
"""How long an admin UI sign-in lasts, in seconds from signing in."""

_SIGN_IN_PREFIX = "admin-sign-in/"


@dataclass(frozen=True, slots=True)
class SignIn:
    """An admin signed in to the UI.

    Attributes:
        principal: who signed in (an admin of one tenant).
        csrf: the token every write from the UI must carry.
        expires_at: seconds since the epoch.
    """

    principal: Principal
    csrf: str
    expires_at: float


def sign_in_ref(sid: str) -> str:
    """A sign-in's reference: the SHA-256 of its id, hex — what the store keys it by, so
    what outlives a request (a live socket) can check the sign-in without its id."""
    return hashlib.sha256(sid.encode()).hexdigest()


def _sign_in_key(sid: str) -> str:
    return _SIGN_IN_PREFIX + sign_in_ref(sid)


class Admin:
    """The admin use cases over one :class:`~sitekeep.service.Service`."""

    def __init__(self, service: Service) -> None:
        self._svc = service

    def _gate(self, who: Principal, what: str) -> Principal:
        return self._svc.require_admin(who, what)

    # -- sessions -------------------------------------------------------------------------

    async def sessions(self, who: Principal) -> list[dict[str, Any]]:
        """The tenant's sessions, most recently used first, each with the revisions of
        its two panes (SPEC §11).

        Returns:
            ``[{key, owner, browser, url, created_at, last_used_at, history_count,
            history_rev, site_data_count, site_data_rev}]``: ``history_count`` counts the
            hosts History lists, ``history_rev`` is every entry's ``[origin, url]`` in
            order, ``site_data_count`` counts the hosts Site data lists and
            ``site_data_rev`` is ``[saved_at, hosts]``.

        Raises:
            Forbidden: a member's token.
        """
        self._gate(who, "the admin sessions list")
        return [self._row(r, s) for r, s in await self._svc.records_with_snapshots(who.tenant)]

    async def session(self, who: Principal, key: str) -> dict[str, Any]:
        """One session's row, as in :meth:`sessions`.

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
        """
        self._gate(who, "an admin session row")
        record = await self._svc._require(who, key)
        return self._row(record, await self._svc._load_snapshot(record.tenant, record.key))

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
        }

    # -- History --------------------------------------------------------------------------

    async def history(self, who: Principal, key: str) -> panes.HistoryPane:
        """The History pane: the history joined by host with the secrets allowed there
        and the snapshot's counts (SPEC §11).

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
        """
        self._gate(who, "a session's history")
        record = await self._svc._require(who, key)
        snapshot = await self._svc._load_snapshot(who.tenant, key)
        catalogue = await self._svc.secrets.list(who.tenant)
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
        svc = self._svc

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()
            kept, gone = hist.clear(record.history)
            await s.mark("cleared", "clear_history", detail={"history": len(gone)})
            if gone:
                await svc._put(replace(record, history=kept))
            return {
                "key": key,
                "gone": [e.origin for e in gone],
                "kept": [e.origin for e in kept],
            }

        return await svc.seam.call(who, key, body, inspect=False)

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
        await self._svc._require(who, key)
        rows, cursor = await self._svc.journal.timeline(
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
        record = await self._svc._require(who, key)
        snapshot = await self._svc._load_snapshot(who.tenant, key)
        pane = panes.site_data_pane(snapshot, record.history, expand, first=first)
        if not pane.expanded:
            return pane
        masker = await self._svc.seam.records.masker(who.tenant, record, snapshot)
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
        record = await self._svc._require(who, key)
        snapshot = await self._svc._load_snapshot(who.tenant, key)
        if snapshot is None:
            raise NotFound("site", site, field="site")
        masker = await self._svc.seam.records.masker(who.tenant, record, snapshot)
        return masker.value({"key": key, **sitedata.host_view(snapshot, site)})  # type: ignore[no-any-return]

    async def forget(self, who: Principal, key: str, site: str) -> dict[str, Any]:
        """Forget one host: its storage and its own cookies leave the stored snapshot;
        cookies of a parent domain stay (they belong to no host). ``saved_at`` stays: a
        Forget is not a save.

        Returns:
            ``{key, site, gone: {cookies, local, session}, hosts: [the hosts left]}``.

        Raises:
            Forbidden: a member's token. NotFound: no such session, or nothing saved for
            ``site``.
        """
        self._gate(who, "forgetting a host's site data")
        svc = self._svc
        host = site.lower()

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()
            snapshot = await svc._load_snapshot(who.tenant, key)
            rows = {r.site: r for r in sitedata.host_rows(snapshot, ())} if snapshot else {}
            if snapshot is None or host not in rows:
                raise NotFound("site", site, field="site")
            await s.mark("forgotten", "forget_site_data", detail={"site": host})
            left = sitedata.forget_host(snapshot, host)
            await svc._put_snapshot(who.tenant, key, left)
            await svc._put(record)  # the record and its snapshot keep one expiry
            gone = rows[host]
            return {
                "key": key,
                "site": host,
                "gone": {"cookies": gone.cookies, "local": gone.local, "session": gone.session},
                "hosts": [r.site for r in sitedata.host_rows(left, record.history)],
            }

        return await svc.seam.call(who, key, body, inspect=False)

    async def clear_site_data(self, who: Principal, key: str) -> dict[str, Any]:
        """Delete the session's snapshot: a browser opened next comes back signed out.

        Returns:
            ``{key, gone: [hosts]}``.

        Raises:
            Forbidden: a member's token. NotFound: no such session in the tenant.
        """
        self._gate(who, "clearing a session's site data")
        svc = self._svc

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()
            snapshot = await svc._load_snapshot(who.tenant, key)
            hosts = (
                [r.site for r in sitedata.host_rows(snapshot, record.history)] if snapshot else []
            )
            await s.mark("forgotten", "clear_site_data", detail={"hosts": len(hosts)})
            await svc._store.delete(svc._snapshot_key(who.tenant, key))
            return {"key": key, "gone": hosts}

        return await svc.seam.call(who, key, body, inspect=False)

    # -- secrets --------------------------------------------------------------------------

    async def secrets(self, who: Principal) -> list[SecretInfo]:
        """The tenant's secrets, sorted by name — never a value."""
        self._gate(who, "managing secrets")
        return await self._svc.secrets.list(who.tenant)

    async def put_secret(
        self,
        who: Principal,
        name: str,
        description: str,
        hosts: Sequence[str],
        values: Mapping[str, str],
    ) -> SecretInfo:
        """Create or replace a secret (SPEC §7): values are written, never shown again.

        Raises:
            Forbidden: a member's token. InvalidInput: naming the field; nothing changed.
        """
        self._gate(who, "managing secrets")
        return await self._svc.secrets.put(who.tenant, name, description, hosts, values)

    async def delete_secret(self, who: Principal, name: str) -> None:
        """Delete a secret.

        Raises:
            Forbidden: a member's token. NotFound: the tenant has none of that name.
        """
        self._gate(who, "managing secrets")
        if not await self._svc.secrets.delete(who.tenant, name):
            raise NotFound("secret", name, field="name")

    # -- tokens ---------------------------------------------------------------------------

    async def tokens(self, who: Principal) -> list[TokenInfo]:
        """The tenant's tokens, oldest first — ids, never a token.

        Raises:
            Forbidden: a member's token.
        """
        self._gate(who, "managing tokens")
        return await self._svc.list_tokens(who.tenant)

    async def revoke_token(self, who: Principal, id_: str) -> TokenInfo:
        """Revoke one of the tenant's tokens; the UI sign-ins made with it end.

        Raises:
            Forbidden: a member's token. InvalidInput: a malformed id (field ``id``).
            NotFound: the tenant has no token of that id.
        """
        self._gate(who, "managing tokens")
        return await self._svc.revoke_token(id_, tenant=who.tenant)

    # -- sign-ins of the admin UI ---------------------------------------------------------

    async def sign_in(self, who: Principal, token: str = "") -> tuple[str, SignIn]:
        """A new sign-in for an admin: a fresh random id (never one a browser offered,
        so a planted id cannot be fixed on a session) and a fresh CSRF token. ``token``
        is the id of the token signed in with (:func:`sitekeep.auth.token_id`), kept so
        that revoking it ends the sign-in.

        Returns:
            ``(sid, sign_in)``: the id goes into the cookie; only its hash is stored.

        Raises:
            Forbidden: a member's token.
        """
        self._gate(who, "the admin UI")
        svc = self._svc
        sid = secrets.token_urlsafe(32)
        signed = SignIn(who, secrets.token_urlsafe(32), svc._clock() + SIGN_IN_TTL)
        record = {
            "tenant": who.tenant,
            "subject": who.subject,
            "role": who.role,
            "csrf": signed.csrf,
            "expires_at": signed.expires_at,
            "token": token,
        }
        await svc._store.set(_sign_in_key(sid), json.dumps(record).encode(), ttl=SIGN_IN_TTL)
        return sid, signed

    async def signed_in(self, sid: str) -> SignIn | None:
        """The live sign-in an id stands for, or None (unknown, expired or malformed)."""
        if not sid or len(sid) > 256:
            return None
        return await self._signed_in_by(sign_in_ref(sid))

    async def _signed_in_by(self, ref: str) -> SignIn | None:
        raw = await self._svc._store.get(_SIGN_IN_PREFIX + ref)
        if raw is None:
            return None
        data = json.loads(raw)
        if data["expires_at"] <= self._svc._clock() or data["role"] != "admin":
            return None
        principal = Principal(data["tenant"], data["subject"], "admin", token=data.get("token", ""))
        return SignIn(principal, data["csrf"], data["expires_at"])

    async def holds(self, ref: str) -> bool:
        """Whether the sign-in of this reference (:func:`sign_in_ref`) is still live: not
        signed out, not ended by revoking its token, not expired. Sign-ins live in the
        session store, so every replica sees the change at once."""
        return await self._signed_in_by(ref) is not None

    async def sign_out(self, sid: str) -> None:
        """End a sign-in (a no-op for an unknown id)."""
        if sid and len(sid) <= 256:
            await self._svc._store.delete(_sign_in_key(sid))

    async def end_sign_ins(self, token: str) -> int:
        """End every sign-in made with the token of this id; how many ended."""
        store = self._svc._store
        ended = []
        for key in await store.keys(_SIGN_IN_PREFIX):
            raw = await store.get(key)
            if raw is not None and json.loads(raw).get("token") == token:
                ended.append(key)
        if ended:
            await store.delete(*ended)
        return len(ended)
