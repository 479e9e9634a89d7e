"""Pure rules for the secrets catalogue: names, key names, host patterns, limits (SPEC §7).

A secret is a named credential of one or more string values under key names (``username``,
``password``…), a description, and the host patterns it may be typed on. This module checks
what a caller hands in and decides whether a page's host is allowed; it never stores, logs
or shows a value, and no error it raises holds one (SPEC §12).

Host patterns are lowercase host names, without scheme, port or path:

* ``app.example.test`` allows that host only;
* ``*.example.test`` allows every subdomain of ``example.test`` at any depth
  (``a.example.test``, ``a.b.example.test``) but not ``example.test`` itself. A wildcard
  cannot cover a public suffix (``*.com``, ``*.github.io``) or an IP address.

Patterns are normalised to lowercase. IPv6 literals and internationalised names in Unicode
form are not accepted (punycode ``xn--`` labels are).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from publicsuffixlist import PublicSuffixList

from sitekeep.errors import InvalidInput
from sitekeep.limits import MAX_DESCRIPTION, MAX_HOSTS, MAX_SECRET_KEYS, MAX_TEXT

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_HOSTS",
    "MAX_KEYS",
    "MAX_VALUE_CHARS",
    "SecretInfo",
    "check_description",
    "check_hosts",
    "check_key_name",
    "check_name",
    "check_pattern",
    "check_values",
    "host_allowed",
]

MAX_KEYS = MAX_SECRET_KEYS
MAX_VALUE_CHARS = MAX_TEXT
"""A secret value types within its bound (``browser.keys``); ``type`` text shares it."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# RFC 1123 §2.1 host name labels (letters, digits, hyphens; no hyphen at either end).
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_MAX_HOST_CHARS = 253


@dataclass(frozen=True, slots=True)
class SecretInfo:
    """What may be shown of a secret: never its values (SPEC §7).

    Attributes:
        name: the secret's name, unique in its tenant.
        description: free text for people, at most 500 characters.
        hosts: the host patterns it may be typed on, lowercase, in the order given.
        keys: the names of its values, in the order given.
        updated_at: when it was last written, seconds since the epoch.
    """

    name: str
    description: str
    hosts: tuple[str, ...]
    keys: tuple[str, ...]
    updated_at: float


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    return PublicSuffixList()


def check_name(name: str, field: str = "name") -> str:
    """``name`` if it is a valid secret name: 1–64 of ``[A-Za-z0-9._-]``, starting alnum.

    Raises:
        InvalidInput: naming ``field``; the message does not repeat the input.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(
            f"{field} must be 1–64 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit",
            field=field,
        )
    return name


def check_key_name(key: str, field: str) -> str:
    """``key`` if it is a valid key name: 1–64 of ``[A-Za-z0-9_.-]``.

    Raises:
        InvalidInput: naming ``field``.
    """
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise InvalidInput(
            f"{field}: key names are 1–64 letters, digits, '_', '.' or '-'", field=field
        )
    return key


def check_description(description: str) -> str:
    """``description`` if it is a string of at most 500 characters.

    Raises:
        InvalidInput: field ``description``.
    """
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise InvalidInput(
            f"description must be text of at most {MAX_DESCRIPTION} characters",
            field="description",
        )
    return description


def check_pattern(pattern: str, field: str = "hosts") -> str:
    """One host pattern, lowercased: ``host.name`` or ``*.domain.name`` (module docstring).

    Raises:
        InvalidInput: naming ``field`` (``hosts[2]``): a scheme, port, path, user, other
            wildcard, bad label, or a wildcard over a public suffix or IP address.
    """
    if not isinstance(pattern, str):
        raise InvalidInput(f"{field} must be a host pattern string", field=field)
    lowered = pattern.strip().lower()
    wildcard = lowered.startswith("*.")
    host = lowered[2:] if wildcard else lowered
    if any(c in host for c in ":/@?#"):
        raise InvalidInput(
            f"{field} must be a bare host like app.example.test or *.example.test, "
            "without scheme, port or path",
            field=field,
        )
    labels = host.split(".")
    if len(host) > _MAX_HOST_CHARS or not all(_LABEL.fullmatch(label) for label in labels):
        raise InvalidInput(
            f"{field} must be a host name like app.example.test, or *. followed by one "
            "(no other wildcards)",
            field=field,
        )
    if wildcard and (labels[-1].isdigit() or _psl().is_public(host)):
        raise InvalidInput(
            f"{field}: a wildcard must cover a registrable domain (*.example.test), "
            "not a public suffix or an IP address",
            field=field,
        )
    return lowered


def check_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """1–32 host patterns, each checked and lowercased, duplicates dropped, order kept.

    Raises:
        InvalidInput: field ``hosts`` for a wrong count or a non-list, ``hosts[i]`` for a bad
            pattern.
    """
    given = [] if isinstance(hosts, str | bytes) else list(hosts)
    if not 1 <= len(given) <= MAX_HOSTS:
        raise InvalidInput(
            f"hosts must be a list of 1–{MAX_HOSTS} patterns where the secret may be typed",
            field="hosts",
        )
    return tuple(dict.fromkeys(check_pattern(p, f"hosts[{i}]") for i, p in enumerate(given)))


def check_values(values: Mapping[str, object]) -> dict[str, str]:
    """1–32 values, each a non-empty string of at most 8192 characters under a valid key.

    Returns:
        A copy of ``values`` in the order given.

    Raises:
        InvalidInput: field ``values`` for a wrong count or a bad key name (not echoed),
            ``values.<key>`` for a bad value. The message never holds a value.
    """
    if not isinstance(values, Mapping) or not 1 <= len(values) <= MAX_KEYS:
        raise InvalidInput(f"values must map 1–{MAX_KEYS} key names to strings", field="values")
    checked: dict[str, str] = {}
    for key, value in values.items():
        # A malformed key is not echoed: it may be a value pasted in the wrong place.
        check_key_name(key, "values")
        field = f"values.{key}"
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_VALUE_CHARS:
            raise InvalidInput(
                f"{field} must be a non-empty string of at most {MAX_VALUE_CHARS} characters",
                field=field,
            )
        checked[key] = value
    return checked


def host_allowed(host: str, patterns: Iterable[str]) -> bool:
    """Whether a page's host may receive a secret allowed on ``patterns`` (SPEC §7).

    Args:
        host: the page URL's host name, without port (``urlsplit(url).hostname``); compared
            case-insensitively. An empty host (``about:blank``) is never allowed.
        patterns: checked patterns (:func:`check_pattern`).

    Returns:
        True when ``host`` equals an exact pattern, or is a strict subdomain of a ``*.``
        pattern's domain (``*.example.test`` allows ``a.b.example.test``, not
        ``example.test`` nor ``evilexample.test``).
    """
    host = host.lower()
    if not host or host.startswith(".") or ".." in host:
        return False  # not a host name a page can have; refuse rather than guess
    for pattern in patterns:
        if pattern.startswith("*."):
            suffix = pattern[1:]  # ".example.test": the dot makes a label boundary
            if host.endswith(suffix) and len(host) > len(suffix):
                return True
        elif host == pattern:
            return True
    return False
