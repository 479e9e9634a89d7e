"""Pure rules for cookies, and the one place where Chromium and Firefox are made to agree.

The model (``sitekeep.model.Cookie``) is browser-neutral; a snapshot saved in one engine
restores into the other (SPEC §3 Cross-browser). Every difference is normalised here, on
the way in (:func:`from_bidi`) or out (:func:`to_bidi`), each rule with its source:

* **SameSite spelling and defaults.** BiDi ``network.SameSite`` is ``strict | lax | none |
  default`` (W3C WebDriver BiDi §network.Cookie). Chromium reports a cookie set with no
  SameSite attribute as ``"none"``; a ``"none"`` cookie that is not ``secure`` cannot be a
  real SameSite=None cookie (RFC 6265bis §5.7 step 17 rejects those, and so do both
  engines), so it is read as ``default``. Firefox reported no-SameSite cookies as
  ``"none"`` before BiDi had ``default``: the same rule covers it. A *secure* Chromium
  ``"none"`` may be explicit or unspecified: the save settles it from the ``Set-Cookie``
  headers the browser received (:func:`settle_same_site`, ``browser.samesite``). Writing
  ``default``: Chromium treats an unspecified SameSite as Lax, except that it sends a
  cookie *created less than two minutes ago* on a cross-site top-level POST (measured:
  a cookie written without ``sameSite`` rode on one) — a restored cookie is always new,
  so that would widen it. Chromium therefore gets ``sameSite: "default"``, which it
  stores as an explicit ``lax`` (spike §1), and a ``SameSite=Lax`` header on a spare
  response; Firefox (whose unspecified is its own default) gets ``"default"``.
* **Expiry type.** BiDi's ``expiry`` is a js-uint of seconds; Chromium rejects a float
  ("Expected integer") and Firefox does too (spike §1): always an ``int``, None for a
  session cookie. Both engines cap a lifetime at 400 days (RFC 6265bis §5.6.1), so a
  check of what was stored allows for the cap (:func:`as_stored`).
* **Host-only vs domain.** Both engines report a domain cookie with a leading dot and a
  host-only one without, and ``setCookie`` reads the domain the same way (spike §1), so
  the spelling is kept as reported; :func:`covers_host` implements RFC 6265bis §5.1.3.
* **Partition keys (CHIPS).** Chromium reports ``goog:partitionKey`` per cookie and takes
  it back on ``setCookie`` (spike §1); Firefox reports none and has no per-cookie
  equivalent, so the key is kept in the model and written only to Chromium.
* **Values.** Firefox 153's ``setCookie`` stores a string value's UTF-8 bytes one byte per
  character, and a base64 value's bytes one byte per character too; Latin-1 values are
  therefore written as base64 of their Latin-1 bytes (:func:`_bidi_value`), and a value
  or name beyond Latin-1 only through a ``Set-Cookie`` header on a spare response, which
  Firefox reads as UTF-8 (:func:`needs_header`). Chromium reports a value that is not
  UTF-8 with its bad bytes dropped; its ``size`` (name and value bytes) gives it away
  (:func:`value_lost`), and the save names such a cookie instead of saving a wrong one.
* **Vendor fields** (``goog:priority``…) are kept in ``extras`` and never sent to another
  engine.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from dataclasses import replace
from email.utils import formatdate
from typing import Any
from urllib.parse import urlsplit

from sitekeep.history import normal_host
from sitekeep.model import BrowserKind, Cookie, SameSite

__all__ = [
    "MAX_AGE",
    "as_stored",
    "attributes",
    "cookie_host",
    "cookie_key",
    "cookie_label",
    "cookie_origin",
    "covers_host",
    "from_bidi",
    "is_ip",
    "is_unexpired",
    "jar_host",
    "needs_header",
    "set_by_response",
    "settle_same_site",
    "to_bidi",
    "to_set_cookie",
    "value_lost",
]

_SAME_SITE: frozenset[str] = frozenset({"strict", "lax", "none", "default"})
_KNOWN = frozenset(
    {"name", "value", "domain", "path", "httpOnly", "secure", "sameSite", "expiry", "size"}
)
_DROPPED = frozenset({"goog:session", "goog:partitionKey"})


def from_bidi(raw: Mapping[str, Any], kind: BrowserKind) -> Cookie:
    """A model cookie from a BiDi ``network.Cookie`` dict as ``storage.getCookies`` gives it."""
    value = raw.get("value") or {}
    extras = {k: v for k, v in raw.items() if k not in _KNOWN and k not in _DROPPED}
    if value.get("type") == "base64":
        extras["bidi:valueType"] = "base64"
    same_site = str(raw.get("sameSite", "default")).lower()
    secure = bool(raw.get("secure", False))
    if same_site not in _SAME_SITE or (same_site == "none" and not secure):
        same_site = "default"
    expiry = raw.get("expiry")
    return Cookie(
        name=str(raw["name"]),
        value=str(value.get("value", "")),
        domain=str(raw["domain"]),
        path=str(raw.get("path") or "/"),
        http_only=bool(raw.get("httpOnly", False)),
        secure=secure,
        same_site=_as_same_site(same_site),
        expiry=int(expiry) if expiry is not None else None,
        partition_key=raw.get("goog:partitionKey"),
        extras=extras,
    )


def _as_same_site(value: str) -> SameSite:
    if value == "strict":
        return "strict"
    if value == "lax":
        return "lax"
    if value == "none":
        return "none"
    return "default"


def to_bidi(cookie: Cookie, kind: BrowserKind) -> dict[str, Any]:
    """The ``storage.setCookie`` ``cookie`` parameter (a BiDi ``storage.PartialCookie``)."""
    out: dict[str, Any] = {
        "name": cookie.name,
        "value": _bidi_value(cookie, kind),
        "domain": cookie.domain,
        "path": cookie.path,
        "httpOnly": cookie.http_only,
        "secure": cookie.secure,
    }
    same_site = cookie.same_site
    if same_site == "none" and not cookie.secure:
        same_site = "default"
    out["sameSite"] = same_site  # Chromium stores "default" as Lax: never the 2-minute POST
    if cookie.expiry is not None:
        out["expiry"] = int(cookie.expiry)
    if kind == "chromium" and cookie.partition_key:
        out["goog:partitionKey"] = dict(cookie.partition_key)
    return out


def _bidi_value(cookie: Cookie, kind: BrowserKind) -> dict[str, str]:
    """The ``network.BytesValue`` of a cookie's value.

    Firefox 153's ``storage.setCookie`` stores a string value's UTF-8 bytes one byte per
    character (measured: "ü" comes back as "Ã¼"), while it reports values as they are.
    A value of Latin-1 characters therefore goes as base64 of its Latin-1 bytes, which
    Firefox stores one byte per character — exactly as reported. Characters above U+00FF
    cannot be written there at all; the restore's jar check reports such a cookie.
    """
    if cookie.extras.get("bidi:valueType") == "base64":
        return {"type": "base64", "value": cookie.value}
    if kind == "firefox" and not cookie.value.isascii():
        try:
            raw = cookie.value.encode("latin-1")
        except UnicodeEncodeError:
            return {"type": "string", "value": cookie.value}
        return {"type": "base64", "value": base64.b64encode(raw).decode()}
    return {"type": "string", "value": cookie.value}


MAX_AGE = 400 * 86400
"""Chromium and Firefox both cap a cookie's lifetime at 400 days (RFC 6265bis §5.6.1:
"the user agent MUST limit the maximum age to 400 days")."""


def as_stored(cookie: Cookie, now: float, kind: BrowserKind | None = None) -> tuple[Any, ...]:
    """:func:`attributes` as a browser stores them written at ``now``: the expiry capped
    at 400 days ahead (to the minute, since ``now`` is not the browser's clock), and for
    a write into ``kind`` Chromium, an unspecified SameSite as the ``lax`` it stores; then
    the CHIPS partition key (sorted items, None for none): a partitioned cookie stored
    unpartitioned would be sent on every site, so it is not "as saved"."""
    attrs = list(attributes(cookie))
    if cookie.expiry is not None and cookie.expiry > now + MAX_AGE - 60:
        attrs[-1] = "capped"
    if attrs[6] == "none" and not cookie.secure:
        attrs[6] = "default"  # as to_bidi writes it
    if kind == "chromium" and attrs[6] == "default":
        attrs[6] = "lax"
    partition = cookie.partition_key
    return (*attrs, tuple(sorted(partition.items())) if partition else None)


def value_lost(raw: Mapping[str, Any], kind: BrowserKind) -> bool:
    """Whether Chromium reported a cookie value without some of its bytes: its ``size``
    counts name and value in bytes, and a value that is not UTF-8 is reported with the
    bad bytes dropped (measured: ``x\\xffy`` came back as ``xy``, size 10)."""
    size = raw.get("size")
    value = raw.get("value") or {}
    if kind != "chromium" or not isinstance(size, int) or value.get("type") != "string":
        return False
    name = str(raw.get("name", ""))
    text = str(value.get("value", ""))
    return (
        len(name.encode("utf-8", "surrogatepass")) + len(text.encode("utf-8", "surrogatepass"))
        != size
    )


def needs_header(cookie: Cookie, kind: BrowserKind) -> bool:
    """Whether ``storage.setCookie`` cannot write ``cookie`` into ``kind`` as it is, so it
    must come from a ``Set-Cookie`` header: into Firefox, a value beyond Latin-1 or a name
    beyond ASCII (Firefox stores each UTF-8 byte of a BiDi string as a character)."""
    if kind != "firefox" or cookie.extras.get("bidi:valueType") == "base64":
        return False
    return not cookie.name.isascii() or any(ord(c) > 0xFF for c in cookie.value)


def settle_same_site(cookie: Cookie, said: SameSite | None, before: Cookie | None) -> Cookie:
    """A cookie read from Chromium with the SameSite it was given (module docstring).

    Args:
        cookie: as :func:`from_bidi` read it (``none`` only when ``secure``).
        said: what its last ``Set-Cookie`` header (or the restore that wrote it) said,
            None when unknown.
        before: the same cookie (name, domain, path) in the last snapshot, if any.

    Returns:
        ``cookie`` with ``same_site`` never wider than what was set: an unknown ``none``
        becomes ``default``; a ``lax`` that was written for ``default`` is ``default``.
    """
    reported = cookie.same_site
    settled: SameSite = reported
    if reported == "none":
        known = said if said is not None else (before.same_site if before else None)
        settled = "none" if known == "none" else "default"
    elif reported == "lax":
        known = said if said is not None else (before.same_site if before else None)
        settled = "default" if known == "default" else "lax"
    if settled == reported:
        return cookie
    return replace(cookie, same_site=settled)


def is_unexpired(cookie: Cookie, now: float) -> bool:
    """True for a session cookie or one whose expiry is still ahead of ``now`` (seconds)."""
    return cookie.expiry is None or cookie.expiry > now


def covers_host(cookie: Cookie, host: str) -> bool:
    """Whether the cookie would be sent to ``host`` by domain (RFC 6265bis §5.1.3).

    A host-only cookie (no leading dot) covers its own host; a domain cookie covers its
    domain and every subdomain. Hosts compare by :func:`~sitekeep.history.normal_host`
    (an IPv6 cookie's ``[::1]`` is the host ``::1``).
    """
    host = normal_host(host)
    domain = cookie.domain.lower()
    if not domain.startswith("."):
        return host == normal_host(domain)
    bare = domain[1:]
    return host == bare or host.endswith(domain)


def cookie_key(cookie: Cookie) -> tuple[str, str, str]:
    """What names a cookie in a jar: (name, domain as spelled, path) (RFC 6265bis §5.7)."""
    return (cookie.name, cookie.domain, cookie.path)


def cookie_label(name: str, domain: str, path: str) -> str:
    """How a report names one cookie: its name and where it lives, so two cookies of one
    name (host-only and domain, or two paths) are told apart: ``cookie 'sid' on a.test/``."""
    return f"cookie {name!r} on {domain}{path}"


def cookie_host(cookie: Cookie) -> str:
    """The host a cookie belongs to: its domain without a leading dot, by
    :func:`~sitekeep.history.normal_host` (both browsers spell an IPv6 host ``[::1]`` in
    the jar; the host is ``::1``, as an origin's)."""
    return normal_host(cookie.domain.lstrip("."))


def is_ip(host: str) -> bool:
    """Whether ``host`` is an IP address (an IPv6 one with or without brackets)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def jar_host(host: str) -> str:
    """``host`` as both browsers' jars spell a host-only cookie's domain: lowercase, an
    IPv6 address compressed in brackets (``0:0::1`` → ``[::1]``, measured on Chromium 156
    and Firefox 153; Chromium's ``storage.setCookie`` refuses a bare ``::1``)."""
    host = normal_host(host)
    return f"[{host}]" if ":" in host else host


def cookie_origin(cookie: Cookie) -> str:
    """An origin whose response may set ``cookie`` as it is: its host (an IPv6 one in
    brackets), https for a ``Secure`` one."""
    return f"{'https' if cookie.secure else 'http'}://{jar_host(cookie_host(cookie))}"


def attributes(cookie: Cookie) -> tuple[Any, ...]:
    """What must survive a write: name, domain, path, value and every attribute."""
    return (
        cookie.name,
        cookie.domain,
        cookie.path,
        cookie.value,
        cookie.http_only,
        cookie.secure,
        cookie.same_site,
        cookie.expiry,
    )


_HEADER_SAFE = frozenset(chr(c) for c in range(0x21, 0x7F)) - set(';",\\')


def _header_text_ok(text: str, *, name: bool) -> bool:
    """Whether Firefox reads ``text`` back from a header as it is (RFC 6265bis §5.6:
    no ``;`` nor controls, no whitespace at either end, no ``=`` in a name)."""
    if text != text.strip(" \t") or ";" in text or (name and "=" in text):
        return False
    return not any(ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) < 0xE000 for c in text)


def to_set_cookie(cookie: Cookie, kind: BrowserKind = "chromium") -> str | None:
    """The ``Set-Cookie`` header value that stores ``cookie`` in ``kind`` (RFC 6265bis
    §4.1), or None when a header cannot say it (a CHIPS partition, bytes that are not a
    string, a character the header cannot carry, ``SameSite=None`` without ``Secure``).
    Into Firefox, any Unicode text a header can carry (it reads headers as UTF-8); into
    Chromium, the header's safe ASCII only."""
    if cookie.partition_key or cookie.extras.get("bidi:valueType") == "base64":
        return None
    if kind == "firefox":
        if not cookie.name or not _header_text_ok(cookie.name, name=True):
            return None
        if not _header_text_ok(cookie.value, name=False):
            return None
    elif not set(cookie.name) <= _HEADER_SAFE - {"="} or not set(cookie.value) <= _HEADER_SAFE:
        return None
    if cookie.same_site == "none" and not cookie.secure:
        return None
    parts = [f"{cookie.name}={cookie.value}", f"Path={cookie.path}"]
    if cookie.domain.startswith("."):
        parts.append(f"Domain={cookie.domain[1:]}")
    if cookie.expiry is not None:
        parts.append(f"Expires={formatdate(cookie.expiry, usegmt=True)}")
    if cookie.secure:
        parts.append("Secure")
    if cookie.http_only:
        parts.append("HttpOnly")
    if cookie.same_site != "default":
        parts.append(f"SameSite={cookie.same_site.capitalize()}")
    elif kind == "chromium":
        parts.append("SameSite=Lax")  # not unspecified: see the module docstring
    return "; ".join(parts)


def set_by_response(cookie: Cookie, origin: str) -> bool:
    """Whether a response from ``origin`` may store ``cookie`` as it is (RFC 6265bis §5.7):
    its host is the cookie's (host-only) or within its domain, and its scheme is https
    exactly when the cookie is ``Secure`` — so the stored cookie keeps its source scheme."""
    parts = urlsplit(origin)
    host = (parts.hostname or "").lower()
    if (parts.scheme == "https") != cookie.secure:
        return False
    if cookie.domain.startswith("."):
        return covers_host(cookie, host)
    return host == cookie.domain.lower()
