"""Pure rules for the versions of a snapshot (issue #26): their ids, and what a listing
shows of one — hosts, counts and sizes, never a value.

Every save of a session or profile keeps the snapshot it replaces as a version (the
session's in the session store, :mod:`sitekeep.seam.versions`; a profile's in
``profile_versions``), sealed like the snapshot, the newest ``SITEKEEP_VERSIONS`` of them.
A version's id says when it was kept: ``v`` and 13 digits of milliseconds since the epoch,
then ``-`` and 4 hex digits (two kept in one millisecond differ), so ids sort as the
versions were kept.

Sizes are UTF-8 bytes of what the browser counts against its limits: a cookie's name and
value (RFC 6265bis §5.6: 4096 bytes a cookie), a storage entry's key and value; ``bytes``
is the version's stored JSON (``model.dump_site_data``), the measure of the snapshot cap.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sitekeep.args import VERSION_PATTERN
from sitekeep.cookies import cookie_host, covers_host
from sitekeep.errors import InvalidInput
from sitekeep.history import host_of
from sitekeep.model import HistoryEntry, SiteData, dump_site_data
from sitekeep.sitedata import host_rows

__all__ = [
    "PROFILE_VERSION_KIND",
    "SESSION_VERSION_KIND",
    "HostSize",
    "check_id",
    "host_sizes",
    "kept_at",
    "new_id",
    "recorded_sign_in",
    "summary",
]

SESSION_VERSION_KIND = "site-data-version"
"""The cipher's kind for a session's version, bound to ``"{key}/{id}"`` (SPEC §12)."""
PROFILE_VERSION_KIND = "profile-version"
"""The cipher's kind for a profile's version, bound to ``"{profile id}/{id}"``."""

_ID = re.compile(VERSION_PATTERN)


def new_id(now: float, after: float | None = None) -> str:
    """A new version id for a version kept at ``now`` (seconds since the epoch), or a
    millisecond after ``after`` (when the newest version before it was kept) if ``now``
    is not later: a profile's or session's ids sort as its versions were kept, whatever
    the clock did."""
    ms = round(now * 1000)
    if after is not None:
        ms = max(ms, round(after * 1000) + 1)
    return f"v{ms:013d}-{secrets.token_hex(2)}"


def check_id(value: object, field: str = "version") -> str:
    """``value`` when it is a version id as :func:`new_id` makes them.

    Raises:
        InvalidInput: anything else (``field``); the id is not repeated.
    """
    if isinstance(value, str) and _ID.match(value):
        return value
    raise InvalidInput(
        "a version id is v, 13 digits, - and 4 hex digits (from the versions list)",
        field=field,
    )


def kept_at(ident: str) -> float:
    """When the version ``ident`` (a checked id) was kept, in seconds since the epoch."""
    return int(ident[1:14]) / 1000


@dataclass(frozen=True, slots=True)
class HostSize:
    """One host of a version: the counts of the site-data view (``sitedata.HostRow``) and
    the UTF-8 bytes of its names and values."""

    site: str
    cookies: int
    shared_cookies: int
    local: int
    session: int
    cookie_bytes: int
    local_bytes: int
    session_bytes: int

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))  # a page may store a lone surrogate


def _entries(items: Iterable[Mapping[str, str]]) -> int:
    return sum(_size(k) + _size(v) for store in items for k, v in store.items())


def host_sizes(snapshot: SiteData, history: Sequence[HistoryEntry] = ()) -> list[HostSize]:
    """Each host of ``snapshot`` as the site-data view orders them (``sitedata.host_rows``),
    with the bytes of its own and shared cookies, its localStorage and the main tab's
    sessionStorage."""
    sizes = []
    for row in host_rows(snapshot, history):
        cookies = [
            c for c in snapshot.cookies if cookie_host(c) == row.site or covers_host(c, row.site)
        ]
        local = [s.local for o, s in snapshot.origins.items() if host_of(o) == row.site]
        session = snapshot.session
        here = [session.items] if session and host_of(session.origin) == row.site else []
        sizes.append(
            HostSize(
                row.site,
                row.cookies,
                row.shared_cookies,
                row.local,
                row.session,
                sum(_size(c.name) + _size(c.value) for c in cookies),
                _entries(local),
                _entries(here),
            )
        )
    return sizes


def recorded_sign_in(snapshot: SiteData) -> dict[str, Any]:
    """The per-host sign-in state the snapshot recorded when it was saved
    (``{host: {state, evidence, at}}``, issue #26 item 1), or ``{}`` when it recorded none.

    The one place a version's ``sign_in`` comes from: each save records it on the
    snapshot it judged (``SiteData.sign_in``, SPEC §18); a snapshot saved before that
    was kept records none.
    """
    return {host: state.as_json() for host, state in sorted(snapshot.sign_in.items())}


def summary(ident: str, snapshot: SiteData, history: Sequence[HistoryEntry] = ()) -> dict[str, Any]:
    """A version as every listing shows it — never a value.

    Returns:
        ``{id, kept_at, saved_at, bytes, hosts: [{site, cookies, shared_cookies, local,
        session, cookie_bytes, local_bytes, session_bytes}], sign_in}``; ``saved_at`` is
        when the snapshot was saved (None when never), ``kept_at`` when a save replaced it.
    """
    return {
        "id": ident,
        "kept_at": kept_at(ident),
        "saved_at": snapshot.saved_at or None,
        "bytes": len(dump_site_data(snapshot)),
        "hosts": [h.as_json() for h in host_sizes(snapshot, history)],
        "sign_in": recorded_sign_in(snapshot),
    }
