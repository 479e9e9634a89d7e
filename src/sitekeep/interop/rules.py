"""How a cookie other tools wrote becomes a cookie a browser would hold (SPEC §15, §17).

A storage state or cookies.txt file is written by many tools, each with its habits:
SameSite in any case or in a browser-extension's words, expiry as ``-1``, ``0``, a float,
milliseconds, a date long past or years ahead, ``__Host-`` cookies with a leading-dot
domain, domain cookies on an IP address. A browser holding the original cookie could not
have stored most of these as written (RFC 6265bis §5.7, the storage model), so each is
read as what the browser held, or dropped when nothing sensible can be; every change and
every drop is a :class:`~sitekeep.interop.report.Note` with the rule's source.

The rules, in the order they apply (section numbers of draft-ietf-httpbis-rfc6265bis):

* name and value: empty name and value, a control character, more than 4096 bytes, or an
  empty name whose value starts with a prefix → dropped (§5.7 steps 2, 3, 4, 22).
* domain: lowercased, a trailing dot removed, IDNs as A-labels, an IPv6 address in the
  one spelling both browsers' jars hold — in brackets, compressed, lowercase (the URL
  Standard's IPv6 serializer, by ``ipaddress``), so ``[::1]``, ``::1`` and
  ``0:0:0:0:0:0:0:1`` are one host, ``[::1]``; Chromium's ``storage.setCookie`` refuses
  a bare ``::1`` (measured, Chromium 156) (§5.1.2); a domain cookie
  on an IP address or on a public suffix is host-only (§5.1.3, §5.7 step 9); a domain
  that is no host name → dropped. The same host rule (:func:`canonical_host`) holds every
  other host an import reads: an origin of Web Storage (:func:`canonical_origin`) and a
  partition key's site, whose impossible hosts (``a b``, ``"><svg…``, ``x%2f..``) are
  dropped as a cookie's would be. Where a host-only flag (cookies.txt's "include
  subdomains", Cookie-Editor's ``hostOnly``) disagrees with the leading dot, the flag wins.
* path: one not starting with ``/`` is ``/`` (§5.1.4 default-path, §5.6.4).
* expiry: ``-1`` or absent is a session cookie (Playwright), ``0`` too (cookies.txt);
  other negatives → session; milliseconds and microseconds → seconds; fractions → whole
  seconds (BiDi's expiry is an integer); past → dropped (§5.7: a browser evicts expired
  cookies); beyond 400 days → 400 days (§5.5).
* SameSite: any case of ``Strict``/``Lax``/``None``, and the extension API's
  ``no_restriction``/``unspecified``; anything else is ``default`` (§5.7 step 17);
  ``None`` without ``Secure`` is ``default`` (§5.7 step 19).
* prefixes, matched case-insensitively (§5.4): ``__Secure-`` is Secure (§5.7 step 20);
  ``__Host-`` is Secure, host-only and on path ``/`` (§5.7 step 21) — the browser could
  only have held it so, so the file's other spelling is a writer's slip.
* partition key (CHIPS, draft-cutler-httpbis-partitioned-cookies, and Chromium's
  ``goog:partitionKey``): a string or ``{topLevelSite}`` object, reduced to a schemeful
  site (scheme://registrable domain, HTML §Sites); a partitioned cookie is Secure; a key
  that names no site → dropped (carried unpartitioned it would be sent where it never was).
* duplicates (same name, domain, path and partition): the later one wins (§5.7 step 23).
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

from sitekeep.cookies import MAX_AGE, is_ip
from sitekeep.history import origin_of
from sitekeep.interop.report import Report
from sitekeep.model import Cookie, SameSite
from sitekeep.sites import site_of

__all__ = ["RawCookie", "canonical_host", "canonical_origin", "dedupe", "normalise"]

_RFC = "RFC 6265bis"
_SAME_SITE: dict[str, SameSite] = {
    "strict": "strict",
    "lax": "lax",
    "none": "none",
    "no_restriction": "none",  # chrome.cookies / browser.cookies extension APIs
    "unspecified": "default",
    "default": "default",
}
_CANONICAL_SAME_SITE = {"Strict", "Lax", "None"}
_CTL = frozenset(chr(c) for c in (*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F))
_MS_FROM = 1e11  # seconds past the year 5138: only a milliseconds value is this large
_US_FROM = 1e14


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    return PublicSuffixList()


@dataclass(frozen=True, slots=True)
class RawCookie:
    """A cookie as a source file wrote it, fields not yet checked for meaning (their JSON
    types were checked by the format's reader).

    ``host_only`` is an explicit host-only flag when the format has one (cookies.txt's
    "include subdomains" negated, Cookie-Editor's ``hostOnly``), else None.
    ``expires_session`` is ``expires``' session marker for the format (``-1`` for
    storage state, ``0`` for cookies.txt).
    """

    where: str
    name: str
    value: str
    domain: str
    path: str | None = "/"
    expires: float | None = None
    http_only: bool = False
    secure: bool = False
    same_site: Any = None
    partition_key: Any = None
    cross_site_ancestor: bool | None = None
    host_only: bool | None = None
    session: bool | None = None
    expires_session: float = -1


class _Drop(Exception):
    """A rule dropped the cookie (its note is written)."""


class _Run:
    """One cookie going through the rules, writing notes to the report."""

    def __init__(self, raw: RawCookie, report: Report) -> None:
        self.raw = raw
        self.report = report

    def changed(self, rule: str, reason: str) -> None:
        raw = self.raw
        self.report.note(raw.where, raw.name, raw.domain, "changed", rule, reason)

    def drop(self, rule: str, reason: str) -> _Drop:
        raw = self.raw
        self.report.note(raw.where, raw.name, raw.domain, "dropped", rule, reason)
        return _Drop(rule)


def normalise(raw: RawCookie, now: float, report: Report) -> Cookie | None:
    """The cookie a browser would hold for ``raw`` at ``now`` (seconds), or None when
    it would hold none; every change and drop noted in ``report`` (module docstring)."""
    run = _Run(raw, report)
    try:
        _check_name_value(run)
        domain = _domain(run)
        path = _path(run)
        expiry = _expiry(run, now)
        secure = raw.secure
        same_site = _same_site(run, secure)
        partition, secure = _partition(run, secure)
        cookie = Cookie(
            name=raw.name,
            value=raw.value,
            domain=domain,
            path=path,
            http_only=raw.http_only,
            secure=secure,
            same_site=same_site,
            expiry=expiry,
            partition_key=partition,
        )
        return _prefixes(run, cookie)
    except _Drop:
        return None


def _check_name_value(run: _Run) -> None:
    name, value = run.raw.name, run.raw.value
    if not name and not value:
        raise run.drop(
            "name-empty", f"no name and no value: a browser ignores it ({_RFC} §5.7 step 2)"
        )
    if _CTL & set(name + value):
        raise run.drop(
            "control-character",
            f"a control character in the name or value: a browser ignores it ({_RFC} §5.7 step 3)",
        )
    if len(name.encode()) + len(value.encode()) > 4096:
        raise run.drop(
            "too-large",
            f"name and value pass 4096 bytes: a browser ignores it ({_RFC} §5.7 step 4)",
        )
    if not name and value.lower().startswith(("__secure-", "__host-")):
        raise run.drop(
            "empty-name-prefix",
            f"an empty name with a prefixed value: a browser ignores it ({_RFC} §5.7 step 22)",
        )


def _ipv6(host: str) -> str | None:
    """``host`` as an IPv6 address in the jar's one spelling (in brackets, compressed,
    lowercase: ``0:0::1`` → ``[::1]``), or None when it is none (brackets unbalanced, or
    around anything else)."""
    inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return f"[{ipaddress.IPv6Address(inner).compressed}]"
    except ValueError:
        return None


_HOST_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_:[]")


def canonical_host(host: str) -> tuple[str | None, list[tuple[str, str]]]:
    """``host`` as a browser holds it (§5.1.2): lowercase, no trailing dot, A-labels, an
    IPv6 address as ``[::1]`` — or None when it is no host name (a space, ``%``, ``<``,
    ``..``, a colon outside an IPv6 address…); and each change made, as
    ``(rule, reason)``. The one rule for every host an import reads: a cookie's domain,
    an origin, a partition key's site."""
    changes: list[tuple[str, str]] = []
    if host != host.lower():
        changes.append(("domain-case", f"domain lowercased ({_RFC} §5.1.2)"))
        host = host.lower()
    if host.endswith(".") and host.strip("."):
        changes.append(("domain-trailing-dot", f"trailing dot removed ({_RFC} §5.1.2)"))
        host = host.rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None, changes
        changes.append(("domain-idna", f"domain written as IDNA A-labels ({_RFC} §5.1.2)"))
    bad = set(host) - _HOST_CHARACTERS
    if not host or bad or ".." in host:
        return None, changes
    if set(host) & set("[]:"):
        address = _ipv6(host)
        if address is None:
            return None, changes
        if address != host:
            changes.append(
                ("domain-ipv6", "an IPv6 address written as a browser's jar spells it: in "
                 "brackets, compressed (URL Standard §IPv6 serializer)")
            )  # fmt: skip
        host = address
    return host, changes


