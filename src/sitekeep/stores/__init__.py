"""Stores: the session-store port and its backends, chosen by URL; the blob cipher."""

from __future__ import annotations

from sitekeep.errors import InvalidInput
from sitekeep.stores.base import Clock, SessionStore, system_clock
from sitekeep.stores.memory import MemoryStore
from sitekeep.stores.sqlite import SqliteStore

__all__ = ["SessionStore", "open_session_store"]


def open_session_store(url: str, clock: Clock = system_clock) -> SessionStore:
    """The backend named by ``url``: ``memory://`` or ``sqlite:///path``.

    Raises:
        InvalidInput: an unknown scheme (field ``SITEKEEP_SESSION_STORE``).
    """
    if url.startswith("memory://"):
        return MemoryStore(clock)
    if url.startswith("sqlite:///"):
        return SqliteStore(url, clock)
    raise InvalidInput(
        f"unknown session store {url.split(':', 1)[0]!r}: use memory:// or sqlite:///path",
        field="SITEKEEP_SESSION_STORE",
    )
