"""The measured inputs of docs/scale.md: what one session costs each part of a deployment.

* Redis bytes per session — ``MEMORY USAGE`` of a session's record and sealed snapshot (a
  session that visited 10 origins and saved 30 cookies and 10 localStorage keys on each of
  5 origins), written through the real Redis session store.
* PostgreSQL rows per session — the ledger rows one browser start writes.
* Browser memory — PSS (``/proc/<pid>/smaps_rollup``) of a Chromium and a Firefox process
  tree with one real page loaded, as sitekeep starts them.

    .venv/bin/python bench/scale_figures.py [--no-firefox]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import redis.asyncio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.databases import REDIS_URL, clear_redis_prefix, redis_prefix  # noqa: E402
from fixtures.sites import start_sites  # noqa: E402
from sitekeep.args import OpenBody  # noqa: E402
from sitekeep.config import Settings  # noqa: E402
from sitekeep.model import Cookie, HistoryEntry, OriginStorage, Principal, SiteData  # noqa: E402
from sitekeep.service import Service  # noqa: E402

HOST_RULES = '--host-resolver-rules="MAP *.example.test 127.0.0.1"'


def snapshot() -> SiteData:
    cookies = tuple(
        Cookie(f"c{i}", "v" * 40, f".site{i % 5}.example.test", secure=True, expiry=2_000_000_000)
        for i in range(30)
    )
    origins = {
        f"https://site{o}.example.test": OriginStorage({f"k{k}": "x" * 100 for k in range(10)})
        for o in range(5)
    }
    return SiteData(cookies=cookies, origins=origins, saved_at=time.time())


async def redis_bytes() -> tuple[int, int]:
    """Bytes Redis holds for one session: its record, its snapshot."""
    prefix = redis_prefix()
    settings = Settings(
        data_dir=Path(tempfile.mkdtemp()),
        session_store=f"{REDIS_URL}?prefix={prefix}",
        database_url="memory://",
        warm_browsers={},
    )
    service = Service.from_settings(settings)
    client = redis.asyncio.Redis.from_url(REDIS_URL)
    try:
        from sitekeep.model import SessionRecord

        now = time.time()
        history = tuple(
            HistoryEntry(f"https://site{i}.example.test", f"https://site{i}.example.test/p", now)
            for i in range(10)
        )
        record = SessionRecord("t1", "s1", "agent", "chromium", now, now, history=history)
        async with service.parts.seam.records.held("t1", "s1"):
            await service.parts.seam.records.put(record)
        await service.parts.seam.records.put_snapshot("t1", "s1", snapshot())
        sizes = []
        for key in ("session/t1/s1", "site-data/t1/s1"):
            sizes.append(int(await client.memory_usage(prefix + key) or 0))
        return sizes[0], sizes[1]
    finally:
        await client.aclose()
        await service.aclose()
        clear_redis_prefix(REDIS_URL, prefix)


def pss_kib(root: int) -> int:
    """PSS of a process and all its descendants, KiB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def browser_root(kind: str, before: set[int]) -> int:
    name = "chromium" if kind == "chromium" else "firefox-esr"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in before:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        helper = any(a.startswith((b"--type=", b"-contentproc")) for a in argv)
        if Path(argv[0].decode(errors="replace")).name == name and not helper:
            return int(entry.name)
    raise RuntimeError(f"no {kind} process found")


async def browser_pss(kind: str, url: str) -> int:
    """PSS (KiB) of one browser of ``kind`` with ``url`` loaded, as sitekeep starts it."""
    settings = Settings(
        data_dir=Path(tempfile.mkdtemp()),
        session_store="memory://",
        database_url="memory://",
        warm_browsers={},
        browser_args=HOST_RULES,
        firefox_prefs={"network.dns.forceResolve": "127.0.0.1"},
    )
    service = Service.from_settings(settings)
    before = {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()}
    try:
        await service.sessions.open(Principal("t1", "a"), OpenBody(key="m", browser=kind, url=url))
        await asyncio.sleep(2)  # let the page settle: memory is read after the load
        return pss_kib(browser_root(kind, before))
    finally:
        await service.reaper.end_browsers()
        await service.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-firefox", action="store_true")
    args = parser.parse_args()
    record, sealed = await redis_bytes()
    print(f"Redis: record {record} B + snapshot {sealed} B = {record + sealed} B per session")
    print("PostgreSQL: 1 runs row per browser start (closed, not deleted); tokens and secrets")
    print("  are per tenant, not per session")
    with start_sites() as sites:
        url = sites.url("app.example.test", "/login")
        for kind in ("chromium",) if args.no_firefox else ("chromium", "firefox"):
            print(f"{kind}: {await browser_pss(kind, url) / 1024:.0f} MB PSS with one page")


if __name__ == "__main__":
    asyncio.run(main())
