"""The processes of sitekeep's drivers and browsers, read from Linux ``/proc`` (issue #24).

A driver (chromedriver, geckodriver, the mapper engine's Node) is started in a process
group of its own (``servers.spawn_detached``): its browsers, their helpers, renderers and
content processes are all in that group. Two ways a browser outlived what should end it:

* **A browser that does not end when asked.** W3C Delete Session may time out (a driver
  that does not answer) or answer while the browser lingers. Such a browser is ended with
  its whole process tree (:func:`end_tree`): frozen first so it forks no more, then killed
  with every descendant.
* **A driver that died** (SIGKILL, the OOM killer): its browsers are reparented and run
  on, unreachable, in the dead driver's group. The kernel never hands out a pid that is
  still some group's id, so that group is the dead driver's for as long as a member is
  left — and :func:`end_leftovers` ends it, once one member names a folder sitekeep
  recorded for that driver (its private ``TMPDIR``, a profile), never otherwise.

Only processes whose command line names such a folder, or that descend from one, are
ever signalled: never anything else on the machine.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DRIVER_STOP_GRACE",
    "Proc",
    "alive",
    "end_group",
    "end_leftovers",
    "end_tree",
    "exited",
    "group_members",
    "group_running",
    "names",
    "running",
    "stat_fields",
    "wait_group_gone",
    "zombie",
]

log = logging.getLogger(__name__)

DRIVER_STOP_GRACE = 10.0
"""Seconds a driver's process group has to exit after SIGTERM before it is SIGKILLed."""

GONE_WAIT = 5.0
"""Seconds a killed process tree or group may take to disappear (SIGKILL is not caught;
this bounds an exit under load)."""

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class Proc:
    """One running process (``proc(5)``): ids and its command line."""

    pid: int
    ppid: int
    pgid: int
    argv: tuple[str, ...]


def running() -> dict[int, Proc]:
    """Every process of the machine now, by pid, less zombies and those gone meanwhile
    (an empty map where there is no Linux ``/proc``)."""
    found = (_read(entry) for entry in _PROC.iterdir() if entry.name.isdigit())
    return {proc.pid: proc for proc in found if proc is not None}


def _read(entry: Path) -> Proc | None:
    """The process of ``/proc/<pid>``, or None: gone, a zombie, no Linux ``/proc``."""
    fields = stat_fields(entry)
    if not fields or len(fields) < 3 or fields[0] == "Z":
        return None
    try:
        raw = (entry / "cmdline").read_bytes()
    except OSError:
        return None
    argv = tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)
    return Proc(int(entry.name), int(fields[1]), int(fields[2]), argv)


def names(proc: Proc, folders: Iterable[Path]) -> bool:
    """Whether ``proc``'s command line names one of ``folders`` or a path inside it, as
    an argument (``-profile <dir>``) or a flag's value (``--user-data-dir=<dir>``) — also
    in a command line rewritten into one string (Chromium's helpers set their title so)."""
    marks = [str(folder) for folder in folders]
    words = {*proc.argv, *(w for arg in proc.argv for w in arg.split(" "))}
    for word in words:
        value = word.split("=", 1)[1] if word.startswith("--") and "=" in word else word
        if any(value == mark or value.startswith(mark + "/") for mark in marks):
            return True
    return False


def group_members(pgid: int) -> list[Proc]:
    """The running processes of process group ``pgid``."""
    return [p for p in running().values() if p.pgid == pgid]


