"""Pure views of a session's two admin panes, History and Site data (SPEC §11).

Neither pane stores a row: each is built per request, History from the session's history
joined by host with the tenant's secrets and the snapshot's counts, Site data from the
snapshot alone. The two meet only here, in the view; Forget and Clear of one never change
the other's data.

Each pane carries a **revision** that moves only with its own data, so the admin UI
repaints a pane only for its own changes:

- History: every entry's origin and URL, in order — a new site, a return to an older one
  or a new page on any row moves it; the clock alone moving (a call landing on the page
  it is on) does not.
- Site data: ``[saved_at, hosts]`` — a save moves the time; a Forget or a Clear moves the
  hosts (neither is a save, so neither moves ``saved_at``). The hosts are sorted, so a
  change of the history's order alone does not repaint Site data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sitekeep import sitedata
from sitekeep.history import host_of
from sitekeep.model import HistoryEntry, SiteData
from sitekeep.secrets import SecretInfo, host_allowed

__all__ = [
    "Counts",
    "HistoryPane",
    "HistoryRow",
    "SecretLine",
    "SiteDataPane",
    "SiteRow",
    "ago",
    "history_pane",
    "history_rev",
    "plural",
    "rev_token",
    "site_data_pane",
    "site_data_rev",
]


def plural(n: int, word: str) -> str:
    """``"1 cookie"``, ``"2 cookies"``: a count and its noun (English, regular)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True, slots=True)
class Counts:
    """What the snapshot holds for one host, counts only (never a value).

    Attributes:
        cookies: every cookie listed under the host: its own and the shared ones.
        shared: of those, the parent-domain cookies it shares with other hosts.
        local: localStorage items over the host's origins.
        session: sessionStorage items over the host's origins.
    """

    cookies: int
    shared: int
    local: int
    session: int

    @classmethod
    def of(cls, row: sitedata.HostRow) -> Counts:
        return cls(row.cookies + row.shared_cookies, row.shared_cookies, row.local, row.session)

    def pill(self) -> str:
        """History's pill: zero counts left out (``"2 cookies · 2 local"``)."""
        parts = [
            plural(self.cookies, "cookie") if self.cookies else "",
            f"{self.local} local" if self.local else "",
            f"{self.session} session" if self.session else "",
        ]
        return " · ".join(p for p in parts if p)

    def label(self) -> str:
        """Site data's row head: all three counts (``"2 cookies · 2 local · 0 session"``),
        or the cookies alone for a host with no storage (``"3 cookies"``)."""
        cookies = plural(self.cookies, "cookie")
        if not self.local and not self.session:
            return cookies
        return f"{cookies} · {self.local} local · {self.session} session"

    def as_json(self) -> dict[str, int]:
        return {
            "cookies": self.cookies,
            "shared_cookies": self.shared,
            "local": self.local,
            "session": self.session,
        }


