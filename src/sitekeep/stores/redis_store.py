"""``redis://host:port/db`` — the session store for several replicas (SPEC §13).

Each key is a Redis hash under the URL's ``prefix``: ``v`` the value, ``r`` its revision and
``x`` its expiry time (seconds since the epoch, by the store's clock; absent: never). Every
write is one Lua script — so the value, its revision and its expiry change at once, and a
conditional write compares the revision in the same step — and sets the key's native
expiry (``PEXPIRE``), so Redis itself drops it when it expires. Reads treat a key whose
``x`` has passed as absent, which keeps expiry exact to the clock (and testable with a
controllable one).

Listing and counting never scan the database: each key is also a member of its group's
sorted set (the group: the key up to its last ``/``, so ``session/<tenant>/`` holds one
tenant's records), scored by its expiry time (``+inf``: never), and each group's name is
in one lexically ordered set of groups. The same script that writes, re-times or deletes
a hash updates its member, so the index never disagrees with a write. A listing leaves out
the members whose score has passed on its clock, and removes those among them whose hash
Redis no longer holds — never one whose hash lives: the replicas' clocks differ, and one
running ahead would otherwise drop a key the others still list (the hash's native TTL,
kept by the server's clock, is the one authority on when it is gone). A listing so costs
what the groups under the prefix hold, not what the database holds. The index keys
are the ``prefix`` followed by byte 0xFF, which no UTF-8 key can hold: no key collides with
them. Keys written before the index existed are indexed once, by the first listing of a
process that finds the index unmarked.

Redis stopped: each call fails with :class:`~sitekeep.errors.StoreUnavailable` after
redis-py's few quick retries, having written nothing; started again, the next call
reconnects.

Connections: one blocking pool per client (redis-py's ``BlockingConnectionPool``) of
``POOL_SIZE`` connections. A call takes one for its round trip; a burst of more calls than
that waits for a free one (up to ``POOL_WAIT`` seconds, then ``StoreUnavailable``: a 503)
rather than failing at once, as redis-py's default pool does past its 100. The URL may set
both: ``?max_connections=…&timeout=…`` (seconds).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from sitekeep.errors import StoreUnavailable
from sitekeep.stores.base import Clock, Versioned, system_clock

__all__ = ["POOL_SIZE", "POOL_WAIT", "RedisStore", "connect", "pooled", "unavailable"]

T = TypeVar("T")

# KEYS: the hash, its group's sorted set, the set of groups.
# ARGV: value, expires_at or "", ttl in ms or "", now, expected revision or "*", the key,
# its group.
_WRITE = """
local cur = redis.call('HMGET', KEYS[1], 'r', 'x')
local rev = tonumber(cur[1]) or 0
if cur[2] and tonumber(cur[2]) <= tonumber(ARGV[4]) then rev = 0 end
if ARGV[5] ~= '*' and rev ~= tonumber(ARGV[5]) then return -1 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'r', rev + 1)
local score = '+inf'
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'x', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  score = ARGV[2]
end
redis.call('ZADD', KEYS[2], score, ARGV[6])
redis.call('ZADD', KEYS[3], 0, ARGV[7])
return rev + 1
"""

# KEYS: the hash, its group's sorted set, the set of groups.
# ARGV: expires_at, ttl in ms, now, the key, its group.
_EXPIRE = """
local x = redis.call('HGET', KEYS[1], 'x')
if redis.call('HEXISTS', KEYS[1], 'v') == 0 then return 0 end
if x and tonumber(x) <= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], 'x', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[3], 0, ARGV[5])
return 1
"""

# KEYS: the set of groups, then per key its hash and its group's sorted set.
# ARGV: now, then per key the key and its group. Returns how many were live.
_DELETE = """
local live = 0
for i = 2, #KEYS, 2 do
  local key, zset = KEYS[i], KEYS[i + 1]
  local cur = redis.call('HMGET', key, 'v', 'x')
  if cur[1] and not (cur[2] and tonumber(cur[2]) <= tonumber(ARGV[1])) then live = live + 1 end
  redis.call('DEL', key)
  redis.call('ZREM', zset, ARGV[i])
  if redis.call('ZCARD', zset) == 0 then redis.call('ZREM', KEYS[1], ARGV[i + 1]) end
