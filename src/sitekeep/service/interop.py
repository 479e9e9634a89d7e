"""Portability: sessions' and profiles' site data in and out as files (SPEC §9, §15).

A storage state JSON (Playwright's shape) or a cookies.txt file replaces a session's
snapshot or a profile's site data; either comes back out as one. Values go out only to
who may take them out — a session's owner or an admin, and for a session opened from a
profile only one who may manage it (``gates.values_gate``); a profile's, only to who may
manage it — and never a secret value typed in the session: each stretch of one is
``•••`` (``masking``). The state preview shows what a session holds now, never a value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sitekeep.browser.docs import read_cookies
from sitekeep.errors import InvalidInput
from sitekeep.interop import FORMATS, Format, export_site_data, import_text
from sitekeep.masking import Masker, masked_site_data
from sitekeep.model import Cookie, Principal, SiteData
from sitekeep.profiles import captured, profile_json
from sitekeep.seam import Session
from sitekeep.service.gates import values_gate
from sitekeep.service.parts import Parts
from sitekeep.service.profile_state import ProfileStates
from sitekeep.signin import judge
from sitekeep.state_preview import state_preview

__all__ = ["Interop"]

_MEDIA = {"storage-state": "application/json", "cookies-txt": "text/plain; charset=utf-8"}


class Interop:
    """Import, export and preview of site data (SPEC §9, §15)."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self._records = parts.seam.records

    async def _gate(self, who: Principal, key: str, what: str, *, profile: bool = True) -> Any:
        return await values_gate(
            self._records, self._parts.profiles, who, key, what, profile=profile
        )

    async def state_preview(self, who: Principal, key: str) -> dict[str, Any]:
        """What the session holds now, for choosing what a profile keeps (SPEC §9): per
        domain, cookie names, expiry, flags and the heuristic's ``selected``, and the
        server's ``now`` — never a value. Read from the live browser (``source:
        browser``), else from the saved snapshot (``source: snapshot``).

        Raises:
            NotFound: no such session.
        """
        record = await self._records.require(who, key)
        live = await self._parts.seam.browsers.current(record)
        if live is not None:
            cookies: Sequence[Cookie] = await read_cookies(live)
            source = "browser"
        else:
            snapshot = await self._records.load_snapshot(who.tenant, key)
            cookies, source = (snapshot.cookies if snapshot else ()), "snapshot"
        return {"key": key, "source": source, **state_preview(cookies, self._parts.clock())}

    async def import_session_state(
        self, who: Principal, key: str, data: bytes, fmt: str | None = None, *, strict: bool = False
    ) -> dict[str, Any]:
        """Replace the session's snapshot with a storage state JSON or cookies.txt file
        (SPEC §15); its next new browser restores it (``open_session(fresh=true)``).

        Returns:
            ``{key, report}``.

        Raises:
            InvalidInput: a broken file (the field named); nothing written.
            NotFound: no such session. Forbidden: neither its owner nor an admin, or a
                session opened from a profile the caller may not manage; nothing written.
        """
        imported = import_text(
            _utf8(data), _format(fmt, optional=True), self._parts.clock(), strict=strict
        )

        site_data = imported.site_data
        site_data = replace(site_data, sign_in=judge(site_data, self._parts.clock()))

        async def body(s: Session) -> dict[str, Any]:
            record = await self._gate(who, key, "replace its storage state", profile=False)
            await self._records.put_snapshot(who.tenant, key, site_data)
            if record.browser is None:  # its sign-in state is what a reopen restores
                s.record = replace(record, sign_in=dict(site_data.sign_in))
                await s.put()
            return {"key": key, "report": imported.report.as_json()}

        return await self._parts.seam.call(who, key, body, inspect=False)

    async def export_session_state(
        self, who: Principal, key: str, fmt: str = "storage-state"
    ) -> tuple[bytes, str]:
        """The session's saved snapshot as a file, and its media type (SPEC §15), behind
        :meth:`saved_site_data`'s gate.

        Raises:
            InvalidInput: an unknown ``format``. NotFound: no such session.
            Forbidden: the gate; nothing is exported.
        """
        form = _format(fmt)
        return _exported(await self.saved_site_data(who, key), form)

    async def saved_site_data(self, who: Principal, key: str) -> SiteData:
        """The session's saved snapshot, values and all (empty when none) — for exports:
        only for the session's owner or an admin, and for a session opened from a profile
        only for one who may manage that profile — except the secret values typed in the
        session: an export never carries one, each stretch of one is ``•••``.

        Raises:
            NotFound: no such session. Forbidden: the gate.
        """
        record = await self._gate(who, key, "export its storage state")
        snapshot = await self._records.load_snapshot(who.tenant, key) or SiteData()
        masker = await self._records.masker(who.tenant, record, snapshot)
        return masked_site_data(masker, snapshot)

    async def import_profile_state(
        self,
        who: Principal,
        ident: str,
        data: bytes,
        fmt: str | None = None,
        *,
        strict: bool = False,
    ) -> dict[str, Any]:
        """Replace a profile's site data with a storage state JSON or cookies.txt file
        (SPEC §15), normalised; expired cookies are never kept.

        Returns:
            ``{profile, report}`` — the report of what was changed or dropped, and why.

        Raises:
            InvalidInput: not UTF-8, not the format, a bad field (named); nothing written.
            NotFound, Forbidden: the gate (``capture``).
        """
        profiles, clock = self._parts.profiles, self._parts.clock
        await profiles.get(who, ident, "capture")
        imported = import_text(_utf8(data), _format(fmt, optional=True), clock(), strict=strict)
        kept = captured(imported.site_data, None, clock())
        row = await profiles.write(who, ident, kept)
        await ProfileStates(self._parts.stores.sessions).judged(row.tenant, row.id, kept)
        return {"profile": profile_json(row, who, clock()), "report": imported.report.as_json()}

    async def export_profile_state(
        self, who: Principal, ident: str, fmt: str = "storage-state"
    ) -> tuple[bytes, str]:
        """A profile's site data as a file, and its media type — values, so only for
        those who may manage the profile.

        Raises:
            InvalidInput: an unknown ``format``. NotFound, Forbidden: the gate.
        """
        form = _format(fmt)
        return _exported(await self.profile_site_data(who, ident), form)

    async def profile_site_data(self, who: Principal, ident: str) -> SiteData:
        """A profile's site data, values and all, for exports — only for those who may
        manage it — except the secret values its mask names (``SiteData.mask``): a page
        copied them into the data in the session it came from, and every stretch of one
        is ``•••`` (``masking``; issue #24).

        Raises:
            NotFound, Forbidden: the gate (``capture``).
        """
        data = (await self._parts.profiles.load(who, ident, "capture")).site_data
        return masked_site_data(Masker.of(data.mask), data)


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("the file is not UTF-8 text", field="body") from exc


def _format(fmt: str | None, *, optional: bool = False) -> Format | None:
    if fmt is None and optional:
        return None
    for form in FORMATS:
        if fmt == form:
            return form
    raise InvalidInput(f"format must be {' or '.join(FORMATS)}", field="format")


def _exported(site_data: SiteData, fmt: Format | None) -> tuple[bytes, str]:
    form: Format = fmt or "storage-state"
    return export_site_data(site_data, form).data, _MEDIA[form]
