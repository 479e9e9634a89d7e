"""Pure rules for the site-data snapshot (SPEC §3, §5, §11).

A save is a full snapshot that replaces the last one; the only thing carried over is the
last storage of an origin the save could not read, or did not attempt. The snapshot is
capped in bytes of its stored JSON; sizes are computed once per entry, then the largest
values (caches) are left out first and the origins visited longest ago after them, so a
small sign-in token never goes for a big cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sitekeep.cookies import cookie_host, covers_host
from sitekeep.errors import NotFound, SnapshotTooLarge
from sitekeep.history import host_of, normal_host
from sitekeep.model import (
    SITE_DATA_JSON,
    Cookie,
    HistoryEntry,
    OriginStorage,
    SessionStorage,
    SignIn,
    SiteData,
    Skipped,
    TabStorage,
    json_bytes,
)

__all__ = [
    "BIG_VALUE",
    "HIDDEN",
    "HostRow",
    "compose",
    "forget_host",
    "host_rows",
    "host_view",
    "json_size",
]

HIDDEN = "•••"
"""What an httpOnly cookie's value shows as in the per-host view (SPEC §5)."""


def json_size(value: Any) -> int:
    """Bytes of the stored form of ``value``: compact UTF-8 JSON, lone surrogates escaped
    (:func:`sitekeep.model.json_bytes`), the measure of the snapshot cap."""
    return len(json_bytes(value))


BIG_VALUE = 16 * 1024
"""A storage value of at least this many bytes is a cache, not a sign-in: sign-in state
(session ids, JWTs, a Firebase user record) stays within a few KiB, while a page's caches
run to megabytes. Over the cap, such values are left out, largest first, before any
origin loses its storage (SPEC §3 Size cap)."""


def compose(
    previous: SiteData | None,
    *,
    cookies: Sequence[Cookie],
    read: Mapping[str, Mapping[str, str]],
    session: SessionStorage | None,
    not_read: Mapping[str, str],
    visit_order: Sequence[str],
    saved_at: float,
    cap: int,
    tabs: Sequence[TabStorage] = (),
    user_agent: str | None = None,
    indexed_db: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    indexed_db_failed: Mapping[str, str] | None = None,
    sign_in: Callable[[SiteData], Mapping[str, SignIn]] | None = None,
) -> tuple[SiteData, list[Skipped]]:
    """The new snapshot from what a save read, and what it skipped.

    Args:
        previous: the stored snapshot, or None.
        cookies: the whole jar.
        read: origin → localStorage for every origin read; empty ones are left out.
        session: sessionStorage of the page the browser is on (None when empty).
        not_read: origin → reason for each origin that failed or was not attempted; each
            keeps its storage from ``previous`` (a blip must never sign the agent out).
        visit_order: origins newest first (the history); decides what the cap leaves out.
        saved_at: seconds since the epoch.
        cap: the size cap in bytes of the stored JSON (:func:`json_size`).
        tabs: each other top-level tab's sessionStorage (empty ones are left out).
        user_agent: the User-Agent the browser runs under; None keeps the previous one.
        indexed_db: origin → its databases, when the save carries IndexedDB (None: it
            does not, and no database is kept).
        indexed_db_failed: origin → why its databases could not be read; each keeps its
            databases from ``previous``, named in ``skipped``.
        sign_in: judges each host's sign-in state of the composed snapshot
            (``SiteData.sign_in``, SPEC §18), before the cap: it counts in the cap too.

    Returns:
        The snapshot and the skipped list: ``{site, reason}`` per origin, and
        ``{site, key, bytes, reason}`` per value the cap left out — never a value.

    Raises:
        SnapshotTooLarge: the cookies alone pass the cap.
    """
    skipped = [Skipped(site, reason) for site, reason in not_read.items()]
    databases = dict(indexed_db or {})
    for origin, reason in (indexed_db_failed or {}).items():
        skipped.append(Skipped(origin, reason))
        kept_before = previous.origins.get(origin) if previous is not None else None
        if kept_before is not None and kept_before.indexed_db:
            databases[origin] = kept_before.indexed_db
    origins: dict[str, OriginStorage] = {}
    for origin in [*read, *(o for o in databases if o not in read)]:
        local, dbs = read.get(origin) or {}, tuple(databases.get(origin) or ())
        if local or dbs:
            origins[origin] = OriginStorage(dict(local), dbs)
    if previous is not None:
        for origin in not_read:
            kept = previous.origins.get(origin)
            if kept is not None and origin not in origins:
                origins[origin] = kept
    snapshot = SiteData(
        cookies=tuple(cookies),
        origins=origins,
        session=session if session and session.items else None,
        saved_at=saved_at,
        tabs=tuple(t for t in tabs if t.items),
        user_agent=user_agent or (previous.user_agent if previous else None),
        mask=previous.mask if previous else (),  # kept to the save (``masking.carried``)
    )
    if sign_in is not None:
        snapshot = replace(snapshot, sign_in=dict(sign_in(snapshot)))
    capped, left_out = _fit(snapshot, visit_order, cap)
    skipped.extend(left_out)
    return capped, skipped


