"""Pure rules for cookies, and the one place where Chromium and Firefox are made to agree.

The model (``sitekeep.model.Cookie``) is browser-neutral; a snapshot saved in one engine
restores into the other (SPEC §3 Cross-browser). Every difference is normalised here, on
the way in (:func:`from_bidi`) or out (:func:`to_bidi`), each rule with its source:

* **SameSite spelling and defaults.** BiDi ``network.SameSite`` is ``strict | lax | none |
  default`` (W3C WebDriver BiDi §network.Cookie). Chromium reports a cookie set with no
  SameSite attribute as ``"none"``; a ``"none"`` cookie that is not ``secure`` cannot be a
  real SameSite=None cookie (RFC 6265bis §5.7 step 17 rejects those, and so do both
  engines), so it is read as ``default``. Firefox reported no-SameSite cookies as
  ``"none"`` before BiDi had ``default``: the same rule covers it. Writing ``default``:
  Chromium stores ``sameSite: "default"`` as an explicit ``lax`` and silently drops
  ``"none"`` + insecure (measured, research/bidi-spike.md §1), so the attribute is left
  out; Firefox takes ``"default"`` as it is.
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
  character; Latin-1 values are therefore written as base64 of their Latin-1 bytes
  (:func:`_bidi_value`).
* **Vendor fields** (``goog:priority``…) are kept in ``extras`` and never sent to another
  engine.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from email.utils import formatdate
from typing import Any
from urllib.parse import urlsplit

from sitekeep.model import BrowserKind, Cookie, SameSite

__all__ = [
    "MAX_AGE",
    "as_stored",
    "attributes",
    "cookie_host",
    "covers_host",
    "from_bidi",
    "is_unexpired",
    "set_by_response",
    "to_bidi",
    "to_set_cookie",
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
    if same_site != "default":
        out["sameSite"] = same_site
    elif kind == "firefox":
        out["sameSite"] = "default"
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


def as_stored(cookie: Cookie, now: float) -> tuple[Any, ...]:
    """:func:`attributes` as a browser stores them written at ``now``: the expiry capped
    at 400 days ahead (to the minute, since ``now`` is not the browser's clock)."""
    attrs = list(attributes(cookie))
    if cookie.expiry is not None and cookie.expiry > now + MAX_AGE - 60:
        attrs[-1] = "capped"
    return tuple(attrs)


def is_unexpired(cookie: Cookie, now: float) -> bool:
    """True for a session cookie or one whose expiry is still ahead of ``now`` (seconds)."""
    return cookie.expiry is None or cookie.expiry > now


def covers_host(cookie: Cookie, host: str) -> bool:
    """Whether the cookie would be sent to ``host`` by domain (RFC 6265bis §5.1.3).

    A host-only cookie (no leading dot) covers its own host; a domain cookie covers its
    domain and every subdomain.
    """
    host = host.lower()
    domain = cookie.domain.lower()
    if not domain.startswith("."):
        return host == domain
    bare = domain[1:]
    return host == bare or host.endswith(domain)


def cookie_host(cookie: Cookie) -> str:
    """The host a cookie belongs to: its domain without a leading dot."""
    return cookie.domain.lstrip(".").lower()


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


def to_set_cookie(cookie: Cookie) -> str | None:
    """The ``Set-Cookie`` header value that stores ``cookie`` (RFC 6265bis §4.1), or None
    when a header cannot say it (a CHIPS partition, a value or name outside the header's
    safe ASCII, ``SameSite=None`` without ``Secure``)."""
    if cookie.partition_key or cookie.extras.get("bidi:valueType") == "base64":
        return None
    if not set(cookie.name) <= _HEADER_SAFE - {"="} or not set(cookie.value) <= _HEADER_SAFE:
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
