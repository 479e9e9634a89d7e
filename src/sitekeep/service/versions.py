"""The versions of saved site data (issue #26): list, view, restore — for sessions and
profiles alike.

Every save keeps the snapshot it replaces as a version (``Records.put_snapshot`` for a
session, ``GatedProfiles``' one write for a profile); this room reads them and makes one
current again. A listing and a version's view show hosts, counts and sizes, never a value
(``sitekeep.versions.summary``); values only in the per-host view of one version, for
who may see the values of the snapshot itself (a session's owner or an admin:
``gates.values_gate``; a profile's managers), with the values the session or the data
masks shown ``•••``. A restore replaces the current snapshot — which is itself kept as a
version, so a restore is undone by restoring that one — and never touches a live browser:
it keeps what it has, and the next browser opened restores the version.
"""

from __future__ import annotations

from typing import Any

from sitekeep import sitedata
from sitekeep.args import VersionChoice
from sitekeep.errors import NotFound
from sitekeep.masking import Masker
from sitekeep.model import Principal, SiteData, well_formed
from sitekeep.policy import check_key
from sitekeep.profiles import profile_json
from sitekeep.seam import Session, run_operation
from sitekeep.seam.operations import Done
from sitekeep.service.gates import values_gate
from sitekeep.service.parts import Parts
from sitekeep.versions import check_id, summary

__all__ = ["LIVE_HINT", "Versions"]

LIVE_HINT = (
    "the live browser keeps what it has: open_session(fresh=true) starts one from the "
    "restored version (close it first with autosave=false, or its next save — an "
    "automatic one at a checkpoint or on close included — replaces it)"
)
"""Said by a restore when the session has a live browser."""


def _restored(ident: str, data: SiteData) -> dict[str, Any]:
    return {"id": ident, "saved_at": data.saved_at or None, "hosts": _hosts(data)}


def _hosts(data: SiteData) -> list[str]:
    return [r.site for r in sitedata.host_rows(data, ())]


