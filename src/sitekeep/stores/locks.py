"""Session locks shared across processes and machines (SPEC §13; ``SessionLocks``).

One call at a time per session, whichever process or replica takes it: a call that opens,
drives or closes a session's browser holds the session's lock. The backend goes with the
session store's URL (:func:`sitekeep.stores.open_session_locks`):

* ``memory://`` — :class:`ProcessLocks`: the store lives in one process, so does the lock.
* ``sqlite:///path`` — :class:`FileLocks`: one lock file per session in ``locks/`` beside
  the database (the data dir). ``flock`` is released by the kernel when its holder dies,
  so a killed ``sitekeep serve`` or ``sitekeep mcp`` never blocks a session.
* ``postgresql://`` — :class:`PostgresLocks`: a session-level advisory lock on a connection
  held for the call; PostgreSQL releases it when the holder's connection drops.
* ``redis://`` — :class:`RedisLocks`: redis-py's ``Lock`` (a lease with a random token), and
  a watchdog that renews it every third of its ``ttl`` while the call runs; a holder that
  dies stops renewing and its lease runs out.

Every backend first queues callers of one process on an ``asyncio.Lock``, so only one of
them polls the shared lock; waiting polls at most every 20 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio.to_thread
import sqlalchemy as sa
from filelock import AsyncFileLock
from filelock import Timeout as FileLockTimeout
from redis.asyncio import Redis
from redis.asyncio.lock import Lock
from redis.exceptions import LockError, RedisError

from sitekeep.errors import SessionBusy, StoreUnavailable
from sitekeep.stores.database import Database, guarded
from sitekeep.stores.redis_store import unavailable

__all__ = ["FileLocks", "PostgresLocks", "ProcessLocks", "RedisLocks"]

log = logging.getLogger(__name__)

POLL = 0.02
"""Seconds between two tries of a lock another process holds."""


class _KeyedLocks:
    """``asyncio.Lock`` per name, dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, name: str, wait: float) -> AsyncIterator[None]:
        lock, users = self._locks.get(name, (asyncio.Lock(), 0))
        self._locks[name] = (lock, users + 1)
        try:
            try:
                await asyncio.wait_for(lock.acquire(), timeout=max(wait, 1e-3))
            except TimeoutError:
                raise SessionBusy(wait) from None
            try:
                yield
            finally:
                lock.release()
        finally:
            lock, users = self._locks[name]
            if users == 1:
                del self._locks[name]
            else:
                self._locks[name] = (lock, users - 1)


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


class ProcessLocks:
    """Locks within this process only (``memory://``)."""

    def __init__(self) -> None:
        self._local = _KeyedLocks()

    def hold(self, name: str, *, wait: float) -> contextlib.AbstractAsyncContextManager[None]:
        return self._local.hold(name, wait)

    async def aclose(self) -> None:
        return None


class FileLocks:
    """A lock file per name in ``folder`` (``flock``; mode 0700 folder)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._local = _KeyedLocks()

    def _path(self, name: str) -> Path:
        # Hashed: a session key never becomes a path, and every name fits a file name.
        return self._folder / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.lock"

    @contextlib.asynccontextmanager
    async def hold(self, name: str, *, wait: float) -> AsyncIterator[None]:
        deadline = time.monotonic() + wait
        async with self._local.hold(name, wait):
            try:
                self._folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(f"the lock folder failed: {type(exc).__name__}") from exc
            lock = AsyncFileLock(
                str(self._path(name)),
                timeout=_remaining(deadline),
                poll_interval=POLL,
                run_in_executor=False,
                fallback_to_soft=False,
                preserve_lock_file=True,
                mode=0o600,
            )
            try:
                await lock.acquire()
            except FileLockTimeout:
                raise SessionBusy(wait) from None
            except OSError as exc:
                raise StoreUnavailable(f"the lock file failed: {type(exc).__name__}") from exc
            try:
                yield
            finally:
                await lock.release()

    async def aclose(self) -> None:
        return None


class PostgresLocks:
    """Session-level advisory locks (``pg_try_advisory_lock``), each on a pooled connection
    held for the call."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._local = _KeyedLocks()

    @staticmethod
    def _key(name: str) -> int:
        # A signed 64-bit key from the name; another name colliding only shares a lock.
        return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)

    @contextlib.asynccontextmanager
    async def hold(self, name: str, *, wait: float) -> AsyncIterator[None]:
        deadline = time.monotonic() + wait
        key = self._key(name)
        async with self._local.hold(name, wait):
            conn = await anyio.to_thread.run_sync(
                guarded, "the session lock", self._db.engine.connect
            )
            try:
                while not await anyio.to_thread.run_sync(self._try, conn, key):
                    if time.monotonic() >= deadline:
                        raise SessionBusy(wait)
                    await asyncio.sleep(min(POLL, _remaining(deadline)))
                yield
            finally:
                await anyio.to_thread.run_sync(self._release, conn, key)

    @staticmethod
    def _try(conn: sa.Connection, key: int) -> bool:
        def attempt() -> bool:
            got = conn.execute(sa.select(sa.func.pg_try_advisory_lock(key))).scalar_one()
            conn.commit()
            return bool(got)

        return guarded("the session lock", attempt)

    @staticmethod
    def _release(conn: sa.Connection, key: int) -> None:
        try:
            conn.execute(sa.select(sa.func.pg_advisory_unlock(key)))
            conn.commit()
        except Exception as exc:  # the connection is going anyway, and with it the lock
            log.warning("could not unlock a session: %s", type(exc).__name__)
            conn.invalidate()
        finally:
            conn.close()

    async def aclose(self) -> None:
        return None


class RedisLocks:
    """redis-py ``Lock`` leases of ``ttl`` seconds under ``<prefix>lock:``, renewed by a
    watchdog while held."""

    def __init__(self, client: Redis, prefix: str, ttl: float) -> None:
        self._client = client
        self._prefix = prefix + "lock:"
        self._ttl = ttl
        self._local = _KeyedLocks()

    @contextlib.asynccontextmanager
    async def hold(self, name: str, *, wait: float) -> AsyncIterator[None]:
        deadline = time.monotonic() + wait
        async with self._local.hold(name, wait):
            lock = self._client.lock(
                self._prefix + name, timeout=self._ttl, sleep=POLL, thread_local=False
            )
            try:
                blocking = wait > 0
                got = await lock.acquire(
                    blocking=blocking, blocking_timeout=_remaining(deadline) if blocking else None
                )
            except (RedisError, OSError) as exc:
                raise unavailable("the session lock", exc) from exc
            if not got:
                raise SessionBusy(wait)
            watchdog = asyncio.get_running_loop().create_task(self._renew(lock))
            try:
                yield
            finally:
                watchdog.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watchdog
                await self._release(lock)

    async def _renew(self, lock: Lock) -> None:
        while True:
            await asyncio.sleep(self._ttl / 3)
            try:
                await lock.extend(self._ttl, replace_ttl=True)
            except LockError:
                log.warning("a session lock was lost (its lease ran out); writes check revisions")
                return
            except (RedisError, OSError) as exc:
                log.warning("could not renew a session lock: %s", type(exc).__name__)

    @staticmethod
    async def _release(lock: Lock) -> None:
        try:
            await lock.release()
        except LockError:
            log.warning("a session lock had run out before its call ended")
        except (RedisError, OSError) as exc:
            log.warning("could not release a session lock: %s", type(exc).__name__)

    async def aclose(self) -> None:
        return None