end
return live
"""

# KEYS[1]: the set of groups. ARGV: now, the name of a group's sorted set less the group,
# the hashes' prefix, the listing's prefix, that prefix's own group, "list", "count" or
# "expire", and for "expire" the new expires_at and the ttl in ms.
# Prunes the members whose expiry has passed on the caller's clock and whose hash Redis no
# longer holds (and the groups left empty), then lists (or counts, or re-times) the keys
# still live on the caller's clock: those of the prefix's own group that start with the
# prefix, and every key of the groups whose names start with it.
_LIST = """
local now, zname, hprefix, want, own, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local out, count = {}, 0
local function retime(zset, key)
  redis.call('HSET', hprefix .. key, 'x', ARGV[7])
  redis.call('PEXPIRE', hprefix .. key, ARGV[8])
  redis.call('ZADD', zset, ARGV[7], key)
end
local function visit(group, filter)
  local zset = zname .. group
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', zset, '-inf', now)) do
    if redis.call('EXISTS', hprefix .. key) == 0 then redis.call('ZREM', zset, key) end
  end
  if not filter and mode == 'count' then
    count = count + redis.call('ZCOUNT', zset, '(' .. now, '+inf')
  else
    for _, key in ipairs(redis.call('ZRANGEBYSCORE', zset, '(' .. now, '+inf')) do
      if not filter or string.sub(key, 1, #want) == want then
        if redis.call('EXISTS', hprefix .. key) == 1 then
          count = count + 1
          if mode == 'expire' then retime(zset, key) else out[#out + 1] = key end
        else
          redis.call('ZREM', zset, key)
        end
      end
    end
  end
  if redis.call('ZCARD', zset) == 0 then redis.call('ZREM', KEYS[1], group) end
end
visit(own, own ~= want)
local low = '-'
if want ~= '' then low = '[' .. want end
for _, group in ipairs(redis.call('ZRANGEBYLEX', KEYS[1], low, '(' .. want .. '\\255')) do
  if group ~= own then visit(group, false) end
end
if mode ~= 'list' then return count end
return out
"""

_GLOB_SPECIAL = "\\*?[]"

_INDEX = b"\xff"
"""After the prefix, what starts the index's keys: no UTF-8 key holds this byte."""


POOL_SIZE = 100
"""Redis connections one client (one replica's session store and locks) keeps at most."""

POOL_WAIT = 5.0
"""Seconds a call waits for a free pooled connection before it is a 503."""


def pooled(url: str, **options: Any) -> Redis:
    """A redis-py asyncio client for ``url`` on a blocking pool of ``POOL_SIZE``
    connections: a call waits up to ``POOL_WAIT`` s for a free one, then fails with
    redis-py's ``ConnectionError`` (:func:`unavailable` names it). The URL's
    ``max_connections`` and ``timeout`` override both; ``options`` go to redis-py."""
    pool = BlockingConnectionPool.from_url(
        url, max_connections=POOL_SIZE, timeout=POOL_WAIT, **options
    )
    return Redis.from_pool(pool)  # the client owns the pool: aclose() closes it


def connect(url: str) -> Redis:
    """:func:`pooled` with short socket timeouts: a stopped Redis is a 503 within seconds,
    not a hang."""
    return pooled(url, socket_connect_timeout=5, socket_timeout=5)


def unavailable(what: str, exc: RedisError | OSError) -> StoreUnavailable:
    """The 503 for a failed Redis call on ``what``: the exception's type only (a command's
    arguments may hold values), or, when the call waited past its pool's timeout for a
    connection (every one busy), that.

    redis-py's blocking pool raises its ``ConnectionError`` from the wait's timeout; a
    failed connect or read raises its own ``TimeoutError`` or a ``ConnectionError`` not
    caused by one.
    """
    if isinstance(exc, RedisConnectionError) and isinstance(exc.__cause__, TimeoutError):
        return StoreUnavailable(
            f"{what} failed: no free Redis connection within the pool's timeout "
            "(every pooled connection was busy)"
        )
    return StoreUnavailable(f"{what} failed: {type(exc).__name__}")


def _glob_literal(text: str) -> str:
    return "".join("\\" + c if c in _GLOB_SPECIAL else c for c in text)


def _group_of(key: str) -> str:
    """The index group of ``key``: the key up to and including its last ``/`` (empty
    when it has none), e.g. ``session/acme/`` for ``session/acme/k1``."""
    return key[: key.rfind("/") + 1]


class RedisStore:
    """Hashes under ``prefix`` in one Redis database; see ``SessionStore`` for the contract."""

    def __init__(self, client: Redis, prefix: str, clock: Clock = system_clock) -> None:
        self._client = client
        self._prefix = prefix
        self._clock = clock
        self._write = client.register_script(_WRITE)
        self._expire = client.register_script(_EXPIRE)
        self._delete = client.register_script(_DELETE)
        self._list = client.register_script(_LIST)
        raw = prefix.encode()
        self._groups = raw + _INDEX + b"groups"
        self._index = raw + _INDEX
        self._group = raw + _INDEX + b"group:"
        self._marker = raw + _INDEX + b"indexed"
        self._indexed = False

    def _index_keys(self, key: str) -> list[bytes | str]:
        """The hash of ``key``, its group's sorted set and the set of groups."""
        return [self._prefix + key, self._group + _group_of(key).encode(), self._groups]

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        try:
            return await fn()
        except (RedisError, OSError) as exc:
            raise unavailable("the Redis session store", exc) from exc

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
        args = [*self._args(value, ttl, "*"), key, _group_of(key)]
        await self._call(lambda: self._write(keys=self._index_keys(key), args=args))

    async def write(
        self, key: str, value: bytes, *, ttl: float | None, revision: int
    ) -> int | None:
        args = [*self._args(value, ttl, str(revision)), key, _group_of(key)]
        new = int(await self._call(lambda: self._write(keys=self._index_keys(key), args=args)))
        return None if new < 0 else new

    async def delete(self, *keys: str) -> int:
        if not keys:
            return 0
        names: list[bytes | str] = [self._groups]
        args: list[bytes | str | int] = [repr(self._clock())]
        for key in dict.fromkeys(keys):
            names += self._index_keys(key)[:2]
            args += [key, _group_of(key)]
        return int(await self._call(lambda: self._delete(keys=names, args=args)))

    async def expire(self, key: str, ttl: float, *, under: str | None = None) -> bool:
        """The key's script, and with ``under`` the listing's script re-timing every key
        under it, sent together: one round trip."""
        now = self._clock()
        at, ms = repr(now + ttl), max(1, math.ceil(ttl * 1000))
        args: list[bytes | str | int] = [at, ms, repr(now), key, _group_of(key)]
        if under is None:
            return bool(
                await self._call(lambda: self._expire(keys=self._index_keys(key), args=args))
            )
        await self._index_once()

        async def both() -> list[Any]:
            async with self._client.pipeline(transaction=False) as pipe:
                await self._expire(keys=self._index_keys(key), args=args, client=pipe)
                listing = self._listing_args(under, "expire", at, ms)
                await self._list(keys=[self._groups], args=listing, client=pipe)
                return list(await pipe.execute())

        return bool((await self._call(both))[0])

    async def keys(self, prefix: str) -> list[str]:
        found = await self._listing(prefix, "list")
        return sorted(bytes(key).decode() for key in found)

    async def count(self, prefix: str) -> int:
        """Live keys starting with ``prefix``: one script, as long as the groups under the
        prefix are many (each counted by its size once its expired members are pruned)."""
        return int(await self._listing(prefix, "count"))

    def _listing_args(self, prefix: str, mode: str, *retimed: str | int) -> list[bytes | str | int]:
        return [
            repr(self._clock()),
            self._group,
            self._prefix,
            prefix,
            _group_of(prefix),
            mode,
            *retimed,
        ]

    async def _listing(self, prefix: str, mode: str) -> Any:
        await self._index_once()
        args = self._listing_args(prefix, mode)
        return await self._call(lambda: self._list(keys=[self._groups], args=args))

    async def _index_once(self) -> None:
        """Index the keys written before the index existed (once per prefix: a marker key
        says it was done; a key deleted meanwhile is dropped by the next listing)."""
        if self._indexed:
            return

        async def backfill() -> None:
            if await self._client.exists(self._marker):
                return
            pattern = _glob_literal(self._prefix) + "*"
            cut = len(self._prefix.encode())
            async for name in self._client.scan_iter(match=pattern, count=1000, _type="hash"):
                raw = bytes(name)
                value, expires = await self._client.hmget(raw, ["v", "x"])
                if raw.startswith(self._index) or value is None:
                    continue  # the index itself, or not a record
                key = raw[cut:].decode()
                score = float(expires) if expires is not None else math.inf
                async with self._client.pipeline(transaction=True) as pipe:
                    pipe.zadd(self._group + _group_of(key).encode(), {key: score})
                    pipe.zadd(self._groups, {_group_of(key): 0})
                    await pipe.execute()
            await self._client.set(self._marker, b"1")

        await self._call(backfill)
        self._indexed = True

    async def aclose(self) -> None:
        await self._client.aclose()
