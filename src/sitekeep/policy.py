"""Pure rules for what agents may do: navigation policy and names (SPEC §12).

Agents may open ``http:`` and ``https:`` pages and ``about:blank``. Refused: ``file:``,
browser-internal schemes (``chrome:``, ``about:`` other than ``about:blank``…), script URLs,
and the sitekeep server itself in any spelling of its address (``sitekeep.address``; an
agent must not drive its own admin), as well as every WebDriver/BiDi endpoint sitekeep
drives browsers through (a page there could drive another tenant's browser). The
browsers refuse them too, for every request a page makes (``sitekeep.browser.guard``):
this check gives the clear error up front.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import ada_url

from sitekeep.address import Refused, ServerAddress
from sitekeep.client_json import check_text
from sitekeep.errors import InvalidInput, OwnAddress
from sitekeep.history import origin_of
from sitekeep.limits import MAX_URL

__all__ = ["as_browsers_read", "check_key", "check_url"]

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def check_url(
    url: str,
    *,
    own: Refused | ServerAddress | None = None,
    own_origins: Iterable[str] = (),
    field: str = "url",
) -> str:
    """``url`` when an agent may navigate to it.

    Args:
        own: where the server (and, as ``Refused``, every WebDriver/BiDi endpoint it
            drives browsers through) listens; a URL that reaches one in any spelling is
            refused.
        own_origins: origins refused as written (checked as well as ``own``).

    Raises:
        InvalidInput: a refused scheme, a malformed URL, one longer than
            :data:`~sitekeep.limits.MAX_URL` or holding a lone surrogate — whichever
            facade it came through (a UI form, a socket message, a flow step).
        OwnAddress: the URL reaches the sitekeep server itself (403).
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput("a URL is required", field=field)
    if len(url) > MAX_URL:
        raise InvalidInput(f"a URL is at most {MAX_URL} characters", field=field)
    url = check_text(url, field).strip()
    if url == "about:blank":
        return url
    read = as_browsers_read(url)
    scheme = (read or url).split(":", 1)[0].lower() if _SCHEME.match(read or url) else ""
    if scheme not in ("http", "https"):
        shown = scheme or "a relative URL"
        raise InvalidInput(
            f"{shown}: agents may open http(s) pages and about:blank only", field=field
        )
    if read is None:
        raise InvalidInput("not a valid URL", field=field)
    origin = origin_of(read)
    if origin is None:
        raise InvalidInput("the URL has no host", field=field)
    if origin in {origin_of(o) or o for o in own_origins}:
        raise OwnAddress(field=field)
    if own is not None and own.reaches(read):
        raise OwnAddress(field=field)
    if isinstance(own, Refused) and own.known(read):  # a Grid's name, as configured
        raise OwnAddress(field=field)
    return url


def as_browsers_read(url: str) -> str | None:
    """``url`` as a browser reads it (the WHATWG URL Standard's parser, ``ada_url``):
    in http(s) a backslash is a slash, tabs and newlines anywhere are dropped, leading
    and trailing C0 controls and spaces too, ``http:host`` has a host, hosts are
    percent-decoded, IDNA-mapped and IPv4 numbers read in every radix; None when a browser
    would not take it. Every check of where a URL goes reads it so (Python's ``urlsplit``
    reads ``http://127.0.0.1:8700\\@example.org/`` as example.org:80, a browser as
    127.0.0.1:8700)."""
    try:
        return str(ada_url.normalize_url(url))
    except ValueError:
        return None


def check_key(key: str, field: str = "key") -> str:
    """A session key: 1–64 of ``[A-Za-z0-9._-]``, starting with a letter or digit.

    Raises:
        InvalidInput: anything else.
    """
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise InvalidInput(
            "a key is 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            field=field,
        )
    return key
