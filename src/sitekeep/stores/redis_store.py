"""``redis://host:port/db`` — the session store for several replicas (SPEC §13).

Each key is a Redis hash under the URL's ``prefix``: ``v`` the value, ``r`` its revision and
``x`` its expiry time (seconds since the epoch, by the store's clock; absent: never). Every
write is one Lua script — so the value, its revision and its expiry change at once, and a
conditional write compares the revision in the same step — and sets the key's native
expiry (``PEXPIRE``), so Redis itself drops it when it expires. Reads treat a key whose
``x`` has passed as absent, which keeps expiry exact to the clock (and testable with a
controllable one).

Redis stopped: each call fails with :class:`~sitekeep.errors.StoreUnavailable` after
redis-py's few quick retries, having written nothing; started again, the next call
reconnects.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.exceptions import RedisError

from sitekeep.errors import StoreUnavailable
from sitekeep.stores.base import Clock, Versioned, system_clock

__all__ = ["RedisStore", "connect"]

T = TypeVar("T")

# KEYS[1]; ARGV: value, expires_at or "", ttl in ms or "", now, expected revision or "*".
_WRITE = """
local cur = redis.call('HMGET', KEYS[1], 'r', 'x')
local rev = tonumber(cur[1]) or 0
if cur[2] and tonumber(cur[2]) <= tonumber(ARGV[4]) then rev = 0 end
if ARGV[5] ~= '*' and rev ~= tonumber(ARGV[5]) then return -1 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'r', rev + 1)
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'x', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return rev + 1
"""

# KEYS[1]; ARGV: expires_at, ttl in ms, now.
_EXPIRE = """
local x = redis.call('HGET', KEYS[1], 'x')
if redis.call('HEXISTS', KEYS[1], 'v') == 0 then return 0 end
if x and tonumber(x) <= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], 'x', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

# KEYS: the keys; ARGV[1]: now. Returns how many were live.
_DELETE = """
local live = 0
for _, key in ipairs(KEYS) do
  local cur = redis.call('HMGET', key, 'v', 'x')
  if cur[1] and not (cur[2] and tonumber(cur[2]) <= tonumber(ARGV[1])) then live = live + 1 end
  redis.call('DEL', key)
end
return live
"""

_GLOB_SPECIAL = "\\*?[]"


def connect(url: str) -> Redis:
    """A redis-py asyncio client for ``url`` with short timeouts (a stopped Redis is a
    503 within seconds, not a hang)."""
    client: Redis = Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    return client


def _glob_literal(text: str) -> str:
    return "".join("\\" + c if c in _GLOB_SPECIAL else c for c in text)


class RedisStore:
    """Hashes under ``prefix`` in one Redis database; see ``SessionStore`` for the contract."""

    def __init__(self, client: Redis, prefix: str, clock: Clock = system_clock) -> None:
        self._client = client
        self._prefix = prefix
        self._clock = clock
        self._write = client.register_script(_WRITE)
        self._expire = client.register_script(_EXPIRE)
        self._delete = client.register_script(_DELETE)

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        try:
            return await fn()
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"the Redis session store failed: {type(exc).__name__}") from exc

    def _live(self, fields: list[Any]) -> bool:
        value, expires = fields[0], fields[-1]
        return value is not None and (expires is None or float(expires) > self._clock())

    async def get(self, key: str) -> bytes | None:
        found = await self.read(key)
        return found.value if found else None

    async def read(self, key: str) -> Versioned | None:
        fields: list[Any] = await self._call(
            lambda: self._client.hmget(self._prefix + key, ["v", "r", "x"])
        )
        if not self._live(fields):
            return None
        return Versioned(bytes(fields[0]), int(fields[1] or 0))

    async def read_many(self, keys: Sequence[str]) -> list[Versioned | None]:
        if not keys:
            return []

        async def read() -> list[Any]:
            async with self._client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.hmget(self._prefix + key, ["v", "r", "x"])
                return list(await pipe.execute())

        return [
            Versioned(bytes(f[0]), int(f[1] or 0)) if self._live(f) else None
            for f in await self._call(read)
        ]

    def _args(self, value: bytes, ttl: float | None, expected: str) -> list[bytes | str | int]:
        now = self._clock()
        if ttl is None:
            return [value, "", "", repr(now), expected]
        return [value, repr(now + ttl), max(1, math.ceil(ttl * 1000)), repr(now), expected]

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        args = self._args(value, ttl, "*")
        await self._call(lambda: self._write(keys=[self._prefix + key], args=args))

    async def write(
        self, key: str, value: bytes, *, ttl: float | None, revision: int
    ) -> int | None:
        args = self._args(value, ttl, str(revision))
        new = int(await self._call(lambda: self._write(keys=[self._prefix + key], args=args)))
        return None if new < 0 else new

    async def delete(self, *keys: str) -> int:
        if not keys:
            return 0
        names = [self._prefix + k for k in dict.fromkeys(keys)]
        now: list[bytes | str | int] = [repr(self._clock())]
        return int(await self._call(lambda: self._delete(keys=names, args=now)))

    async def expire(self, key: str, ttl: float) -> bool:
        now = self._clock()
        args: list[bytes | str | int] = [repr(now + ttl), max(1, math.ceil(ttl * 1000)), repr(now)]
        return bool(await self._call(lambda: self._expire(keys=[self._prefix + key], args=args)))

    async def keys(self, prefix: str) -> list[str]:
        pattern = _glob_literal(self._prefix + prefix) + "*"

        async def scan() -> list[str]:
            names = [name async for name in self._client.scan_iter(match=pattern, count=1000)]
            if not names:
                return []
            async with self._client.pipeline(transaction=False) as pipe:
                for name in names:
                    pipe.hmget(name, ["r", "x"])
                fields = await pipe.execute()
            cut = len(self._prefix)
            return sorted(
                bytes(name).decode()[cut:]
                for name, got in zip(names, fields, strict=True)
                if self._live(got)
            )

        return await self._call(scan)

    async def aclose(self) -> None:
        await self._client.aclose()
