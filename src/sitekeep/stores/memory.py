"""``memory://`` — a session store in this process's memory (tests, throwaway servers)."""

from __future__ import annotations

from collections.abc import Sequence

from sitekeep.stores.base import Clock, Versioned, system_clock

__all__ = ["MemoryStore"]


class MemoryStore:
    """A dict of (value, expiry, revision); see ``SessionStore`` for the contract."""

    def __init__(self, clock: Clock = system_clock) -> None:
        self._clock = clock
        self._data: dict[str, tuple[bytes, float | None, int]] = {}

    def _live(self, key: str) -> tuple[bytes, float | None, int] | None:
        item = self._data.get(key)
        if item is not None and item[1] is not None and item[1] <= self._clock():
            del self._data[key]
            return None
        return item

    def _expiry(self, ttl: float | None) -> float | None:
        return None if ttl is None else self._clock() + ttl

    async def get(self, key: str) -> bytes | None:
        item = self._live(key)
        return item[0] if item else None

    async def read(self, key: str) -> Versioned | None:
        item = self._live(key)
        return Versioned(item[0], item[2]) if item else None

    async def read_many(self, keys: Sequence[str]) -> list[Versioned | None]:
        return [await self.read(key) for key in keys]

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        item = self._live(key)
        self._data[key] = (bytes(value), self._expiry(ttl), (item[2] if item else 0) + 1)

    async def write(
        self, key: str, value: bytes, *, ttl: float | None, revision: int
    ) -> int | None:
        item = self._live(key)
        if (item[2] if item else 0) != revision:
            return None
        self._data[key] = (bytes(value), self._expiry(ttl), revision + 1)
        return revision + 1

    async def delete(self, *keys: str) -> int:
        live = [k for k in dict.fromkeys(keys) if self._live(k) is not None]
        for key in live:
            del self._data[key]
        return len(live)

    async def expire(self, key: str, ttl: float, *, under: str | None = None) -> bool:
        for other in await self.keys(under) if under is not None else []:
            await self.expire(other, ttl)
        item = self._live(key)
        if item is None:
            return False
        self._data[key] = (item[0], self._clock() + ttl, item[2])
        return True

    async def keys(self, prefix: str) -> list[str]:
        return sorted(k for k in list(self._data) if k.startswith(prefix) and self._live(k))

    async def count(self, prefix: str) -> int:
        return sum(1 for k in list(self._data) if k.startswith(prefix) and self._live(k))

    async def aclose(self) -> None:
        self._data.clear()