def canonical_origin(written: str) -> str | None:
    """The origin a browser would serialise for ``written`` (``scheme://host[:port]``,
    RFC 6454 §6.2, its host by :func:`canonical_host`), or None when it names no http(s)
    origin on a host name a browser would accept."""
    origin = origin_of(written)
    if origin is None:
        return None
    parts = urlsplit(origin)
    bracketed = parts.netloc.startswith("[")
    host, _ = canonical_host(f"[{parts.hostname}]" if bracketed else parts.hostname or "")
    if host is None:
        return None
    port = parts.netloc.rpartition(":")[2] if parts.port is not None else ""
    return f"{parts.scheme}://{host}{':' + port if port else ''}"


def _canonical_host(run: _Run, host: str) -> str:
    """``host`` canonicalised (:func:`canonical_host`), each change noted; dropped when
    it is no host name."""
    canonical, changes = canonical_host(host)
    for rule, reason in changes:
        run.changed(rule, reason)
    if canonical is None:
        raise run.drop("domain-invalid", f"domain is no host name ({_RFC} §5.1.2, §5.7 step 8)")
    return canonical


def _domain(run: _Run) -> str:
    raw = run.raw
    dotted = raw.domain.startswith(".")
    host = _canonical_host(run, raw.domain.lstrip(".") if dotted else raw.domain)
    domain_cookie = dotted
    if raw.host_only is not None and raw.host_only == dotted:
        domain_cookie = not raw.host_only
        run.changed(
            "host-only-flag",
            "the host-only flag disagrees with the leading dot; the flag wins "
            f"({'a domain' if domain_cookie else 'a host-only'} cookie)",
        )
    if domain_cookie and is_ip(host):
        run.changed(
            "domain-ip",
            f"an IP address has no subdomains: read as host-only ({_RFC} §5.1.3)",
        )
        domain_cookie = False
    elif domain_cookie and _psl().is_public(host):
        run.changed(
            "domain-public-suffix",
            f"a Domain that is a public suffix (or a name without a dot) makes a host-only "
            f"cookie ({_RFC} §5.7 step 9)",
        )
        domain_cookie = False
    return f".{host}" if domain_cookie else host


