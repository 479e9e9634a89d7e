"""Where sitekeep's own Python time goes in one save and one restore (issue #15).

One Chromium session visits the pages of ``save_restore.py`` for N origins, then one
``Sessions.save_site_data`` and one ``restore`` + land into a fresh browser run under the
standard library's ``cProfile`` on this process's CPU clock (``time.process_time``):
every call of sitekeep's own code is counted, and the time spent waiting on the browser
is not (the wall time beside it shows how much that is; under load the wall clock also
counts the process being descheduled). Prints, per operation, the wall and CPU time and
the top functions by own time and by cumulative time. Raw profiles are not kept. Run::

    .venv/bin/python bench/flame.py [--sizes 1,20] [--top 12]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.sites import start_sites  # noqa: E402
from save_restore import FLAGS, WHO, land_url, setup_pages  # noqa: E402
from sitekeep.args import OpenBody, SaveBody  # noqa: E402
from sitekeep.browser import restore as restore_mod  # noqa: E402
from sitekeep.config import Settings  # noqa: E402
from sitekeep.service import Service  # noqa: E402


def report(label: str, wall_ms: float, profile: cProfile.Profile, top: int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    cpu = stats.total_tt * 1000  # type: ignore[attr-defined]
    print(f"== {label}: wall {wall_ms:.0f} ms, CPU of this process {cpu:.1f} ms")
    for key in ("tottime", "cumulative"):
        out.seek(0)
        out.truncate()
        stats.sort_stats(key).print_stats(top)
        lines = out.getvalue().splitlines()
        start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
        print(f"-- by {key}")
        print("\n".join(line.replace(str(ROOT) + "/", "") for line in lines[start:] if line))


async def one_size(service: Service, sites: object, n: int, top: int) -> None:
    key = f"flame{n}"
    await service.sessions.open(WHO, OpenBody(key=key))
    for url in setup_pages(sites, n):  # type: ignore[arg-type]
        await service.sessions.navigate(WHO, key, url)
    await service.sessions.save_site_data(WHO, key, SaveBody())  # warm: imports, first reads
    profile = cProfile.Profile(time.process_time)
    start = time.perf_counter()
    profile.enable()
    await service.sessions.save_site_data(WHO, key, SaveBody())
    profile.disable()
    report(f"save, N={n}", (time.perf_counter() - start) * 1000, profile, top)
    await service.sessions.close(WHO, key)
    snapshot = await service.parts.seam.records.load_snapshot(WHO.tenant, key)
    assert snapshot is not None
    live = await service.parts.browsers.start("chromium", pooled=False)
    try:
        profile = cProfile.Profile(time.process_time)
        start = time.perf_counter()
        profile.enable()
        done = await restore_mod.restore(live, snapshot, land_url(sites), now=time.time())  # type: ignore[arg-type]
        profile.disable()
        assert not done.skipped, done.skipped
        report(f"restore + land, N={n}", (time.perf_counter() - start) * 1000, profile, top)
    finally:
        await service.parts.browsers.close(live.ref)
    await service.sessions.delete(WHO, key)


async def main(sizes: list[int], top: int) -> None:
    sites = start_sites()
    with tempfile.TemporaryDirectory(prefix="sitekeep-flame-") as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            browser_args=tuple(FLAGS),
            session_store="memory://",
            warm_browsers={},
        )
        service = Service.from_settings(settings)
        try:
            for n in sizes:
                await one_size(service, sites, n, top)
        finally:
            await service.parts.browsers.close_all()
            await service.aclose()
            service.parts.browsers.stop_local_drivers()
            sites.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--sizes", default="1,20")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    asyncio.run(main([int(s) for s in args.sizes.split(",")], args.top))