class Versions:
    """List, view and restore the versions of sessions' and profiles' saved site data."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._records = parts.seam.records
        self._profiles = parts.profiles

    # -- sessions ---------------------------------------------------------------------

    async def of_session(self, who: Principal, key: str) -> dict[str, Any]:
        """The session's versions, newest first, each with its hosts' counts and sizes
        and the sign-in state recorded with it — never a value.

        Returns:
            ``{key, versions: [{id, kept_at, saved_at, bytes, hosts: [{site, cookies,
            shared_cookies, local, session, cookie_bytes, local_bytes, session_bytes}],
            sign_in}]}``.

        Raises:
            InvalidInput: a malformed key. NotFound: no such session.
        """
        record = await self._records.require(who, key)
        found = await self._records.versions.load_all(who.tenant, record.key)
        rows = [summary(i, data, record.history) for i, data in found]
        return well_formed({"key": record.key, "versions": rows})

    async def session_version_ids(self, who: Principal, key: str) -> list[str]:
        """The ids of the session's versions, newest first, without opening one (what a
        page polls to tell that they changed).

        Raises:
            InvalidInput: a malformed key. NotFound: no such session.
        """
        record = await self._records.require(who, key)
        return await self._records.versions.ids(who.tenant, record.key)

    async def session_version(
        self, who: Principal, key: str, choice: VersionChoice
    ) -> dict[str, Any]:
        """One version, as :meth:`of_session` lists it, with the session's ``key``.

        Raises:
            InvalidInput: a malformed key or ``version``. NotFound: no such session, or no
            such version (``version``).
        """
        ident = check_id(choice.version)
        record = await self._records.require(who, key)
        data = await self._session_data(who.tenant, record.key, ident)
        return well_formed({"key": record.key, **summary(ident, data, record.history)})

    async def _session_data(self, tenant: str, key: str, ident: str) -> SiteData:
        data = await self._records.versions.load(tenant, key, ident)
        if data is None:
            raise NotFound("version", ident, field="version")
        return data

    async def session_version_host(
        self, who: Principal, key: str, choice: VersionChoice, site: str
    ) -> dict[str, Any]:
        """One host of one version in full — values, as the snapshot's per-host view
        shows them: httpOnly values ``•••``, and so is every value the session masks.

        Returns:
            ``{key, version, site, cookies, local_storage, session_storage, saved_at}``.

        Raises:
            InvalidInput: a malformed key or ``version``. NotFound: the session, the
            version, or nothing of ``site`` in it. Forbidden: neither its owner nor an
            admin, or a session opened from a profile the caller may not manage.
        """
        ident = check_id(choice.version)
        records = self._records
        record = await values_gate(records, self._profiles, who, key, "see its values")
        data = await self._session_data(who.tenant, record.key, ident)
        masker = await records.masker(who.tenant, record, data)
        view = {"key": record.key, "version": ident, **sitedata.host_view(data, site)}
        return well_formed(masker.value(view))

    async def restore_session_version(
        self, who: Principal, key: str, choice: VersionChoice
    ) -> dict[str, Any]:
        """Make one version the session's snapshot, journaled as the operation
        ``restore_site_data_version``; the snapshot it replaces is kept as a version.
        The live browser, if any, is not touched (``hint`` says so).

        Returns:
            ``{key, restored: {id, saved_at, hosts}, hint?}``.

        Raises:
            InvalidInput: a malformed key or ``version``. NotFound: no such session or
            version. Forbidden: neither its owner nor an admin. Nothing changed on any.
            JournalUnavailable: the begin could not be written; nothing changed.
        """
        ident = check_id(choice.version)
        key = check_key(key)
        records = self._records

        async def body(s: Session) -> dict[str, Any]:
            what = "restore a version of its site data"
            await values_gate(records, self._profiles, who, key, what, profile=False)
            data = await self._session_data(who.tenant, key, ident)
            result: dict[str, Any] = {"key": key, "restored": _restored(ident, data)}

            async def work() -> Done:
                return Done(result, refs="reused", save=data)

            await run_operation(s, "restore_site_data_version", {"version": ident}, work)
            record = s.require()
            await s.put()  # the record and its snapshot and versions keep one expiry
            if record.browser is not None:
                result["hint"] = LIVE_HINT
            return result

        return await self._parts.seam.call(who, key, body, inspect=False)

    # -- profiles ---------------------------------------------------------------------

    async def of_profile(self, who: Principal, ident: str) -> dict[str, Any]:
        """The profile's versions, newest first, as :meth:`of_session` lists a
        session's (anyone who may read the profile).

        Returns:
            ``{profile, versions: [...]}`` (``profile``: its id).

        Raises:
            NotFound, Forbidden: the profile's gate (``read``).
        """
        found = await self._profiles.versions(who, ident)
        return well_formed({"profile": ident, "versions": [summary(i, d) for i, d in found]})

    async def profile_version(
        self, who: Principal, ident: str, choice: VersionChoice
    ) -> dict[str, Any]:
        """One version of the profile's site data, as :meth:`of_profile` lists it, with
        the profile's id in ``profile``.

        Raises:
            InvalidInput: a malformed ``version``. NotFound: the gate, or no such version.
            Forbidden: the gate.
        """
        row, data = await self._profiles.version(who, ident, choice.version)
        return well_formed({"profile": row.id, **summary(choice.version, data)})

    async def profile_version_host(
        self, who: Principal, ident: str, choice: VersionChoice, site: str
    ) -> dict[str, Any]:
        """One host of one version in full, for who may manage the profile (its values),
        httpOnly values and the values the data masks ``•••``.

        Returns:
            ``{profile, version, site, cookies, local_storage, session_storage,
            saved_at}``.

        Raises:
            InvalidInput: a malformed ``version``. NotFound: the gate, the version, or
            nothing of ``site`` in it. Forbidden: the gate (``capture``).
        """
        row, data = await self._profiles.version(who, ident, choice.version, "capture")
        view = {"profile": row.id, "version": choice.version, **sitedata.host_view(data, site)}
        return well_formed(Masker.of(data.mask).value(view))

    async def restore_profile_version(
        self, who: Principal, ident: str, choice: VersionChoice
    ) -> dict[str, Any]:
        """Make one version the profile's site data (who may capture into it); what it
        replaces is kept as a version.

        Returns:
            ``{profile, restored: {id, saved_at, hosts}}``.

        Raises:
            InvalidInput: a malformed ``version``. NotFound: the gate or the version.
            Forbidden: the gate (``capture``). Nothing changed on any.
        """
        row, data = await self._profiles.restore_version(who, ident, choice.version)
        profile = profile_json(row, who, self._parts.clock())
        return {"profile": profile, "restored": _restored(choice.version, data)}
