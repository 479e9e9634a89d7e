"""What keeping versions costs every operation (issue #26): ``Records.put`` — every
journaled call's last write — moves its versions' expiry with the record's
(``SessionStore.expire_prefix``). Side by side on each store: ``SITEKEEP_VERSIONS=0`` (the
put as before: the snapshot's expiry, the record) against 10 with 10 versions kept,
alternating put by put so the machine's noise hits both alike; prints the median of each
and their ratio. Also one save's keeping of a version (``put_snapshot``) against a put of
the snapshot alone.

    SITEKEEP_TEST_REDIS=redis://127.0.0.1:6379/13 .venv/bin/python bench/record_put.py \\
        [--stores sqlite,postgresql,redis] [--puts 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.databases import REDIS_URL, clear_redis_prefix, redis_prefix  # noqa: E402
from sitekeep.config import Settings  # noqa: E402
from sitekeep.model import Cookie, OriginStorage, SessionRecord, SiteData  # noqa: E402
from sitekeep.seam.records import Records  # noqa: E402
from sitekeep.stores import open_sessions  # noqa: E402
from sitekeep.stores.cipher import Cipher  # noqa: E402

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
SNAPSHOT = SiteData(
    cookies=tuple(Cookie(f"c{i}", "v" * 40, "app.example.test") for i in range(20)),
    origins={"http://app.example.test": OriginStorage({f"k{i}": "v" * 200 for i in range(20)})},
)


def records(url: str, versions: int, data: Path) -> Records:
    store, locks = open_sessions(url)
    settings = Settings(data_dir=data, versions=versions)
    return Records(settings, store, locks, Cipher(bytes(range(32))), None, time.time)  # type: ignore[arg-type]


async def put(r: Records, key: str) -> None:
    async with r.held("t1", key):
        await r.load("t1", key)
        await r.put(SessionRecord("t1", key, "ada", "chromium", 0.0, 0.0))


async def side_by_side(
    label: str, a: Callable[[], Awaitable[None]], b: Callable[[], Awaitable[None]], n: int
) -> None:
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(n):
        for side, call in enumerate((a, b)):
            started = time.perf_counter()
            await call()
            times[side].append(time.perf_counter() - started)
    before, after = (statistics.median(t) * 1000 for t in times)
    print(f"  {label:<44} {before:7.3f} ms  {after:7.3f} ms  ×{after / before:4.2f}")


async def one_store(name: str, url: str, n: int, data: Path) -> None:
    off, on = records(url, 0, data), records(url, 10, data)
    for r, key in ((off, "off"), (on, "on")):
        await put(r, key)
        for _ in range(11):
            await r.put_snapshot("t1", key, SNAPSHOT)
    store = on.store
    snapshot, versions = "site-data/t1/on", "site-data-version/t1/on/"
    print(f"{name}:{'':39} before    with versions")
    await side_by_side(
        "the snapshot's expiry | with its 10 versions'",
        lambda: store.expire(snapshot, 3600),
        lambda: store.expire(snapshot, 3600, under=versions),
        n,
    )
    await side_by_side(
        "Records.put: no version | 10 kept", lambda: put(off, "off"), lambda: put(on, "on"), n
    )
    await side_by_side(
        "put_snapshot: SITEKEEP_VERSIONS 0 | 10",
        lambda: off.put_snapshot("t1", "off", SNAPSHOT),
        lambda: on.put_snapshot("t1", "on", SNAPSHOT),
        max(n // 5, 20),
    )
    for r, key in ((off, "off"), (on, "on")):
        await r.delete("t1", key)
        await r.locks.aclose()
    await store.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgresql,redis")
    parser.add_argument("--puts", type=int, default=300)
    args = parser.parse_args()
    prefix = redis_prefix()
    with tempfile.TemporaryDirectory() as tmp:
        urls = {
            "sqlite": f"sqlite:///{tmp}/sessions.db",
            "postgresql": POSTGRES,
            "redis": f"{REDIS_URL}?prefix={prefix}",
        }
        try:
            for name in args.stores.split(","):
                await one_store(name, urls[name], args.puts, Path(tmp))
        finally:
            clear_redis_prefix(REDIS_URL, prefix)


if __name__ == "__main__":
    asyncio.run(main())
