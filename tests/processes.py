"""The browser processes of this run's WebDriver servers, read from /proc (Linux).

Other test runs share the machine: only processes whose parent is this run's driver
(found by its ``--port``), or whose profile lies in a test's own data dir (the mapper
engine), are counted, so their browsers never enter a count here.
"""

from __future__ import annotations

import json
from pathlib import Path

from sitekeep.config import Settings

__all__ = ["browser_pids", "driver_pids", "group", "local_chromium", "main_browsers"]


def _argv(proc: Path) -> list[bytes]:
    try:
        return (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _parent(proc: Path) -> int:
    try:
        stat = (proc / "stat").read_text(encoding="utf-8")
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[1])


def _name(argv: list[bytes]) -> str:
    return Path(argv[0].decode(errors="replace")).name if argv else ""


def browser_pids(endpoint: str, driver: str = "chromedriver") -> set[int]:
    """Main processes of the browsers started by the ``driver`` serving ``endpoint``
    (Chromium's helpers, ``--type=…``, and Firefox's content processes left out)."""
    port = endpoint.rstrip("/").rsplit(":", 1)[1]
    procs = [p for p in Path("/proc").iterdir() if p.name.isdigit()]
    drivers = {
        int(p.name)
        for p in procs
        if _name(argv := _argv(p)).startswith(driver) and f"--port={port}".encode() in argv
    }
    assert drivers, f"no {driver} serves {endpoint}"
    return {
        int(p.name)
        for p in procs
        if _parent(p) in drivers
        and (argv := _argv(p))
        and not any(a.startswith(b"--type=") or a == b"-contentproc" for a in argv)
        and _name(argv)
        and not _name(argv).startswith(driver)
    }


def _helper(argv: list[bytes]) -> bool:
    return any(a.startswith(b"--type=") or a == b"-contentproc" for a in argv)


def local_chromium(settings: Settings) -> set[int]:
    """Main processes of the local Chromium browsers of ``settings``: those of the
    chromedriver at ``webdriver_url``, or on the mapper engine (``chromium_bidi``) those
    whose profile lies in the data dir's ``mapper`` folder (one Node process each)."""
    if settings.webdriver_url:
        return browser_pids(settings.webdriver_url)
    assert settings.chromium_bidi == "mapper", "no local Chromium engine to look at"
    profiles = f"--user-data-dir={settings.data_dir.absolute() / 'mapper'}/".encode()
    return {
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit()
        and (argv := _argv(p))
        and _name(argv) in ("chromium", "chrome")
        and not _helper(argv)
        and any(a.startswith(profiles) for a in argv)
    }


def main_browsers(pids: list[int]) -> set[int]:
    """Of ``pids``, the browsers' main processes (no helpers, content processes, drivers)."""
    found = set()
    for pid in pids:
        argv = _argv(Path(f"/proc/{pid}"))
        name = _name(argv)
        if name not in ("chromium", "chrome", "firefox", "firefox-esr"):
            continue
        if not any(a.startswith(b"--type=") or a == b"-contentproc" for a in argv):
            found.add(pid)
    return found


def group(pgid: int) -> set[int]:
    """The running processes of process group ``pgid`` (zombies left out): a driver of
    this run's own data dir and the browsers, helpers and renderers it started."""
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            fields = (proc / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and fields[2] == str(pgid):
            found.add(int(proc.name))
    return found


def driver_pids(data_dir: Path) -> list[int]:
    """The pids (each its process group's id) of the drivers sitekeep started for the
    data dir: its chromedriver, every geckodriver and mapper engine's Node process, from
    their state files."""
    states = [data_dir / "chromedriver.json"]
    states += [
        s for folder in ("geckodriver", "mapper") for s in (data_dir / folder).glob("*.json")
    ]
    return [json.loads(s.read_text(encoding="utf-8"))["pid"] for s in states if s.exists()]
