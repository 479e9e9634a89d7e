"""Whether each site is signed in, and the sign-out guard: pure rules (SPEC §18; issue #26).

A site's state is ``signed_in``, ``signed_out`` or ``unknown``, with its evidence and when it
was known (:class:`~sitekeep.model.SignIn`). Two sources:

- a **check** a person or agent defined for the host (:class:`~sitekeep.model.SignInCheck`),
  run in a background tab: its :class:`CheckOutcome` is judged by :func:`from_check`;
- without one, the **heuristic** (:func:`heuristic`): the main tab's landing on that host
  — a 401, a sign-in page (a path such as ``/login``; a visible password field where no
  sign-in cookie is held) — says signed out; else an unexpired cookie that carries a
  sign-in (the auth-cookie heuristic of SPEC §9, ``auth_cookies``; a CSRF cookie alone
  carries none) says signed in; else nothing is known.

**The sign-out guard** (:func:`guard`): an automatic save keeps, per host, the previous
snapshot's data of a site that was signed in then and is not now; an explicit save
replaces and names such sites (:func:`turned_out`).

Evidence holds facts — cookie *names*, a page's path, a status, which marker a check found
— and a one-line ``summary`` for people; never a value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from sitekeep.auth_cookies import is_auth_cookie
from sitekeep.cookies import cookie_host, cookie_key, covers_host, is_unexpired
from sitekeep.errors import InvalidInput
from sitekeep.history import host_of, origin_of, trim_url
from sitekeep.masking import carried
from sitekeep.model import Cookie, SessionRecord, SignIn, SignInCheck, SiteData
from sitekeep.sitedata import forget_host, host_rows

__all__ = [
    "MAX_CHECKS",
    "CheckOutcome",
    "Landing",
    "bears_sign_in",
    "check_host",
    "check_url_host",
    "from_check",
    "guard",
    "heuristic",
    "is_sign_in_path",
    "judge",
    "keep_host",
    "sign_in_of",
    "states_json",
    "turned_out",
]

MAX_CHECKS = 16
"""The most checks one session or profile holds (each is a page load when it runs)."""

_SIGN_IN_SEGMENTS = frozenset(
    {"login", "log-in", "log_in", "signin", "sign-in", "sign_in", "logon", "signon"}
)
"""Path segments of a sign-in page: ``/login``, ``/users/sign_in``, ``/account/signin``."""

_CSRF_ONLY = re.compile(r"csrf|xsrf", re.IGNORECASE)
"""A CSRF token is set for signed-out visitors too: alone it carries no sign-in."""

_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


@dataclass(frozen=True, slots=True)
class Landing:
    """Where a tab ended up: its URL, the HTTP status of its document (None when the
    browser does not tell) and whether it shows a password field."""

    url: str
    status: int | None = None
    password_field: bool = False


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """What running a check saw: where its page landed, whether each marker was found
    (None: not asked), or why it could not tell (``error``: a short reason, no value)."""

    landing: Landing | None = None
    signed_in: bool | None = None
    signed_out: bool | None = None
    error: str | None = None


def check_host(host: str, field: str = "host") -> str:
    """A host a check may be defined for: a DNS name or an IPv4 address, lower case.

    Raises:
        InvalidInput: ``field`` — not a host name.
    """
    lowered = host.strip().lower().rstrip(".")
    if len(lowered) > 253 or not _HOST.match(lowered):
        raise InvalidInput("a check's host is a host name such as app.example.org", field=field)
    return lowered


def check_url_host(check: SignInCheck, host: str, field: str = "url") -> None:
    """A check's page must be on its host.

    Raises:
        InvalidInput: ``field`` — the URL is on another host, or has none.
    """
    origin = origin_of(check.url)
    if origin is None or host_of(origin) != host:
        raise InvalidInput(f"a check of {host} loads a page of {host}", field=field)


def is_sign_in_path(url: str) -> bool:
    """Whether ``url``'s path names a sign-in page (``/login``, ``/users/sign_in``…)."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return False
    return any(segment.lower() in _SIGN_IN_SEGMENTS for segment in path.split("/"))