def descendants(procs: dict[int, Proc], roots: Iterable[int]) -> set[int]:
    """``roots`` and every process below them, by parent pid."""
    children: dict[int, list[int]] = {}
    for proc in procs.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def end_tree(pid: int, folder: Path, *, grace: float = 0.0) -> bool:
    """End the browser ``pid`` running in ``folder`` (its command line names it: never a
    reused pid) with its whole process tree, unless it exits by itself within ``grace``
    seconds (one asked to quit). Frozen (SIGSTOP) before its tree is read, so it starts
    no process meanwhile; then every process of the tree is SIGKILLed. Whether it had to
    be ended (False: it was gone, or is not that browser).

    Blocking (up to ``grace`` + :data:`GONE_WAIT` s): run it in a worker thread."""
    if not _outlives(pid, folder, grace):
        return False
    _signal(pid, signal.SIGSTOP)
    procs = running()
    if pid not in procs or not names(procs[pid], [folder]):  # it went meanwhile
        _signal(pid, signal.SIGCONT)
        return False
    tree = descendants(procs, [pid])
    for member in tree:
        _signal(member, signal.SIGKILL)
    _wait(lambda: not tree & running().keys())
    return True


def end_leftovers(pgid: int, folders: Sequence[Path]) -> int:
    """SIGKILL what is left of the process group ``pgid`` — a dead driver's browsers —
    when one of its processes names one of ``folders`` (what sitekeep recorded for that
    driver); nothing otherwise. How many processes were ended."""
    members = group_members(pgid)
    if not members:
        return 0
    if not any(names(p, folders) for p in members):
        log.info("a process group outlived its driver but names none of its folders: left")
        return 0
    log.warning("ending %d processes a dead WebDriver server left running", len(members))
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    _wait(lambda: not group_running(pgid))
    return len(members)


def _outlives(pid: int, folder: Path, grace: float) -> bool:
    """Whether ``pid`` still runs with ``folder`` on its command line ``grace`` seconds
    from now (False at once when it does not now)."""
    deadline = time.monotonic() + grace
    while (proc := _read(_PROC / str(pid))) is not None and names(proc, [folder]):
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.05)
    return False


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _wait(done: Callable[[], bool], timeout: float = GONE_WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.02)


def end_group(pid: int, grace: float = DRIVER_STOP_GRACE) -> None:
    """SIGTERM a driver's process group (it and the browsers it started), SIGKILL it if
    the driver is still there after ``grace`` seconds, and reap the driver. Never waits
    unbounded: a driver that ignored SIGTERM held the caller (and its event loop) forever."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while not exited(pid):
        if time.monotonic() > deadline:
            log.warning("a WebDriver server ignored SIGTERM for %.0f s: killed", grace)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            return
        time.sleep(0.02)


def wait_group_gone(pgid: int, timeout: float) -> None:
    """Wait (``timeout`` s at most) until no process of group ``pgid`` is left — a
    browser still writing its profile must be gone before the profile is removed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_running(pgid):
            return
        time.sleep(0.02)


def group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. Zombies do not count: an exited
    browser helper, orphaned when its browser quit, is reaped by init whenever init gets
    to it (every 2 s on the CI machine's init, never under an init that does not reap),
    and ``killpg(pgid, 0)`` counted it alive until then — 1.5 s of every Firefox close.
    Read from ``/proc`` (Linux); elsewhere ``killpg(pgid, 0)``."""
    if not (_PROC / "self" / "stat").exists():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in _PROC.iterdir():
        fields = stat_fields(entry) if entry.name.isdigit() else None  # None: gone meanwhile
        if fields and len(fields) > 2 and fields[0] != "Z" and fields[2] == str(pgid):
            return True
    return False


def exited(pid: int) -> bool:
    """True once ``pid`` has exited: reaped when it is our child; another process's
    child counts as exited once it is a zombie (its parent reaps it, maybe never)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not alive(pid) or zombie(pid)
    return done == pid


def zombie(pid: int) -> bool:
    fields = stat_fields(_PROC / str(pid))
    return fields is not None and fields[0] == "Z"


def stat_fields(entry: Path) -> list[str] | None:
    """The fields of ``<entry>/stat`` after the command name (``proc(5)``: state, ppid,
    pgrp, …), or None when the process is gone or this is no Linux ``/proc``."""
    try:
        return (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