def _path(run: _Run) -> str:
    path = run.raw.path
    if path is None or not path.startswith("/"):
        run.changed("path-default", f"a path must start with '/': read as '/' ({_RFC} §5.6.4)")
        return "/"
    return path


def _expiry(run: _Run, now: float) -> int | None:
    raw = run.raw
    if raw.session:
        if raw.expires is not None and raw.expires not in (-1, 0):
            run.changed("session-flag", "marked a session cookie: its expiry is not used")
        return None
    value = raw.expires
    if value is None or value == raw.expires_session:
        return None
    if not math.isfinite(value):
        raise run.drop("expiry-invalid", "expiry is not a finite number")
    if value == 0:
        run.changed("expiry-zero", "expiry 0 is how cookies.txt marks a session cookie: read so")
        return None
    if value < 0:
        run.changed("expiry-negative", "a negative expiry: read as a session cookie")
        return None
    if value >= _US_FROM:
        run.changed("expiry-microseconds", "expiry read as microseconds since the epoch")
        value /= 1e6
    elif value >= _MS_FROM:
        run.changed("expiry-milliseconds", "expiry read as milliseconds since the epoch")
        value /= 1000
    if value != int(value):
        run.changed("expiry-fraction", "fractional seconds of the expiry dropped (BiDi: integer)")
    seconds = int(value)
    if seconds <= now:
        raise run.drop(
            "expiry-past",
            f"expired: a browser evicts it at once ({_RFC} §5.7, 'A cookie is expired')",
        )
    if seconds > now + MAX_AGE:
        run.changed("expiry-capped", f"expiry beyond 400 days: capped to 400 days ({_RFC} §5.5)")
        seconds = int(now + MAX_AGE)
    return seconds


