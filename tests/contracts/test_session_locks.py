"""The ``SessionLocks`` contract (``sitekeep.stores.base``): one holder at a time per name,
in this process, in another process on the same store, and after a holder is killed.

Run over every session-store backend's locks: process locks (``memory://``), lock files
(``sqlite:///``), PostgreSQL advisory locks and Redis leases (with a short lease, so a killed
holder's lock frees within a deadline).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sitekeep.errors import SessionBusy
from sitekeep.stores import SessionLocks, SessionStore, open_sessions

from .conftest import BACKENDS, DURABLE, ids

pytestmark = pytest.mark.anyio

LEASE = 1.5
"""Seconds a Redis lease outlives its holder's last renewal, in these tests."""


class Opened:
    def __init__(self, url: str) -> None:
        self.store: SessionStore
        self.store, self.locks = open_sessions(url, lock_ttl=LEASE)

    async def aclose(self) -> None:
        await self.locks.aclose()
        await self.store.aclose()


@pytest.fixture
async def locks(url: str) -> AsyncIterator[SessionLocks]:
    opened = Opened(url)
    yield opened.locks
    await opened.aclose()


async def test_a_second_holder_of_one_name_waits_for_the_first(locks: SessionLocks) -> None:
    order: list[str] = []
    first_in = asyncio.Event()

    async def first() -> None:
        async with locks.hold("t1/a", wait=10):
            first_in.set()
            await asyncio.sleep(0)  # let the second one start waiting
            order.append("first")

    async def second() -> None:
        await first_in.wait()
        async with locks.hold("t1/a", wait=10):
            order.append("second")

    await asyncio.gather(second(), first())
    assert order == ["first", "second"]


async def test_a_held_name_is_busy_and_other_names_are_free(locks: SessionLocks) -> None:
    async with locks.hold("t1/a", wait=1):
        with pytest.raises(SessionBusy):
            async with locks.hold("t1/a", wait=0):
                pytest.fail("held twice")
        with pytest.raises(SessionBusy) as caught:
            async with locks.hold("t1/a", wait=0.2):
                pytest.fail("held twice")
        assert caught.value.waited == 0.2 and caught.value.type_name == "session_busy"
        async with locks.hold("t1/b", wait=0), locks.hold("t2/a", wait=0):
            pass
    async with locks.hold("t1/a", wait=0):
        pass


async def test_a_block_that_raises_lets_go(locks: SessionLocks) -> None:
    with pytest.raises(RuntimeError):
        async with locks.hold("t1/a", wait=1):
            raise RuntimeError("dummy failure")
    async with locks.hold("t1/a", wait=0):
        pass


@pytest.mark.parametrize("backend", DURABLE, ids=ids)
async def test_another_store_on_the_same_url_sees_the_lock(url: str) -> None:
    one, two = Opened(url), Opened(url)
    try:
        async with one.locks.hold("t1/a", wait=1):
            with pytest.raises(SessionBusy):
                async with two.locks.hold("t1/a", wait=0.1):
                    pytest.fail("held by two stores at once")
            async with two.locks.hold("t1/b", wait=0):
                pass
        async with two.locks.hold("t1/a", wait=0):
            pass
    finally:
        await one.aclose()
        await two.aclose()


HOLDER = """
import asyncio, sys
from sitekeep.stores import open_sessions

async def main():
    _, locks = open_sessions(sys.argv[1], lock_ttl=float(sys.argv[2]))
    async with locks.hold("t1/a", wait=10):
        print("held", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.parametrize("backend", DURABLE, ids=ids)
async def test_a_killed_holder_in_another_process_lets_go(url: str, locks: SessionLocks) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, str(LEASE)], stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "held"
            with pytest.raises(SessionBusy):
                async with locks.hold("t1/a", wait=0):
                    pytest.fail("held by two processes at once")
        finally:
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(10)
    # Freed when the kernel closes the file or the connection, or when the lease runs out.
    async with locks.hold("t1/a", wait=30):
        pass


@pytest.mark.parametrize("backend", BACKENDS[3:], ids=ids)
async def test_a_redis_lease_is_renewed_while_its_holder_works(url: str) -> None:
    one, two = Opened(url), Opened(url)
    try:
        async with one.locks.hold("t1/a", wait=1):
            until = time.monotonic() + 3 * LEASE  # three lease lengths: renewed at least twice
            while time.monotonic() < until:
                with pytest.raises(SessionBusy):
                    async with two.locks.hold("t1/a", wait=0):
                        pytest.fail("a lease ran out while its holder worked")
                await asyncio.sleep(LEASE / 5)
    finally:
        await one.aclose()
        await two.aclose()


def test_lock_files_live_beside_the_sqlite_store(tmp_path: Path) -> None:
    async def hold() -> None:
        _, locks = open_sessions(f"sqlite:///{tmp_path}/data/sessions.db")
        async with locks.hold("t1/a", wait=1):
            pass

    asyncio.run(hold())
    files = list((tmp_path / "data" / "locks").iterdir())
    assert len(files) == 1 and "t1" not in files[0].name
    assert (tmp_path / "data" / "locks").stat().st_mode & 0o777 == 0o700