def bears_sign_in(cookie: Cookie) -> bool:
    """Whether ``cookie`` may carry a sign-in: the auth-cookie heuristic selects it (SPEC
    §9) and it is more than a CSRF token."""
    if not is_auth_cookie(cookie.name, http_only=cookie.http_only):
        return False
    return not (_CSRF_ONLY.search(cookie.name) and not cookie.http_only)


def _path(url: str) -> str:
    """A URL's path, as the history keeps it below its top entry (no query, no fragment)."""
    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return "/"


def heuristic(
    host: str, cookies: Iterable[Cookie], now: float, landing: Landing | None = None
) -> SignIn:
    """The heuristic's state of ``host`` (see the module's docstring).

    Args:
        cookies: the jar (every host's: those covering ``host`` count).
        landing: where the main tab is; it counts only when it is on ``host``.
    """
    held = sorted(
        (c for c in cookies if covers_host(c, host) and is_unexpired(c, now) and bears_sign_in(c)),
        key=lambda c: c.name,
    )
    names = list(dict.fromkeys(c.name for c in held))
    on_host = landing is not None and _host_of_url(landing.url) == host
    if on_host and landing is not None:
        path = _path(landing.url)
        if landing.status == 401:
            return _state("signed_out", now, f"HTTP 401 on {path}", status=401, page=path)
        if is_sign_in_path(landing.url) or (landing.password_field and not names):
            summary = f"a sign-in page ({path})"
            return _state(
                "signed_out", now, summary, page=path, password_field=landing.password_field
            )
    if names:
        expiries = [c.expiry for c in held if c.expiry is not None]
        expires = min(expiries) if expiries else None
        summary = f"sign-in cookie{'s' if len(names) > 1 else ''} {', '.join(names)}"
        return _state("signed_in", now, summary, auth_cookies=names, expires=expires)
    return _state("unknown", now, "no sign-in cookie", auth_cookies=[])


def _host_of_url(url: str) -> str | None:
    origin = origin_of(url)
    return host_of(origin) if origin else None


def _state(state: Any, at: float, summary: str, source: str = "heuristic", **facts: Any) -> SignIn:
    return SignIn(state, {"source": source, **facts, "summary": summary}, at)


def from_check(check: SignInCheck, outcome: CheckOutcome, at: float) -> SignIn:
    """The state a check's ``outcome`` shows: the signed-out marker found (or, without
    one, the signed-in marker missing) or a 401 → signed out; the signed-in marker found
    (and not the other) → signed in; both, neither of two markers, or no page → unknown."""
    facts: dict[str, Any] = {"url": trim_url(check.url)}
    if outcome.landing is not None:
        facts["page"] = _path(outcome.landing.url)
        if outcome.landing.status is not None:
            facts["status"] = outcome.landing.status
    if outcome.error is not None or outcome.landing is None:
        why = outcome.error or "the page did not load"
        return _state("unknown", at, f"the check could not tell: {why}", "check", **facts)
    found_in, found_out = bool(outcome.signed_in), bool(outcome.signed_out)
    if outcome.landing.status == 401 and not found_in:
        return _state("signed_out", at, "the check's page answered 401", "check", **facts)
    if found_in and found_out:
        return _state("unknown", at, "the check found both markers", "check", found="both", **facts)
    if found_in:
        return _state(
            "signed_in", at, "the check found the signed-in marker", "check", found="signed_in",
            **facts,
        )  # fmt: skip
    if found_out:
        summary = "the check found the signed-out marker"
        return _state("signed_out", at, summary, "check", found="signed_out", **facts)
    if check.signed_out is not None:
        return _state(
            "unknown", at, "the check found neither marker", "check", found="neither", **facts
        )
    summary = "the check did not find the signed-in marker"
    return _state("signed_out", at, summary, "check", found="neither", **facts)


