"""The service's two gates: admin (SPEC §11) and who may take a session's values out.

Every room that needs either calls it from here, so each rule is written once.
"""

from __future__ import annotations

from sitekeep.errors import Forbidden, NotFound
from sitekeep.model import Principal, SessionRecord
from sitekeep.profiles import GatedProfiles
from sitekeep.seam.records import Records

__all__ = ["require_admin", "values_gate"]


def require_admin(who: Principal, what: str) -> Principal:
    """``who`` when its role is admin — the one admin gate (SPEC §11).

    Raises:
        Forbidden: a member's token.
    """
    if who.role != "admin":
        raise Forbidden(f"{what} needs an admin token (sitekeep token create --admin)")
    return who


async def values_gate(
    records: Records,
    profiles: GatedProfiles,
    who: Principal,
    key: str,
    what: str,
    *,
    profile: bool = True,
    field: str = "key",
) -> SessionRecord:
    """The session's record when ``who`` may take its values out (attacker review M2,
    M4): a storage-state export or import, a capture or save into a profile, the browser
    handed over. Only the session's owner or an admin of its tenant may; and a session
    opened from a profile holds that profile's sign-ins, so when it was
    (``record.profile``), only one who may manage that profile (``capture``: see its
    values) may — one who may only *use* a workspace profile never gets its values out
    through a session. A profile deleted since: admins only. ``profile`` False: a write
    that takes no value out (an import) needs the owner or an admin only.

    Raises:
        NotFound: no such session (naming ``field``, the argument that held ``key``).
        Forbidden: none of those; nothing was changed.
    """
    record = await records.require(who, key, field)
    if who.role != "admin" and who.subject != record.owner:
        raise Forbidden(f"only an admin or the session's owner may {what}")
    if profile and record.profile is not None:
        await _may_manage_profile(profiles, who, record.profile, what)
    return record


async def _may_manage_profile(
    profiles: GatedProfiles, who: Principal, ident: str, what: str
) -> None:
    try:
        await profiles.get(who, ident, "capture")
    except NotFound:
        if who.role != "admin":
            raise Forbidden(
                f"the session was opened from a profile: only an admin may {what}"
            ) from None
    except Forbidden:
        raise Forbidden(
            "the session was opened from a profile you may use but not manage: "
            f"only one who may manage it may {what}"
        ) from None
