"""Journal streams in Redis Streams, for several API replicas (SPEC §8, §13).

One stream per session, ``<prefix>journal/<tenant>/<key>`` (names percent-encoded); each
entry holds the record's ``id`` and its line ``r``. An append is one Lua script — read the
last entry's id, compare it with the new record's parent, ``XADD`` — so it is atomic on the
server and replicas that race never fork a branch by accident (``JournalConflict``).

Durability — what an acknowledged append survives — is Redis's configuration, and this
module says so rather than promising more:

- ``appendonly yes`` + ``appendfsync always``: Redis writes and fsyncs its AOF before it
  replies, so an acknowledged append survives a crash of Redis and of its machine.
- ``appendfsync everysec`` (Redis's default with AOF): it survives a crash of the Redis
  process (the AOF was written before the reply); a power cut can lose about a second.
- no AOF (RDB snapshots or nothing): a crash loses everything since the last snapshot.
- ``replicas=N`` in the URL: after the ``XADD`` the append runs ``WAIT N`` and fails —
  removing the entry again with ``XDEL`` — unless N replicas acknowledged it within
  ``wait_timeout`` seconds (default 1). ``WAIT`` confirms the replicas *received* the
  entry, not that they fsynced it (``WAITAOF`` in Redis 7.2+ would; 7.0 has none).

:meth:`RedisJournal.server_durability` reads the server's AOF settings so ``doctor`` and
the tests can state which case holds. ``tests/contracts/test_journal_durability.py``
kills a private ``redis-server`` with ``-9`` under both settings and checks what came back.

Replay reads with a synchronous client in a worker thread, in pages of
:data:`PAGE` entries, so memory stays at one page of records whatever the stream's length.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
import redis.asyncio

from sitekeep.errors import InvalidInput, JournalConflict, JournalUnavailable, RecordTooLarge
from sitekeep.journal.base import Entry, JournalKey, decode_name, encode_name
from sitekeep.journal.framing import Line, Oversize, Progress, Torn
from sitekeep.journal.records import MAX_RECORD
from sitekeep.stores.redis_store import pooled

__all__ = ["PAGE", "RedisJournal", "RedisJournalUrl", "parse_url"]

PAGE: Final = 256
"""Entries per ``XRANGE`` page when replaying."""
_SEQ_BITS: Final = 20

_APPEND: Final = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local head = ''
if #last > 0 then
  local fields = last[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'id' then head = fields[i + 1] end
  end
end
if head ~= ARGV[2] then return {0, head} end
return {1, redis.call('XADD', KEYS[1], '*', 'id', ARGV[1], 'r', ARGV[3])}
"""


@dataclass(frozen=True, slots=True)
class RedisJournalUrl:
    """A journal URL taken apart: the client's URL and this backend's own options."""

    client_url: str
    prefix: str
    replicas: int
    wait_timeout: float