def _cap_reason(cap: int) -> str:
    return f"left out: the snapshot passed its {cap}-byte cap"


def _fit(
    snapshot: SiteData, visit_order: Sequence[str], cap: int
) -> tuple[SiteData, list[Skipped]]:
    """Fit the stored JSON within ``cap``: first leave out values of at least
    :data:`BIG_VALUE` bytes, largest first; then the storage of the origins visited
    longest ago; the main tab's sessionStorage last. Sizes are measured once per entry;
    the snapshot is serialised at most three times, never per eviction."""
    dumped = SITE_DATA_JSON.dump_python(snapshot)
    base = json_size({**dumped, "origins": {}, "session": None, "tabs": []})
    if base > cap:
        raise SnapshotTooLarge(size=base, cap=cap)
    total = json_size(dumped)
    if total <= cap:
        return snapshot, []
    snapshot, dropped = _drop_big_values(snapshot, total, cap)
    if dropped:
        dumped = SITE_DATA_JSON.dump_python(snapshot)
        if json_size(dumped) <= cap:
            return snapshot, dropped
    snapshot, gone = _drop_old_origins(snapshot, dumped, base, visit_order, cap)
    return snapshot, dropped + [Skipped(o, _cap_reason(cap)) for o in gone]


def _drop_big_values(snapshot: SiteData, total: int, cap: int) -> tuple[SiteData, list[Skipped]]:
    """Leave out values of at least :data:`BIG_VALUE` bytes, largest first, until the
    estimate (each entry's bytes and its comma) fits."""
    big: list[tuple[int, int, str, str, str]] = []  # (-bytes, entry bytes, where, site, key)
    stores: list[tuple[str, str, Mapping[str, str]]] = [
        ("local", o, s.local) for o, s in snapshot.origins.items()
    ]
    if snapshot.session is not None:
        stores.append(("session", snapshot.session.origin, snapshot.session.items))
    stores.extend((f"tab{i}", t.origin, t.items) for i, t in enumerate(snapshot.tabs))
    for where, site, items in stores:
        for key, value in items.items():
            size = json_size(value)
            if size >= BIG_VALUE:
                big.append((-size, json_size(key) + 1 + size + 1, where, site, key))
    if not big:
        return snapshot, []
    big.sort()
    gone: dict[tuple[str, str], set[str]] = {}
    dropped: list[Skipped] = []
    reason = f"{_cap_reason(cap)}: its largest values go first"
    for neg_size, entry, where, site, key in big:
        if total <= cap:
            break
        total -= entry
        gone.setdefault((where, site), set()).add(key)
        dropped.append(Skipped(site, reason, key=key, bytes=-neg_size))
    origins = {}
    for origin, storage in snapshot.origins.items():
        keys = gone.get(("local", origin), set())
        local = {k: v for k, v in storage.local.items() if k not in keys}
        if local or storage.indexed_db:
            origins[origin] = replace(storage, local=local) if keys else storage
    session = snapshot.session
    if session is not None and ("session", session.origin) in gone:
        keys = gone[("session", session.origin)]
        items = {k: v for k, v in session.items.items() if k not in keys}
        session = SessionStorage(session.origin, items) if items else None
    tabs = []
    for i, tab in enumerate(snapshot.tabs):
        keys = gone.get((f"tab{i}", tab.origin), set())
        items = {k: v for k, v in tab.items.items() if k not in keys}
        if items:
            tabs.append(replace(tab, items=items) if keys else tab)
    return replace(snapshot, origins=origins, session=session, tabs=tuple(tabs)), dropped


def _drop_old_origins(
    snapshot: SiteData,
    dumped: Mapping[str, Any],
    base: int,
    visit_order: Sequence[str],
    cap: int,
) -> tuple[SiteData, list[str]]:
    """Leave out the storage of the origins visited longest ago until the JSON fits."""
    sizes = {o: json_size({o: v}) - 2 for o, v in dumped["origins"].items()}  # "o":{...}
    session_size = json_size(dumped["session"]) - json_size(None) if snapshot.session else 0
    tab_sizes = [json_size(t) for t in dumped["tabs"]]
    kept = len(sizes)
    entries = sum(sizes.values())
    tabs_size = sum(tab_sizes) + max(len(tab_sizes) - 1, 0)

    def total() -> int:  # the commas between the kept origins count too
        return base + entries + max(kept - 1, 0) + session_size + tabs_size

    rank = {o: i for i, o in enumerate(visit_order)}
    # Oldest first: origins not in the history at all, then the history from its tail.
    order = sorted(sizes, key=lambda o: (-rank.get(o, len(rank)), o))
    left_out: list[str] = []
    for origin in order:
        if total() <= cap:
            break
        entries -= sizes[origin]
        kept -= 1
        left_out.append(origin)
    origins = {o: s for o, s in snapshot.origins.items() if o not in left_out}
    tabs = snapshot.tabs
    if total() > cap and tabs:  # other tabs go before the main tab's sessionStorage
        left_out.extend(t.origin for t in tabs)
        tabs_size, tabs = 0, ()
    session = snapshot.session
    if total() > cap and session is not None:
        left_out.append(session.origin)
        session = None
    return replace(snapshot, origins=origins, session=session, tabs=tabs), left_out


