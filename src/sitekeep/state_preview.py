"""The state preview of a live browser, and the cookie selection a capture takes (SPEC §9).

The preview is what a person sees while signing in for a profile: per domain, each
cookie's name, path, expiry and flags, whether the auth-cookie heuristic selects it by
default (:mod:`sitekeep.auth_cookies`), and the server's ``now`` to judge expiry by —
never a value. Domains are shown without a leading dot (``example.test`` for both a
host-only cookie and a ``.example.test`` domain cookie; ``host_only`` tells them apart),
which is also how a capture names the cookies it keeps: ``[{domain, name}]``.

Expired cookies are listed (a person should see that a sign-in lapsed) but never
selected, and a capture never keeps them: a browser deletes a cookie whose expiry has
passed (RFC 6265bis §5.7, "A cookie is expired…").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

from sitekeep.auth_cookies import Signal, classify
from sitekeep.cookies import cookie_host, is_unexpired
from sitekeep.errors import InvalidInput
from sitekeep.model import Cookie, SameSite

__all__ = [
    "PreviewCookie",
    "PreviewDomain",
    "StatePreview",
    "default_selection",
    "select_cookies",
    "state_preview",
]


class PreviewCookie(TypedDict):
    """One cookie in the preview: names and flags, never the value."""

    name: str
    path: str
    host_only: bool
    expiry: int | None
    """Seconds since the epoch; None for a session cookie."""
    expired: bool
    http_only: bool
    secure: bool
    same_site: SameSite
    partitioned: bool
    selected: bool
    """The heuristic's default; always False for an expired cookie."""
    signal: Signal
    """What decided ``selected`` (``http_only``, ``name``, ``deny_list``…)."""


class PreviewDomain(TypedDict):
    domain: str
    cookies: list[PreviewCookie]


class StatePreview(TypedDict):
    now: float
    """The server's clock, seconds since the epoch: expiry is judged against it."""
    domains: list[PreviewDomain]


def _preview_cookie(cookie: Cookie, now: float) -> PreviewCookie:
    verdict = classify(cookie.name, http_only=cookie.http_only)
    live = is_unexpired(cookie, now)
    return {
        "name": cookie.name,
        "path": cookie.path,
        "host_only": not cookie.domain.startswith("."),
        "expiry": cookie.expiry,
        "expired": not live,
        "http_only": cookie.http_only,
        "secure": cookie.secure,
        "same_site": cookie.same_site,
        "partitioned": bool(cookie.partition_key),
        "selected": verdict.selected and live,
        "signal": verdict.signal,
    }


def state_preview(cookies: Iterable[Cookie], now: float) -> StatePreview:
    """The preview of ``cookies`` at ``now`` (seconds): domains sorted, and within a
    domain the cookies sorted by name and path."""
    by_domain: dict[str, list[PreviewCookie]] = {}
    for cookie in cookies:
        by_domain.setdefault(cookie_host(cookie), []).append(_preview_cookie(cookie, now))
    return {
        "now": now,
        "domains": [
            {"domain": domain, "cookies": sorted(rows, key=lambda r: (r["name"], r["path"]))}
            for domain, rows in sorted(by_domain.items())
        ],
    }


def default_selection(cookies: Iterable[Cookie], now: float) -> list[Cookie]:
    """The unexpired cookies the heuristic selects by default."""
    return [
        c
        for c in cookies
        if is_unexpired(c, now) and classify(c.name, http_only=c.http_only).selected
    ]


def _wanted(selection: Sequence[Mapping[str, object]]) -> set[tuple[str, str]]:
    wanted: set[tuple[str, str]] = set()
    for i, item in enumerate(selection):
        domain, name = item.get("domain"), item.get("name")
        if not isinstance(domain, str) or not domain.strip("."):
            raise InvalidInput("a selected cookie needs its domain", field=f"cookies[{i}].domain")
        if not isinstance(name, str):
            raise InvalidInput("a selected cookie needs its name", field=f"cookies[{i}].name")
        wanted.add((domain.lstrip(".").lower(), name))
    return wanted


def select_cookies(
    cookies: Iterable[Cookie], selection: Sequence[Mapping[str, object]] | None, now: float
) -> list[Cookie]:
    """The unexpired cookies a capture keeps: all of them when ``selection`` is None,
    else those named by a ``{domain, name}`` of it (domain with or without its leading
    dot, any case; every path and both host-only and domain cookies of that name).

    Raises:
        InvalidInput: ``cookies`` — the selection matches no unexpired cookie (a capture
            must never store a dead login), or an item lacks its domain or name.
    """
    live = [c for c in cookies if is_unexpired(c, now)]
    if selection is None:
        return live
    wanted = _wanted(selection)
    kept = [c for c in live if (cookie_host(c), c.name) in wanted]
    if not kept:
        raise InvalidInput(
            "the selected cookies match no unexpired cookie of the session: nothing would "
            "be signed in",
            field="cookies",
        )
    return kept