def parse_url(url: str) -> RedisJournalUrl:
    """``redis://host:port/db?prefix=sitekeep:&replicas=0&wait_timeout=1`` taken apart;
    the other query parameters stay for redis-py (``redis.from_url``).

    Kept in one function so a shared Redis URL parser can replace it.

    Raises:
        InvalidInput: not a ``redis://``/``rediss://`` URL, or a bad option (``field``
            names it).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise InvalidInput(
            "a Redis journal URL starts with redis:// or rediss://", field="journal_url"
        )
    own = {"prefix": "sitekeep:", "replicas": "0", "wait_timeout": "1"}
    rest = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in own:
            own[name] = value
        else:
            rest.append((name, value))
    try:
        replicas, wait_timeout = int(own["replicas"]), float(own["wait_timeout"])
    except ValueError as exc:
        raise InvalidInput(
            "replicas is a whole number, wait_timeout seconds", field="journal_url"
        ) from exc
    if replicas < 0 or not (math.isfinite(wait_timeout) and wait_timeout > 0):
        raise InvalidInput("replicas ≥ 0 and wait_timeout > 0", field="journal_url")
    client_url = urlunsplit(parts._replace(query=urlencode(rest)))
    return RedisJournalUrl(client_url, own["prefix"], replicas, wait_timeout)


class RedisJournal:
    """Journal streams in Redis (see the module docstring).

    Args:
        url: ``redis://…`` with the options of :func:`parse_url`.
        max_record: the cap on one line in bytes, newline included.
    """

    def __init__(self, url: str, *, max_record: int = MAX_RECORD) -> None:
        self.options = parse_url(url)
        self.max_record = max_record
        # A blocking pool: a burst of appends past its size waits for a connection.
        self._client: redis.asyncio.Redis = pooled(self.options.client_url)
        self._append_script = self._client.register_script(_APPEND)
        replicas = self.options.replicas
        self.durability = (
            f"redis: acknowledged, then WAIT for {replicas} replica(s)"
            if replicas
            else "redis: acknowledged by the server (its AOF settings decide the rest)"
        )

    def stream(self, key: JournalKey) -> str:
        """The Redis key of ``key``'s stream."""
        return f"{self.options.prefix}journal/{encode_name(key.tenant)}/{encode_name(key.key)}"

    async def append(self, key: JournalKey, line: bytes, *, record: str, parent: str | None) -> str:
        if len(line) > self.max_record:
            raise RecordTooLarge(size=len(line), cap=self.max_record)
        if not line.endswith(b"\n") or b"\n" in line[:-1]:
            raise ValueError("a journal line is one record ending in a newline")
        stream = self.stream(key)
        try:
            done, value = await self._append_script(
                keys=[stream], args=[record, parent or "", line[:-1]]
            )
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc
        if not done:
            raise JournalConflict(expected=parent, head=_text(value) or None)
        position = _text(value)
        if self.options.replicas:
            await self._wait_replicas(stream, position)
        return position

    async def _wait_replicas(self, stream: str, position: str) -> None:
        wanted, timeout = self.options.replicas, self.options.wait_timeout
        cause: redis.RedisError | None = None
        try:
            acked = int(await self._client.wait(wanted, int(timeout * 1000)))
        except redis.RedisError as exc:
            acked, cause = 0, exc
        if acked >= wanted:
            return
        # If even XDEL fails the entry stays: a replay shows the begin unsettled, the
        # safe reading.
        with contextlib.suppress(redis.RedisError):
            await self._client.xdel(stream, position)
        raise JournalUnavailable(
            f"{acked} of {wanted} Redis replica(s) acknowledged the journal record within "
            f"{timeout:g} s; it was withdrawn"
        ) from cause

    async def server_durability(self) -> str:
        """What the server's persistence settings make of an acknowledged append:
        ``aof-always``, ``aof-everysec``, ``aof-no``, ``memory`` or ``unknown`` (the server
        refuses ``CONFIG GET``, as managed services do)."""
        try:
            info = await self._client.info("persistence")
            if not int(info.get("aof_enabled", 0)):
                return "memory"
            config = await self._client.config_get("appendfsync")
        except redis.RedisError:
            return "unknown"
        return f"aof-{_text(config.get('appendfsync', 'unknown'))}"

    async def head(self, key: JournalKey) -> str | None:
        try:
            last = await self._client.xrevrange(self.stream(key), count=1)
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc
        return _text(_fields(last[0])[b"id"]) or None if last else None

    async def entries(self, key: JournalKey, *, after: str | None, limit: int) -> list[Entry]:
        if limit <= 0:
            return []
        start = "-" if after is None else f"({_cursor(after)}"
        try:
            found = await self._client.xrange(self.stream(key), min=start, count=limit)
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc
        return _entries(found)

    async def last(self, key: JournalKey, limit: int) -> list[Entry]:
        if limit <= 0:
            return []
        try:
            found = await self._client.xrevrange(self.stream(key), count=limit)
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc
        return _entries(found)[::-1]

    def source(self, key: JournalKey) -> RedisSource | None:
        source = RedisSource(self.options.client_url, self.stream(key), self.max_record)
        if source.end is None:
            source.close()
            return None
        return source

    async def keys(self, tenant: str | None = None) -> list[JournalKey]:
        base = f"{self.options.prefix}journal/"
        pattern = _glob_escape(base) + (f"{encode_name(tenant)}/*" if tenant is not None else "*")
        found: list[JournalKey] = []
        try:
            async for raw in self._client.scan_iter(match=pattern, count=500, _type="stream"):
                tenant_part, _, key_part = _text(raw).removeprefix(base).partition("/")
                found.append(JournalKey(decode_name(tenant_part), decode_name(key_part)))
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc
        return sorted(found)

    async def remove(self, key: JournalKey) -> bool:
        try:
            return bool(await self._client.delete(self.stream(key)))
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc

    async def aclose(self) -> None:
        await self._client.aclose()