def _same_site(run: _Run, secure: bool) -> SameSite:
    given = run.raw.same_site
    if given is None or given == "":
        return "default"
    spelled = str(given).strip()
    value = _SAME_SITE.get(spelled.lower()) if isinstance(given, str) else None
    if value is None:
        run.changed(
            "same-site-unknown",
            f"SameSite is not Strict, Lax or None: read as the default ({_RFC} §5.7 step 17)",
        )
        return "default"
    if spelled not in _CANONICAL_SAME_SITE and value != "default":
        run.changed("same-site-spelling", f"SameSite spelled otherwise: read as {value.title()}")
    if value == "default" and spelled != "default":
        run.changed("same-site-spelling", "SameSite 'unspecified': read as the default")
    if value == "none" and not secure:
        run.changed(
            "same-site-none-insecure",
            f"SameSite=None without Secure: a browser refuses it, read as the default "
            f"({_RFC} §5.7 step 19)",
        )
        return "default"
    return value


def _partition(run: _Run, secure: bool) -> tuple[dict[str, Any] | None, bool]:
    key = run.raw.partition_key
    if key is None or key == "":
        return None, secure
    cross = run.raw.cross_site_ancestor
    if isinstance(key, dict):
        site = key.get("topLevelSite", key.get("sourceOrigin"))
        if isinstance(key.get("hasCrossSiteAncestor"), bool):
            cross = key["hasCrossSiteAncestor"]
        run.changed("partition-key-form", "partition key read from an object")
    else:
        site = key
    origin = canonical_origin(site) if isinstance(site, str) else None
    if origin is None:
        raise run.drop(
            "partition-key-invalid",
            "the partition key names no site: carried unpartitioned the cookie would be "
            "sent where it never was (CHIPS)",
        )
    normal = site_of(origin)
    if normal != site:
        run.changed(
            "partition-key-site", "partition key reduced to its schemeful site (HTML §Sites)"
        )
    if not secure:
        run.changed(
            "partitioned-insecure", "a partitioned cookie is always Secure (CHIPS): made Secure"
        )
        secure = True
    # Playwright's default for a partition key without the flag (storage state files).
    return {
        "topLevelSite": normal,
        "hasCrossSiteAncestor": True if cross is None else cross,
    }, secure


def _prefixes(run: _Run, cookie: Cookie) -> Cookie:
    lowered = cookie.name.lower()
    if lowered.startswith("__secure-") and not cookie.secure:
        run.changed("secure-prefix", f"a __Secure- cookie is Secure ({_RFC} §5.7 step 20)")
        cookie = replace(cookie, secure=True)
    if not lowered.startswith("__host-"):
        return cookie
    if not cookie.secure:
        run.changed("host-prefix-secure", f"a __Host- cookie is Secure ({_RFC} §5.7 step 21)")
        cookie = replace(cookie, secure=True)
    if cookie.domain.startswith("."):
        run.changed("host-prefix-domain", f"a __Host- cookie is host-only ({_RFC} §5.7 step 21)")
        cookie = replace(cookie, domain=cookie.domain[1:])
    if cookie.path != "/":
        run.changed("host-prefix-path", f"a __Host- cookie is on path '/' ({_RFC} §5.7 step 21)")
        cookie = replace(cookie, path="/")
    return cookie


def dedupe(cookies: list[tuple[RawCookie, Cookie]], report: Report) -> list[Cookie]:
    """The cookies with one per (name, domain, path, partition): the later one wins
    (RFC 6265bis §5.7 step 23); each earlier one noted as dropped."""
    last: dict[tuple[str, str, str, str], int] = {}
    for i, (_, cookie) in enumerate(cookies):
        partition = (cookie.partition_key or {}).get("topLevelSite", "")
        last[(cookie.name, cookie.domain, cookie.path, str(partition))] = i
    kept = set(last.values())
    for i, (raw, _) in enumerate(cookies):
        if i not in kept:
            report.note(
                raw.where,
                raw.name,
                raw.domain,
                "dropped",
                "duplicate",
                "a later cookie of the same name, domain and path replaces it "
                f"({_RFC} §5.7 step 23)",
            )
    return [cookie for i, (_, cookie) in enumerate(cookies) if i in kept]
