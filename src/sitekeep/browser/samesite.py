"""What each cookie's ``Set-Cookie`` said about SameSite, learned from the live browser.

Chromium's ``storage.getCookies`` reports a cookie set with no ``SameSite`` attribute (or
``SameSite=unspecified``) as ``"none"``, the same as an explicit ``SameSite=None``
(measured on Chromium 156; Firefox reports ``"default"``). Restored as ``none``, such a
cookie would then ride on cross-site requests it never rode on: a widening. So, on
Chromium, sitekeep listens to ``network.responseCompleted`` for the life of its socket and
keeps, per cookie (name, domain as the jar spells it, path), the SameSite its last
``Set-Cookie`` header gave: ``default`` when it gave none (RFC 6265bis §5.6.7). A save
reads a Chromium ``"none"`` as explicit only when a header (or the restore that wrote the
cookie) said so, and as ``default`` otherwise — never wider than the original.

Known limit: a cookie set from script (``document.cookie``, the Cookie Store API) sends no
header; unknown, it is saved as ``default`` (narrower, never wider). A socket reopened
after a process restart has missed the headers: the save then takes the last snapshot's
word for a cookie still reported the same way.

Cost: one event per response (only on Chromium); each is parsed once by the socket reader
and scanned for ``Set-Cookie`` headers only (``bench/save_restore.py`` shows the effect on
save and restore).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from sitekeep.cookies import is_ip, jar_host
from sitekeep.model import SameSite

__all__ = ["SameSiteLog", "parse_set_cookie"]

_MAX = 4096
_SAME_SITE: dict[str, SameSite] = {"strict": "strict", "lax": "lax", "none": "none"}

CookieKey = tuple[str, str, str]
"""(name, domain as the jar spells it: a leading dot for a domain cookie, path)."""


def _default_path(url_path: str) -> str:
    """RFC 6265bis §5.1.4: the request path up to, not including, its right-most "/"."""
    if not url_path.startswith("/") or url_path.count("/") == 1:
        return "/"
    return url_path[: url_path.rindex("/")]


def parse_set_cookie(header: str, url: str) -> tuple[CookieKey, SameSite] | None:
    """The cookie a ``Set-Cookie`` header value sets from a response of ``url``, and its
    SameSite (``default`` when the header gives none or an unknown value), or None when
    the header sets nothing this log can name (RFC 6265bis §5.6). The domain is spelled
    as the jar spells it (:func:`~sitekeep.cookies.jar_host`: ``[::1]``); on an IP
    address a ``Domain`` attribute makes no domain cookie (§5.7: host-only, or none)."""
    first, *attributes = header.split(";")
    name, sep, _ = first.partition("=")
    if not sep:
        return None
    parts = urlsplit(url)
    host = jar_host(parts.hostname or "")
    domain, path, same_site = host, _default_path(parts.path), "default"
    on_ip = is_ip(host)
    for attribute in attributes:
        key, _, value = attribute.partition("=")
        key, value = key.strip().lower(), value.strip()
        if key == "domain" and value and not on_ip:
            domain = "." + value.lstrip(".").lower()
        elif key == "path" and value.startswith("/"):
            path = value
        elif key == "samesite":
            same_site = _SAME_SITE.get(value.lower(), "default")
    if not host:
        return None
    return (name.strip(), domain, path), same_site  # type: ignore[return-value]


class SameSiteLog:
    """SameSite per cookie from the headers the browser received (bounded, newest kept)."""

    def __init__(self) -> None:
        self._said: OrderedDict[CookieKey, SameSite] = OrderedDict()

    def note(self, key: CookieKey, same_site: SameSite) -> None:
        """Remember what a header (or a restore's write) said for ``key``."""
        self._said.pop(key, None)
        self._said[key] = same_site
        while len(self._said) > _MAX:
            self._said.popitem(last=False)

    def said(self, key: CookieKey) -> SameSite | None:
        """What the last header said for ``key``, or None when none was seen."""
        return self._said.get(key)

    def on_response_completed(self, params: Mapping[str, Any]) -> None:
        """``network.responseCompleted``: note every ``Set-Cookie`` header it carries."""
        response = params.get("response") or {}
        headers = response.get("headers") or ()
        url = str(response.get("url") or (params.get("request") or {}).get("url") or "")
        for header in headers:
            if str(header.get("name", "")).lower() != "set-cookie":
                continue
            value = header.get("value") or {}
            if value.get("type") != "string":
                continue  # bytes that are not a string: no cookie this log could match
            # Chromium may join several headers of one response with newlines.
            for line in str(value.get("value", "")).split("\n"):
                found = parse_set_cookie(line, url)
                if found is not None:
                    self.note(*found)