@dataclass(frozen=True, slots=True)
class HostRow:
    """One host of a snapshot, counts only (SPEC §5 resource; §11 Site data row head)."""

    site: str
    cookies: int
    shared_cookies: int
    local: int
    session: int


def _hosts(snapshot: SiteData) -> set[str]:
    hosts = {host_of(o) for o in snapshot.origins}
    hosts.update(cookie_host(c) for c in snapshot.cookies if not c.domain.startswith("."))
    if snapshot.session is not None:
        hosts.add(host_of(snapshot.session.origin))
    # Most specific domains first, so the result does not depend on the jar's order.
    shared = sorted(
        (c for c in snapshot.cookies if c.domain.startswith(".")),
        key=lambda c: -c.domain.count("."),
    )
    for c in shared:
        if not any(covers_host(c, h) for h in hosts):
            hosts.add(cookie_host(c))
    return hosts


def host_rows(snapshot: SiteData, history: Sequence[HistoryEntry]) -> list[HostRow]:
    """One row per host the snapshot holds data for: history hosts first (most recent
    first), then the rest alphabetically. A parent-domain cookie counts as shared under
    every host it covers and as its own only under its bare domain (SPEC §11)."""
    hosts = _hosts(snapshot)
    seen: list[str] = []
    for entry in history:
        host = host_of(entry.origin)
        if host in hosts and host not in seen:
            seen.append(host)
    ordered = seen + sorted(hosts - set(seen))
    return [_row(snapshot, host) for host in ordered]


def _row(snapshot: SiteData, host: str) -> HostRow:
    own = [c for c in snapshot.cookies if cookie_host(c) == host]
    shared = [c for c in snapshot.cookies if c not in own and covers_host(c, host)]
    local = sum(len(s.local) for o, s in snapshot.origins.items() if host_of(o) == host)
    session = snapshot.session
    session_count = len(session.items) if session and host_of(session.origin) == host else 0
    return HostRow(host, len(own), len(shared), local, session_count)


def host_view(snapshot: SiteData, host: str) -> dict[str, Any]:
    """One host in full, httpOnly values shown as ``•••`` (the owner's per-host view).

    Raises:
        NotFound: the snapshot holds nothing for ``host`` (field ``site``, the argument
            that names a host in every route and resource that shows one).
    """
    host = normal_host(host)
    if host not in _hosts(snapshot):
        raise NotFound("site", host, field="site")
    cookies = [
        {
            "name": c.name,
            "value": HIDDEN if c.http_only else c.value,
            "domain": c.domain,
            "path": c.path,
            "http_only": c.http_only,
            "secure": c.secure,
            "same_site": c.same_site,
            "expiry": c.expiry,
            "shared": cookie_host(c) != host,
        }
        for c in snapshot.cookies
        if cookie_host(c) == host or covers_host(c, host)
    ]
    local = {o: dict(s.local) for o, s in snapshot.origins.items() if host_of(o) == host}
    session = snapshot.session
    return {
        "site": host,
        "cookies": cookies,
        "local_storage": local,
        "session_storage": (
            {session.origin: dict(session.items)}
            if session and host_of(session.origin) == host
            else {}
        ),
        "saved_at": snapshot.saved_at,
    }


def forget_host(snapshot: SiteData, host: str) -> SiteData:
    """The snapshot without ``host``'s storage and its own cookies (``host`` or ``.host``).

    Cookies of a parent domain stay: they belong to no single host (SPEC §11 Forget).
    ``host`` in any spelling (:func:`~sitekeep.history.normal_host`).
    """
    host = normal_host(host)
    return replace(
        snapshot,
        cookies=tuple(c for c in snapshot.cookies if cookie_host(c) != host),
        origins={o: s for o, s in snapshot.origins.items() if host_of(o) != host},
        session=(
            None
            if snapshot.session and host_of(snapshot.session.origin) == host
            else snapshot.session
        ),
        tabs=tuple(t for t in snapshot.tabs if host_of(t.origin) != host),
    )
