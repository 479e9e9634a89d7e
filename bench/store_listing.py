"""Listing and counting a big session store: what a tenant's list (``GET /v1/sessions``,
``GET /admin/sessions``) and the ``/metrics`` session count cost when the store holds many
records of many tenants (SPEC §13).

Fills a fresh store (a Redis key prefix of its own in ``SITEKEEP_TEST_REDIS``, or a temp
SQLite file) with ``--records`` records of 200 bytes spread over ``--tenants`` tenants,
through the real store, then prints the best of 5 timings of ``count("session/")``,
``keys("session/")`` and one tenant's ``keys``. Run it on two checkouts back to back (a
store without ``count`` skips that line).

    SITEKEEP_TEST_REDIS=redis://127.0.0.1:6379/13 .venv/bin/python bench/store_listing.py \\
        [--store redis|sqlite] [--records 100000] [--tenants 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.databases import REDIS_URL, clear_redis_prefix, redis_prefix  # noqa: E402
from sitekeep.stores import SessionStore, open_session_store  # noqa: E402


async def fill(store: SessionStore, records: int, tenants: int) -> None:
    """``records`` writes, 50 at once (redis-py's pool holds 100 connections)."""
    gate = asyncio.Semaphore(50)

    async def one(i: int) -> None:
        async with gate:
            await store.set(f"session/t{i % tenants}/k{i}", b"x" * 200, ttl=3600)

    await asyncio.gather(*(one(i) for i in range(records)))


async def timed(label: str, call: Callable[[], Awaitable[int | list[str]]]) -> None:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        got = await call()
        times.append(time.perf_counter() - started)
    size = got if isinstance(got, int) else len(got)
    print(f"  {label:<34} {min(times) * 1000:9.1f} ms (best of 5)  {size} keys")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("redis", "sqlite"), default="redis")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--tenants", type=int, default=1000)
    args = parser.parse_args()
    prefix = redis_prefix()
    if args.store == "redis":
        url = f"{REDIS_URL}?prefix={prefix}"
    else:
        url = f"sqlite:///{tempfile.mkdtemp(prefix='sitekeep-bench-')}/store.db"
    store = open_session_store(url)
    print(f"load average {os.getloadavg()[0]:.1f}")
    try:
        started = time.perf_counter()
        await fill(store, args.records, args.tenants)
        took = time.perf_counter() - started
        print(f"{args.store}: {args.records} records over {args.tenants} tenants in {took:.1f} s")
        if hasattr(store, "count"):
            await timed('count("session/")', lambda: store.count("session/"))
        await timed('keys("session/")', lambda: store.keys("session/"))
        await timed('keys("session/t7/") (one tenant)', lambda: store.keys("session/t7/"))
    finally:
        await store.aclose()
        if args.store == "redis":
            clear_redis_prefix(REDIS_URL, prefix)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
