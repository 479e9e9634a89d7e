"""The session-store port: a key-value store of bytes with expiry (SPEC §13).

Stores take and return bytes: serialisation and encryption live above them, so no backend
ever sees a plaintext value. One module per backend, chosen by URL (``open_session_store``);
one contract suite (``tests/contracts``) runs against every backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "SessionStore", "system_clock"]

Clock = Callable[[], float]
"""Seconds since the epoch; tests pass a controllable one."""


def system_clock() -> float:
    return time.time()


class SessionStore(Protocol):
    """Bytes under string keys, each with an optional time to live.

    Every method raises ``sitekeep.errors.StoreUnavailable`` when the backend cannot be
    reached, and then has written nothing.
    """

    async def get(self, key: str) -> bytes | None:
        """The value, or None when absent or expired."""
        ...

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Write ``value``; it expires ``ttl`` seconds from now (never when None)."""
        ...

    async def delete(self, *keys: str) -> int:
        """Delete the keys; returns how many existed."""
        ...

    async def expire(self, key: str, ttl: float) -> bool:
        """Move the key's expiry to ``ttl`` seconds from now; False when it is absent."""
        ...

    async def keys(self, prefix: str) -> list[str]:
        """Live keys starting with ``prefix``, sorted."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