def judge(
    snapshot: SiteData,
    now: float,
    landing: Landing | None = None,
    checked: Mapping[str, SignIn] | None = None,
    also: Iterable[str] = (),
) -> dict[str, SignIn]:
    """Every host of ``snapshot`` (``sitedata.host_rows``), of ``also`` and every checked
    host, each with its state: the check's where one ran (``checked``), else the
    heuristic's."""
    checked = checked or {}
    hosts = [row.site for row in host_rows(snapshot, ())] + list(also)
    states = {host: heuristic(host, snapshot.cookies, now, landing) for host in hosts}
    states.update(checked)
    return dict(sorted(states.items()))


def _is_signed_in(states: Mapping[str, SignIn], host: str) -> bool:
    found = states.get(host)
    return found is not None and found.state == "signed_in"


def turned_out(before: Mapping[str, SignIn], after: Mapping[str, SignIn]) -> list[str]:
    """The hosts signed in ``before`` and not ``after`` (signed out, unknown, or gone),
    sorted: what an explicit save names in ``signed_out``."""
    return sorted(h for h in before if _is_signed_in(before, h) and not _is_signed_in(after, h))


def guard(previous: SiteData | None, new: SiteData) -> tuple[SiteData, list[dict[str, str]]]:
    """An automatic save's sign-out guard: for each host signed in at ``previous`` and not
    in ``new``, ``new`` with that host's previous data kept (:func:`keep_host`).

    Returns:
        The snapshot to store and ``guarded``: ``[{site, reason}]``, sorted by site.
    """
    if previous is None:
        return new, []
    kept, guarded = new, []
    for host in turned_out(previous.sign_in, new.sign_in):
        now = new.sign_in.get(host)
        why = f"{now.state}: {now.evidence.get('summary', '')}" if now else "its data is gone"
        reason = (
            f"signed in at the last save, {why} now: its data from that save was kept "
            "(save_site_data replaces it)"
        )
        kept = keep_host(kept, previous, host)
        guarded.append({"site": host, "reason": reason})
    return kept, guarded


def keep_host(new: SiteData, previous: SiteData, host: str) -> SiteData:
    """``new`` with ``host``'s data as ``previous`` held it: its storage, its own cookies
    and the parent-domain cookies carrying a sign-in that cover it, its tabs, the main
    tab's sessionStorage when it was on ``host`` (and ``new``'s is not elsewhere), its
    sign-in state; the mask of whatever both hold."""
    kept = forget_host(new, host)
    cookies = [
        c
        for c in previous.cookies
        if cookie_host(c) == host or (covers_host(c, host) and bears_sign_in(c))
    ]
    replaced = {cookie_key(c) for c in cookies}
    session = kept.session
    if session is None and previous.session is not None:
        session = previous.session if host_of(previous.session.origin) == host else None
    origins = {o: s for o, s in previous.origins.items() if host_of(o) == host}
    states = dict(new.sign_in)
    if host in previous.sign_in:
        states[host] = previous.sign_in[host]
    result = replace(
        kept,
        cookies=(*(c for c in kept.cookies if cookie_key(c) not in replaced), *cookies),
        origins={**kept.origins, **origins},
        session=session,
        tabs=(*kept.tabs, *(t for t in previous.tabs if host_of(t.origin) == host)),
        sign_in=dict(sorted(states.items())),
    )
    return replace(result, mask=carried([*new.mask, *previous.mask], result))


def states_json(states: Mapping[str, SignIn], hosts: Sequence[str] = ()) -> dict[str, Any]:
    """``{host: {state, evidence, at}}`` for a view, with each of ``hosts`` not judged
    yet as ``unknown`` (a check defined but not run)."""
    shown = {host: s.as_json() for host, s in states.items()}
    for host in hosts:
        shown.setdefault(
            host,
            {
                "state": "unknown",
                "evidence": {"source": "check", "summary": "the check has not run yet"},
                "at": None,
            },
        )
    return dict(sorted(shown.items()))


def sign_in_of(record: SessionRecord) -> dict[str, Any]:
    """A session's ``sign_in`` as every view shows it: ``{host: {state, evidence, at}}``,
    each site's state as last known — of the live browser while one is live, else of
    what a reopen restores — and each host with a check not run yet as ``unknown``."""
    return states_json(record.sign_in, tuple(record.checks))
