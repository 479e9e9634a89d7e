"""Pure rules for a session's history: where it has been (SPEC §4).

The history is newest first, one entry per origin. Only the top entry keeps its whole URL:
below it an entry keeps origin and path, since query strings and fragments carry OAuth codes
and reset tokens.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from sitekeep.model import HistoryEntry

__all__ = ["bump", "bump_many", "clear", "host_of", "normal_host", "origin_of", "trim_url"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str | None:
    """The serialised origin of an http(s) URL (``https://host[:port]``), else ``None``.

    Pages with no origin (``about:blank``, ``data:``, opaque origins) give ``None``
    (HTML §Origin: only tuple origins serialise as scheme://host[:port]).
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = normal_host(parts.hostname)
    if ":" in host:  # an IPv6 literal keeps its brackets in an origin
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def host_of(origin: str) -> str:
    """The host of a serialised origin (``https://a.example.test:8443`` → ``a.example.test``),
    by :func:`normal_host` (``http://[::1]:8080`` → ``::1``)."""
    return normal_host(urlsplit(origin).hostname or origin)


def normal_host(host: str) -> str:
    """``host`` in the one spelling sitekeep names a host by: lowercase, and an IPv6
    address compressed without brackets, as ``ipaddress`` and the URL Standard's IPv6
    serializer write it — ``[::1]``, ``0:0:0:0:0:0:0:1`` and ``::1`` are one host (a
    cookie jar spells it ``[::1]``: :func:`sitekeep.cookies.cookie_host` reads it so)."""
    host = host.lower()
    if ":" not in host:
        return host
    inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.IPv6Address(inner).compressed
    except ValueError:
        return host


def trim_url(url: str) -> str:
    """The URL without its query string and fragment."""
    parts = urlsplit(url)
    return parts._replace(query="", fragment="").geturl()


def bump(
    history: Sequence[HistoryEntry], url: str, now: float, *, ttl: float, cap: int
) -> tuple[HistoryEntry, ...]:
    """Move ``url``'s origin to the top with its whole URL, or add it there.

    The previous top entry loses its query and fragment; entries older than ``ttl`` seconds
    are dropped, except the top one; at most ``cap`` entries stay, the oldest going first.
    A URL with no origin changes nothing.
    """
    return bump_many(history, [url], now, ttl=ttl, cap=cap)


def bump_many(
    history: Sequence[HistoryEntry], urls: Iterable[str], now: float, *, ttl: float, cap: int
) -> tuple[HistoryEntry, ...]:
    """Apply :func:`bump` for each URL in order, in one update (a flow's end, SPEC §4)."""
    entries = list(history)
    changed = False
    for url in urls:
        origin = origin_of(url)
        if origin is None:
            continue
        changed = True
        entries = [e for e in entries if e.origin != origin]
        entries.insert(0, HistoryEntry(origin=origin, url=url, at=now))
    if not changed:
        return tuple(history)
    head, rest = entries[0], entries[1:]
    kept = [HistoryEntry(e.origin, trim_url(e.url), e.at) for e in rest if now - e.at <= ttl]
    return (head, *kept)[:cap]


def clear(
    history: Sequence[HistoryEntry],
) -> tuple[tuple[HistoryEntry, ...], tuple[HistoryEntry, ...]]:
    """Clear (SPEC §11): only the top entry stays — a reopen goes back there — and every
    other entry goes, another port of the current host included.

    Returns:
        ``(kept, gone)``, each newest first.
    """
    return tuple(history[:1]), tuple(history[1:])
