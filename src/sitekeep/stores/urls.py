"""Store URLs: the one place that reads them (SPEC §13).

Every store is chosen by a URL, as in alisaifee/limits and litestar's ``stores``:

============================  ==========================================================
``memory://``                 this process's memory (tests, throwaway servers)
``sqlite:///path``            a SQLite file (the embedded default, in the data dir)
``postgresql://user@host/db`` PostgreSQL through psycopg 3 (also ``postgres://``,
                              ``postgresql+psycopg://``)
``redis://host:port/db``      Redis (also ``rediss://``); ``?prefix=`` names the key
                              namespace (default ``sitekeep:``); redis-py's own options
                              pass through (``max_connections``, ``timeout``: the pool)
============================  ==========================================================

:func:`parse_store_url` turns a URL into a :class:`StoreUrl`; every error names the setting
the URL came from and never repeats the URL (it may hold a password).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sitekeep.errors import InvalidInput

__all__ = ["Scheme", "StoreUrl", "parse_store_url"]

Scheme = Literal["memory", "sqlite", "postgresql", "redis"]

_SCHEMES: dict[str, Scheme] = {
    "memory": "memory",
    "sqlite": "sqlite",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "postgresql+psycopg": "postgresql",
    "redis": "redis",
    "rediss": "redis",
}
DEFAULT_REDIS_PREFIX = "sitekeep:"


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A parsed store URL.

    Attributes:
        scheme: which backend.
        url: the URL the backend's client takes: SQLAlchemy's (``postgresql+psycopg://``,
            ``sqlite:///path``) or redis-py's (without sitekeep's own ``prefix``).
        path: the SQLite file (None for the other schemes).
        prefix: the Redis key namespace (empty for the other schemes).
    """

    scheme: Scheme
    url: str
    path: Path | None = None
    prefix: str = ""

    @property
    def is_sql(self) -> bool:
        """Whether SQLAlchemy opens it (``memory://`` is an in-memory SQLite database)."""
        return self.scheme in ("memory", "sqlite", "postgresql")

    @property
    def sqlalchemy_url(self) -> str:
        """The URL for :func:`sqlalchemy.create_engine`."""
        return "sqlite://" if self.scheme == "memory" else self.url


def parse_store_url(url: str, setting: str, *, allowed: tuple[Scheme, ...]) -> StoreUrl:
    """The store ``url`` names.

    Args:
        setting: the variable it came from (``SITEKEEP_SESSION_STORE``), named in errors.
        allowed: the schemes this kind of store has backends for.

    Raises:
        InvalidInput: an unknown or unsupported scheme, a SQLite URL without a path, or a
            Redis prefix that is empty; ``field`` is ``setting``.
    """
    scheme_text, sep, _ = url.partition("://")
    scheme = _SCHEMES.get(scheme_text.lower()) if sep else None
    if scheme is None or scheme not in allowed:
        names = ", ".join(_example(s) for s in allowed)
        raise InvalidInput(f"{setting} must be one of {names}", field=setting)
    if scheme == "memory":
        return StoreUrl("memory", "memory://")
    if scheme == "sqlite":
        return _sqlite(url, setting)
    if scheme == "postgresql":
        rest = url.partition("://")[2]
        return StoreUrl("postgresql", f"postgresql+psycopg://{rest}")
    return _redis(url, setting)


def _example(scheme: Scheme) -> str:
    return {
        "memory": "memory://",
        "sqlite": "sqlite:///path",
        "postgresql": "postgresql://user@host/db",
        "redis": "redis://host:6379/0",
    }[scheme]


def _sqlite(url: str, setting: str) -> StoreUrl:
    if not url.startswith("sqlite:///") or url == "sqlite:///":
        raise InvalidInput(f"{setting} must be sqlite:///path (three slashes)", field=setting)
    path = url.removeprefix("sqlite:///")
    if "?" in path:
        raise InvalidInput(f"{setting}: a sqlite:/// URL takes no options", field=setting)
    return StoreUrl("sqlite", f"sqlite:///{path}", path=Path(path))


def _redis(url: str, setting: str) -> StoreUrl:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefixes = [v for k, v in query if k == "prefix"]
    prefix = prefixes[-1] if prefixes else DEFAULT_REDIS_PREFIX
    if not prefix:
        raise InvalidInput(f"{setting}: prefix= must not be empty", field=setting)
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    return StoreUrl("redis", urlunsplit(parts._replace(query=rest)), prefix=prefix)
