"""The profile use cases (SPEC §9): create, list, read, change, delete, capture.

Every one passes the one gate (``sitekeep.profiles.gate``, in ``GatedProfiles``), for
every facade. A profile answers as ``profiles.profile_json``: metadata, its freshness and
``can_manage`` — never its site data (only the storage-state export carries it,
``service.interop``, and only to those who may manage the profile).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitekeep import sitedata
from sitekeep.args import CaptureBody, CreateBody
from sitekeep.cookies import cookie_host
from sitekeep.masking import Masker
from sitekeep.model import Principal
from sitekeep.profiles import captured, landing, profile_json
from sitekeep.seam import Session, run_operation
from sitekeep.seam.operations import Done
from sitekeep.service.gates import values_gate
from sitekeep.service.parts import Parts
from sitekeep.service.profile_state import ProfileStates
from sitekeep.stores.base import ProfileRow

__all__ = ["Profiles"]


class Profiles:
    """The profile use cases, each behind the profiles' gate (SPEC §9)."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._gated = parts.profiles
        self._states = ProfileStates(parts.stores.sessions)

    def _json(self, row: ProfileRow, who: Principal) -> dict[str, Any]:
        return profile_json(row, who, self._parts.clock())

    async def create(self, who: Principal, body: CreateBody) -> dict[str, Any]:
        """A new, empty profile created by ``who`` (``profiles.profile_json``).

        Raises:
            InvalidInput: a bad name, visibility or country; nothing stored.
        """
        row = await self._gated.create(
            who, body.name, visibility=body.visibility, country=body.country
        )
        return self._json(row, who)

    async def list(self, who: Principal) -> dict[str, Any]:
        """``{now, profiles: [...]}``: ``who``'s own and the workspace's shared ones, each
        with its ``sign_in`` (``{host: {state, evidence, at}}``, SPEC §18)."""
        rows = await self._gated.list(who)
        states = await self._states.get_many(who.tenant, [r.id for r in rows])
        profiles = [
            {**self._json(r, who), "sign_in": state.sign_in_json()}
            for r, state in zip(rows, states, strict=True)
        ]
        return {"now": self._parts.clock(), "profiles": profiles}

    async def get(self, who: Principal, ident: str) -> dict[str, Any]:
        """One profile and its site data by host: counts and cookie names, never a value
        (SPEC §9: what someone who may only use a shared profile sees), and each site's
        sign-in state (``sign_in``, SPEC §18).

        Raises:
            NotFound, Forbidden: the gate (``read``).
        """
        loaded = await self._gated.load(who, ident, "read")
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
        state = await self._states.get(loaded.row.tenant, loaded.row.id)
        masker = Masker.of(loaded.site_data.mask)  # cookie names too (issue #24)
        shown = masker.value({"sites": sites, "sign_in": state.sign_in_json()})
        return {**self._json(loaded.row, who), **shown}

    async def update(
        self, who: Principal, ident: str, changes: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Change a profile's ``name``, ``visibility`` or ``country``.

        Raises:
            InvalidInput: a bad value. NotFound, Forbidden: the gate (``update``).
        """
        return self._json(await self._gated.update(who, ident, changes), who)

    async def delete(self, who: Principal, ident: str) -> dict[str, Any]:
        """Delete a profile and its site data (its creator, or an admin when shared).

        Returns:
            ``{id, deleted: true}``.

        Raises:
            NotFound, Forbidden: the gate (``delete``).
        """
        await self._gated.delete(who, ident)
        await self._states.delete(who.tenant, ident)  # its sign-in state and checks go too
        return {"id": ident, "deleted": True}

    async def landing(self, who: Principal, ident: str) -> str | None:
        """Where signing in again from the profile lands (``profiles.landing``).

        Raises:
            NotFound, Forbidden: the gate (``use``).
        """
        return landing((await self._gated.load(who, ident, "use")).site_data)

    async def capture(self, who: Principal, ident: str, body: CaptureBody) -> dict[str, Any]:
        """Capture session ``body.session``'s site data into profile ``ident`` (SPEC §9):
        its unexpired cookies (all, or those ``body.cookies`` names by ``{domain,
        name}``), the localStorage of its origins and its sessionStorage. The session's
        own snapshot is left as it was.

        Returns:
            ``{url, title, profile, captured: {cookies, sites}}``.

        Raises:
            NotFound, Forbidden: the gate (``capture``), or no such session.
            InvalidInput: ``cookies`` — the selection matches no unexpired cookie;
                nothing was written.
        """
        parts, session = self._parts, body.session
        await self._gated.get(who, ident, "capture")
        what = "capture it into a profile"
        await values_gate(parts.seam.records, self._gated, who, session, what, field="session")
        cookies = None if body.cookies is None else [c.model_dump() for c in body.cookies]
        args = {"profile": ident, "cookies": None if cookies is None else len(cookies)}

        async def body_(s: Session) -> dict[str, Any]:
            s.require()

            async def work() -> Done:
                read = await s.reader().read(await s.live(), full=False, indexed_db=False)
                kept = captured(read.snapshot, cookies, parts.clock(), read.page.url)
                row = await self._gated.write(who, ident, kept)
                await self._states.judged(row.tenant, row.id, kept)
                done = {"cookies": len(kept.cookies), "sites": sorted(kept.origins)}
                result = {"profile": self._json(row, who), "captured": done}
                return Done(result, page=read.page, refs="reused")

            done = await run_operation(s, "capture_profile", args, work)
            return await s.end(dict(done.result))

        return await parts.seam.call(who, session, body_, key_field="session")