class RedisSource:
    """One stream read synchronously, up to its last entry when opened (replay)."""

    def __init__(self, client_url: str, stream: str, max_record: int) -> None:
        self._client = redis.Redis.from_url(client_url)
        self._stream = stream
        self.max_record = max_record
        try:
            last = self._client.xrevrange(stream, count=1)
        except redis.RedisError as exc:
            self._client.close()
            raise _unavailable(exc) from exc
        self.end: str | None = _text(last[0][0]) if last else None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RedisSource:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _item(self, entry_id: bytes, fields: dict[bytes, bytes], number: int) -> Line | Oversize:
        data = fields.get(b"r", b"")
        position = _position(_text(entry_id))
        if len(data) + 1 > self.max_record:
            return Oversize(position, number, len(data) + 1)
        return Line(position, number, data)

    def scan(
        self, progress: Progress | None = None, *, after: int | None = None
    ) -> Iterator[Line | Oversize | Torn]:
        if self.end is None:
            return
        start, number = "-" if after is None else f"({_entry_id(after)}", 0
        while True:
            page = self._page(self._client.xrange, min=start, max=self.end, count=PAGE)
            for entry_id, fields in page:
                number += 1
                if progress is not None:
                    progress(len(fields.get(b"r", b"")) + 1)
                yield self._item(entry_id, fields, number)
            if len(page) < PAGE:
                return
            start = f"({_text(page[-1][0])}"

    def scan_back(self, before: int) -> Iterator[Line | Oversize]:
        end = f"({_entry_id(before)}"
        while True:
            page = self._page(self._client.xrevrange, max=end, min="-", count=PAGE)
            for entry_id, fields in page:
                yield self._item(entry_id, fields, 0)
            if len(page) < PAGE:
                return
            end = f"({_text(page[-1][0])}"

    def read(self, position: int) -> bytes | None:
        entry_id = _entry_id(position)
        found = self._page(self._client.xrange, min=entry_id, max=entry_id, count=1)
        if not found:
            return None
        data: bytes = found[0][1].get(b"r", b"")
        return data if len(data) + 1 <= self.max_record else None

    def _page(self, command: Any, **kwargs: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
        try:
            page: list[tuple[bytes, dict[bytes, bytes]]] = command(self._stream, **kwargs)
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc
        return page


def _fields(entry: Any) -> dict[bytes, bytes]:
    fields: dict[bytes, bytes] = entry[1] or {}
    return fields


def _entries(found: Any) -> list[Entry]:
    return [Entry(_text(entry[0]), _fields(entry).get(b"r", b"")) for entry in found or ()]


def _position(entry_id: str) -> int:
    """A stream entry id ``ms-seq`` as one growing integer (replay's positions)."""
    ms, _, seq = entry_id.partition("-")
    number = int(seq or 0)
    if number >= 1 << _SEQ_BITS:
        raise JournalUnavailable(f"stream entry {entry_id} has a sequence past 2^{_SEQ_BITS}")
    return (int(ms) << _SEQ_BITS) | number


def _entry_id(position: int) -> str:
    return f"{position >> _SEQ_BITS}-{position & ((1 << _SEQ_BITS) - 1)}"


def _cursor(after: str) -> str:
    if not re.fullmatch(r"[0-9]{1,20}-[0-9]{1,20}", after):
        raise InvalidInput("after is a position from an earlier page", field="after")
    return after


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _unavailable(exc: redis.RedisError) -> JournalUnavailable:
    return JournalUnavailable(f"the Redis journal is unavailable ({type(exc).__name__})")
