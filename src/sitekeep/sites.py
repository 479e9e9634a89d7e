"""Pure rules for sites: the schemeful site of an origin (HTML §Sites, RFC 6265bis §5.2).

Two origins are same-site when they share scheme and registrable domain (eTLD+1, from the
Public Suffix List, ICANN and private sections). A frame same-site with its top-level page
sees first-party (unpartitioned) storage in Chromium and Firefox alike, which lets the spare
tab read or write every origin of one site in one navigation.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

__all__ = ["group_by_site", "load_suffixes", "site_of"]


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    return PublicSuffixList()


def load_suffixes() -> None:
    """Parse the Public Suffix List now (0.3–1.1 s here, once per process), so the first
    save or restore does not pay it (``bench/flame.py``, issue #15)."""
    _psl()


def _registrable(host: str) -> str:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host  # an IP address is its own site
    except ValueError:
        pass
    return _psl().privatesuffix(host) or host


def site_of(origin: str) -> str:
    """``scheme://registrable-domain`` of a serialised origin (no port)."""
    parts = urlsplit(origin)
    host = (parts.hostname or "").lower()
    return f"{parts.scheme}://{_registrable(host)}"


def group_by_site(origins: Iterable[str]) -> dict[str, list[str]]:
    """Origins grouped by site, each group and the groups in first-seen order."""
    groups: dict[str, list[str]] = {}
    for origin in origins:
        groups.setdefault(site_of(origin), []).append(origin)
    return groups