@dataclass(frozen=True, slots=True)
class SecretLine:
    """A secret allowed on a host: name, description and key names — never a value."""

    name: str
    description: str
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One host the session has been to.

    Attributes:
        host: the host name.
        url: the latest URL on that host (whole for the current site, origin and path
            below it: SPEC §4).
        at: when that URL was reached, seconds since the epoch.
        origins: the host's origins in the history, newest first (several ports).
        secrets: the secrets allowed on the host; a row with none has nothing to open.
        saved: the snapshot's counts for the host, None when nothing is saved for it.
    """

    host: str
    url: str
    at: float
    origins: tuple[str, ...]
    secrets: tuple[SecretLine, ...]
    saved: Counts | None

    def meta(self, now: float) -> str:
        """``"1m ago · 1 secret"``: when it was visited and how many secrets apply."""
        n = len(self.secrets)
        return ago(now - self.at) + (f" · {plural(n, 'secret')}" if n else "")

    def as_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "url": self.url,
            "at": self.at,
            "origins": list(self.origins),
            "secrets": [
                {"name": s.name, "description": s.description, "keys": list(s.keys)}
                for s in self.secrets
            ],
            "site_data": self.saved.as_json() if self.saved else None,
        }


@dataclass(frozen=True, slots=True)
class HistoryPane:
    """The History pane: the current site on top, then the rest, most recent first.

    Attributes:
        rows: one per host; ``rows[0]`` is the current site.
        clears: the origins Clear removes: every entry but the top one, another port of
            the current host included (which makes no row of its own).
        goes: the same for people: a host per row that goes, an origin for another port
            of the current host.
        stays: what Clear keeps: the current site (its origin when the host has others).
        rev: :func:`history_rev`.
    """

    rows: tuple[HistoryRow, ...]
    clears: tuple[str, ...]
    goes: tuple[str, ...]
    stays: str | None
    rev: list[list[str]]

    def as_json(self) -> dict[str, Any]:
        return {
            "rows": [r.as_json() for r in self.rows],
            "clears": list(self.clears),
            "goes": list(self.goes),
            "stays": self.stays,
            "history_rev": self.rev,
        }


def history_rev(history: Sequence[HistoryEntry]) -> list[list[str]]:
    """Every entry's origin and URL, in order: the History pane's revision."""
    return [[e.origin, e.url] for e in history]


def history_pane(
    history: Sequence[HistoryEntry],
    snapshot: SiteData | None,
    secrets: Sequence[SecretInfo],
) -> HistoryPane:
    """The History pane (SPEC §11): one row per host, newest first, each joined with the
    secrets allowed on it and the snapshot's counts for it. Secrets never make a row: a
    host the session never landed on is not listed, whatever the secrets say."""
    by_host: dict[str, list[HistoryEntry]] = {}
    for entry in history:
        by_host.setdefault(host_of(entry.origin), []).append(entry)
    saved = {}
    if snapshot is not None:
        saved = {r.site: Counts.of(r) for r in sitedata.host_rows(snapshot, history)}
    rows = tuple(
        HistoryRow(
            host=host,
            url=entries[0].url,
            at=entries[0].at,
            origins=tuple(e.origin for e in entries),
            secrets=tuple(
                SecretLine(s.name, s.description, s.keys)
                for s in secrets
                if host_allowed(host, s.hosts)
            ),
            saved=saved.get(host),
        )
        for host, entries in by_host.items()
    )
    if not rows:
        return HistoryPane((), (), (), None, [])
    current = rows[0]
    goes = dict.fromkeys(
        e.origin if host_of(e.origin) == current.host else host_of(e.origin) for e in history[1:]
    )
    stays = current.host if len(current.origins) == 1 else current.origins[0]
    clears = tuple(e.origin for e in history[1:])
    return HistoryPane(rows, clears, tuple(goes), stays, history_rev(history))


@dataclass(frozen=True, slots=True)
class SiteRow:
    """One host the snapshot holds data for.

    Attributes:
        site: the host name (the key of Forget and of the per-host view).
        label: the row's head: its origin, or the host when it has none or several.
        origins: the origins whose storage the snapshot holds for the host.
        counts: what is saved for it.
    """

    site: str
    label: str
    origins: tuple[str, ...]
    counts: Counts

    def as_json(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "label": self.label,
            "origins": list(self.origins),
            **self.counts.as_json(),
        }


@dataclass(frozen=True, slots=True)
class SiteDataPane:
    """The Site data pane: what a reopened browser gets back, by host.

    Attributes:
        saved_at: when the snapshot was saved (seconds since the epoch), None when there
            is none.
        rows: hosts in the history first, most recent first, then the rest alphabetically.
        rev: :func:`site_data_rev`.
        expanded: the per-host view (``sitedata.host_view``, httpOnly values ``•••``) of
            each row asked to be shown open; never part of :meth:`as_json`.
    """

    saved_at: float | None
    rows: tuple[SiteRow, ...]
    rev: list[Any]
    expanded: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "saved_at": self.saved_at,
            "hosts": [r.as_json() for r in self.rows],
            "site_data_rev": self.rev,
        }


def site_data_rev(snapshot: SiteData | None, history: Sequence[HistoryEntry]) -> list[Any]:
    """``[saved_at, hosts]``, the hosts sorted: the Site data pane's revision."""
    if snapshot is None:
        return [None, []]
    return [snapshot.saved_at, sorted(r.site for r in sitedata.host_rows(snapshot, history))]


def site_data_pane(
    snapshot: SiteData | None,
    history: Sequence[HistoryEntry],
    expand: Collection[str] = (),
    *,
    first: bool = False,
) -> SiteDataPane:
    """The Site data pane (SPEC §11): one row per host the snapshot holds data for, a
    parent-domain cookie counted under every host it covers. No secrets here.

    Args:
        expand: hosts whose rows are shown open: their full views go into ``expanded``
            (hosts the snapshot does not hold are ignored).
        first: open the top row too (a pane's first showing: SPEC §11 folding).
    """
    if snapshot is None:
        return SiteDataPane(None, (), site_data_rev(None, history))
    rows, expanded = [], {}
    for index, row in enumerate(sitedata.host_rows(snapshot, history)):
        view = sitedata.host_view(snapshot, row.site)
        origins = tuple(dict.fromkeys([*view["local_storage"], *view["session_storage"]]))
        label = origins[0] if len(origins) == 1 else row.site
        rows.append(SiteRow(row.site, label, origins, Counts.of(row)))
        if row.site in expand or (first and index == 0):
            expanded[row.site] = view
    rev = site_data_rev(snapshot, history)
    return SiteDataPane(snapshot.saved_at, tuple(rows), rev, expanded)


def rev_token(rev: Any) -> str:
    """A short, stable token of a revision, for a page to compare with what it shows."""
    canonical = json.dumps(rev, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:20]


def ago(seconds: float) -> str:
    """``"just now"``, ``"2m ago"``, ``"3h ago"``, ``"4d ago"`` for an age in seconds."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"
