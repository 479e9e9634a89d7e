"""Per-site sign-in checks of sessions and profiles, and running them (SPEC §18; issue #26).

A check (``args.CheckBody``: ``{url, signed_in: {selector | text}, signed_out?}``) is kept
per host: a session's in its record (``SessionRecord.checks``), a profile's beside the
profile (:class:`ProfileStates`, in the session store: its sign-in state and checks, never
a value). Running them (``POST …/check``) judges every site now: each check in a
background tab of the session's live browser — the user's page untouched — or, for a
profile or a session without a live browser, in a throwaway browser the data is restored
into; the heuristic for the rest (``sitekeep.signin``).
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

from sitekeep.args import CheckBody
from sitekeep.errors import InvalidInput, NotFound
from sitekeep.model import Principal, SessionRecord, SignIn, SignInCheck, SignInProbe
from sitekeep.policy import check_url
from sitekeep.seam import Session, run_operation
from sitekeep.seam.operations import Done
from sitekeep.seam.signins import in_throwaway, judge_now
from sitekeep.service.parts import Parts
from sitekeep.service.profile_state import ProfileStates
from sitekeep.signin import MAX_CHECKS, check_host, check_url_host, sign_in_of

__all__ = ["Checks", "check_json"]


def check_json(check: SignInCheck) -> dict[str, Any]:
    """A check as every facade shows it: ``{url, signed_in, signed_out}``."""

    def probe(p: SignInProbe | None) -> dict[str, str] | None:
        if p is None:
            return None
        return {"selector": p.selector} if p.selector is not None else {"text": p.text or ""}

    return {
        "url": check.url,
        "signed_in": probe(check.signed_in),
        "signed_out": probe(check.signed_out),
    }


class Checks:
    """Define, read, remove and run the sign-in checks of sessions and profiles."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._seam = parts.seam
        self.profile_states = ProfileStates(parts.stores.sessions)

    def _checked(self, host: str, body: CheckBody) -> tuple[str, SignInCheck]:
        """The host and check as given, checked.

        Raises:
            InvalidInput: ``host`` not a host name; ``url`` refused to agents or not on
                ``host``. OwnAddress: ``url`` reaches sitekeep itself.
        """
        host = check_host(host)
        parts = self._parts
        url = check_url(body.url, own=parts.browsers.own_address, own_origins=parts.own_origins())
        if url == "about:blank":
            raise InvalidInput(f"a check of {host} loads a page of {host}", field="url")

        def probe(given: Any) -> SignInProbe:
            return SignInProbe(selector=given.selector, text=given.text)

        check = SignInCheck(
            url,
            probe(body.signed_in),
            probe(body.signed_out) if body.signed_out is not None else None,
        )
        check_url_host(check, host)
        return host, check

    # -- sessions ----------------------------------------------------------------------

    async def session_checks(self, who: Principal, key: str) -> dict[str, Any]:
        """``{key, checks: {host: check}}``. Raises: NotFound (``key``)."""
        record = await self._seam.records.require(who, key)
        return {"key": key, "checks": {h: check_json(c) for h, c in sorted(record.checks.items())}}

    async def session_check(self, who: Principal, key: str, host: str) -> dict[str, Any]:
        """``{key, host, check}``. Raises: NotFound (``key``, or ``host``: no check)."""
        record = await self._seam.records.require(who, key)
        found = record.checks.get(host.lower())
        if found is None:
            raise NotFound("check", host, field="host")
        return {"key": key, "host": host.lower(), "check": check_json(found)}

    async def put_session_check(
        self, who: Principal, key: str, host: str, body: CheckBody
    ) -> dict[str, Any]:
        """Define (or replace) the session's check of ``host``; it runs with every save
        and ``POST …/check``.

        Returns:
            ``{key, host, check}``.

        Raises:
            InvalidInput: ``host``, ``url`` (see :meth:`_checked`), or ``host`` — the
                session holds :data:`~sitekeep.signin.MAX_CHECKS` checks already;
                nothing changed. NotFound: no such session.
        """
        host, check = self._checked(host, body)

        async def change(s: Session) -> dict[str, Any]:
            record = s.require()
            if host not in record.checks and len(record.checks) >= MAX_CHECKS:
                raise InvalidInput(f"a session holds at most {MAX_CHECKS} checks", field="host")
            s.record = replace(record, checks={**record.checks, host: check})
            await s.put()
            return {"key": key, "host": host, "check": check_json(check)}

        return await self._seam.call(who, key, change, inspect=False)

    async def delete_session_check(self, who: Principal, key: str, host: str) -> dict[str, Any]:
        """Remove the session's check of ``host`` (its last state stays until judged
        again). Returns ``{key, host, deleted: true}``. Raises: NotFound."""
        host = host.lower()

        async def change(s: Session) -> dict[str, Any]:
            record = s.require()
            if host not in record.checks:
                raise NotFound("check", host, field="host")
            checks = {h: c for h, c in record.checks.items() if h != host}
            s.record = replace(record, checks=checks)
            await s.put()
            return {"key": key, "host": host, "deleted": True}

        return await self._seam.call(who, key, change, inspect=False)

    async def run_session(self, who: Principal, key: str) -> dict[str, Any]:
        """Judge every site of the session now (journaled as ``check_sign_in``): its
        checks in background tabs of its live browser and the heuristic over that
        browser's jar and landing; without a live browser, in a throwaway one its snapshot
        is restored into (what a reopen would bring back). Nothing is saved, the page and
        the history are untouched, and it counts as no use of the session.

        Returns:
            ``{key, sign_in: {host: {state, evidence, at}}}``.

        Raises:
            NotFound: no such session. CapacityExceeded: a throwaway browser was needed
            and a cap is reached. BrowserUnavailable.
        """

        async def body(s: Session) -> dict[str, Any]:
            record = s.require()

            async def work() -> Done:
                return Done({"sign_in": await self._judge_session(s, record)}, refs="reused")

            done = await run_operation(s, "check_sign_in", {"checks": len(record.checks)}, work)
            s.record = replace(s.require(), sign_in=done.result["sign_in"])
            await s.put()
            masker = await s.parts.records.masker(who.tenant, s.require())
            shown: dict[str, Any] = masker.value({"key": key, "sign_in": sign_in_of(s.require())})
            return shown

        return await self._seam.call(who, key, body)

    async def _judge_session(self, s: Session, record: SessionRecord) -> dict[str, SignIn]:
        now = self._parts.clock()
        browsers = s.parts.browsers
        live = await browsers.attach(record.browser) if record.browser is not None else None
        if live is not None:
            s.browser = live
            return await judge_now(live, record.checks, record.sign_in, now)
        snapshot = await s.parts.records.load_snapshot(record.tenant, record.key)
        return await in_throwaway(browsers, record, snapshot, record.checks, now)

    # -- profiles ----------------------------------------------------------------------

    async def profile_checks(self, who: Principal, ident: str) -> dict[str, Any]:
        """``{id, checks: {host: check}}``. Raises: NotFound, Forbidden (``read``)."""
        row = await self._parts.profiles.get(who, ident, "read")
        state = await self.profile_states.get(row.tenant, row.id)
        return {"id": row.id, "checks": {h: check_json(c) for h, c in sorted(state.checks.items())}}

    async def profile_check(self, who: Principal, ident: str, host: str) -> dict[str, Any]:
        """``{id, host, check}``. Raises: NotFound (the profile, or ``host``), Forbidden."""
        row = await self._parts.profiles.get(who, ident, "read")
        found = (await self.profile_states.get(row.tenant, row.id)).checks.get(host.lower())
        if found is None:
            raise NotFound("check", host, field="host")
        return {"id": row.id, "host": host.lower(), "check": check_json(found)}

    async def put_profile_check(
        self, who: Principal, ident: str, host: str, body: CheckBody
    ) -> dict[str, Any]:
        """Define (or replace) the profile's check of ``host`` (who may manage it).

        Returns:
            ``{id, host, check}``.

        Raises:
            InvalidInput: as for a session's; nothing changed. NotFound, Forbidden: the
            profile's gate (``update``).
        """
        row = await self._parts.profiles.get(who, ident, "update")
        host, check = self._checked(host, body)
        state = await self.profile_states.get(row.tenant, row.id)
        if host not in state.checks and len(state.checks) >= MAX_CHECKS:
            raise InvalidInput(f"a profile holds at most {MAX_CHECKS} checks", field="host")
        checks = {**state.checks, host: check}
        await self.profile_states.put(row.tenant, row.id, replace(state, checks=checks))
        return {"id": row.id, "host": host, "check": check_json(check)}

    async def delete_profile_check(self, who: Principal, ident: str, host: str) -> dict[str, Any]:
        """Remove the profile's check of ``host``. Returns ``{id, host, deleted: true}``.

        Raises:
            NotFound: the profile, or no check of ``host``. Forbidden: the gate.
        """
        row = await self._parts.profiles.get(who, ident, "update")
        host = host.lower()
        state = await self.profile_states.get(row.tenant, row.id)
        if host not in state.checks:
            raise NotFound("check", host, field="host")
        checks = {h: c for h, c in state.checks.items() if h != host}
        await self.profile_states.put(row.tenant, row.id, replace(state, checks=checks))
        return {"id": row.id, "host": host, "deleted": True}

    async def run_profile(self, who: Principal, ident: str) -> dict[str, Any]:
        """Judge every site of the profile now, in a throwaway browser its site data is
        restored into (through its country's proxy), ended after.

        Returns:
            ``{id, sign_in: {host: {state, evidence, at}}}``.

        Raises:
            NotFound, Forbidden: the gate (``use``). CapacityExceeded, BrowserUnavailable.
        """
        parts = self._parts
        loaded = await parts.profiles.load(who, ident, "use")
        row, now = loaded.row, parts.clock()
        state = await self.profile_states.get(row.tenant, row.id)
        record = SessionRecord(
            tenant=row.tenant,
            key=f"~check.{secrets.token_hex(6)}",  # no session key has a "~"
            owner=who.subject,
            kind=parts.settings.browser,
            created_at=now,
            last_used_at=now,
        )
        if row.country is not None:
            route = await parts.proxies.choose(row.tenant, row.country)
            record = replace(record, country=route.country, proxy=route.name)
        # Held like a session's lock: the reaper leaves the throwaway browser alone.
        async with parts.seam.records.held(row.tenant, record.key):
            browsers = parts.seam.browsers
            states = await in_throwaway(browsers, record, loaded.site_data, state.checks, now)
        state = replace(await self.profile_states.get(row.tenant, row.id), sign_in=states)
        await self.profile_states.put(row.tenant, row.id, state)
        return {"id": row.id, "sign_in": state.sign_in_json()}
