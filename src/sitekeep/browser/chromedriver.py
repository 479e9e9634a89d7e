"""The embedded chromedriver: sitekeep's default WebDriver endpoint (SPEC §2)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from sitekeep.browser import processes, servers
from sitekeep.browser.processes import alive, end_group, group_running, wait_group_gone
from sitekeep.browser.webdriver import StartedSession
from sitekeep.errors import BrowserUnavailable

__all__ = ["PROFILE_SWEEP_AGE", "LocalChromedriver"]

log = logging.getLogger(__name__)

PROFILE_SWEEP_AGE = 60.0
"""Seconds a Chromium profile without a live browser's lock is left alone (one that is
starting has none yet): :meth:`LocalChromedriver.sweep_profiles`."""


def _profile_in_use(profile: Path) -> bool:
    """Whether a Chromium runs in ``profile``: its ``SingletonLock`` symlink reads
    ``<hostname>-<pid>`` while the browser lives (Chromium's ProcessSingleton, Linux)."""
    try:
        target = os.readlink(profile / "SingletonLock")
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable: never remove what may be in use
    pid = target.rsplit("-", 1)[-1]
    return pid.isdigit() and alive(int(pid))


_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""A WebDriver session id sitekeep names a file after (chromedriver's: 32 hex digits)."""


class LocalChromedriver:
    """The embedded default endpoint: one chromedriver on a loopback port, shared by every
    sitekeep process that uses the same data dir, and outliving them (SPEC §2).

    Its pid, port and private ``TMPDIR`` are kept in ``<data_dir>/chromedriver.json``; a
    file lock makes concurrent starts safe. Each browser it started for the data dir is
    noted in ``<data_dir>/chromedriver-browsers/<session id>.json`` (its pid and profile),
    so that one its driver fails to end, or whose driver died, is ended all the same
    (:meth:`end_browser`, :meth:`end_orphans`; ``browser.processes``).
    """

    def __init__(self, data_dir: Path, executable: Path) -> None:
        self._dir = data_dir
        self._exe = executable
        self._state = data_dir / "chromedriver.json"
        self._browsers = data_dir / "chromedriver-browsers"

    def ensure(self, *, timeout: float = 20.0) -> str:
        """The endpoint URL of a ready chromedriver, started if none answers (blocking).

        A recorded driver that runs but does not answer ready within ``timeout`` seconds
        is ended with its browsers, unreachable through it anyway; a dead one's browsers,
        left running in its process group, are ended: a new driver never leaves the old
        one's behind, outside every count (issue #24).

        Raises:
            BrowserUnavailable: chromedriver is missing or did not become ready.
        """
        self._dir.mkdir(parents=True, exist_ok=True)
        with self._locked():
            current = self._read_state()
            if current is not None and servers.comes_ready(*current, timeout):
                return current[1]
            if current is not None:
                log.warning("the embedded chromedriver does not answer: ended, a new one starts")
                self._end(*current)
            return self._start(timeout)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self._dir / "chromedriver.lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _read_state(self) -> tuple[int, str] | None:
        try:
            state = json.loads(self._state.read_text(encoding="utf-8"))
            return int(state["pid"]), f"http://127.0.0.1:{int(state['port'])}"
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _start(self, timeout: float) -> str:
        if not self._exe.exists():
            raise BrowserUnavailable(
                f"{self._exe} is missing: install it (apt-get install chromium-driver) "
                "or set SITEKEEP_WEBDRIVER_URL"
            )
        port = servers.free_port()
        url = f"http://127.0.0.1:{port}"
        private = servers.driver_tmp()
        try:
            pid = servers.launch_driver(
                [str(self._exe), f"--port={port}"], url, timeout, tmp=private
            )
        except BrowserUnavailable:
            shutil.rmtree(private, ignore_errors=True)
            raise
        state = {"pid": pid, "port": port, "tmp": str(private)}
        written = self._state.with_suffix(".tmp")
        servers.write_private(written, json.dumps(state))
        written.replace(self._state)
        return url

    def stop(self) -> bool:
        """Stop the driver and every browser it still runs (its whole process group; a
        dead driver's browsers too).

        Returns:
            Whether a running driver was stopped.
        """
        current = self._read_state()
        if current is None:
            return False
        return self._end(*current)

    def end_orphans(self) -> int:
        """When the recorded driver died (SIGKILL, the OOM killer), end the browsers it
        left running and forget it (blocking: at start, by the reaper). How many
        processes were ended."""
        with self._locked():
            current = self._read_state()
            if current is None or servers.is_driver(*current):
                return 0
            left = len(processes.group_members(current[0]))
            self._end(*current)
            return left

    def _end(self, pid: int, url: str) -> bool:
        """End the recorded driver ``pid`` at ``url`` and everything left in its group
        (only processes that name its ``TMPDIR`` once it is dead: ``end_leftovers``),
        then its folder, its browsers' notes and its state. Whether it was running."""
        running = servers.is_driver(pid, url)
        if running:
            end_group(pid)
            wait_group_gone(pid, 10.0)  # a browser still writing its profile
        tmp = self._recorded_tmp()
        processes.end_leftovers(pid, [tmp] if tmp is not None else [])
        if not group_running(pid):
            self._remove_recorded_tmp()
        shutil.rmtree(self._browsers, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self._state.unlink()
        return running

    def record_browser(self, started: StartedSession) -> None:
        """Note the browser ``started`` on this driver — its pid and profile, when its
        profile lies in this driver's ``TMPDIR`` (anything else is no browser of this
        data dir's) — for :meth:`end_browser`."""
        tmp, ident = self._recorded_tmp(), started.ref.session_id
        if started.pid is None or started.profile is None or tmp is None:
            return
        if started.profile.parent != tmp or not _SESSION_ID.fullmatch(ident):
            return
        self._browsers.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self._browsers, 0o700)
        note = {"pid": started.pid, "profile": str(started.profile)}
        servers.write_private(self._browsers / f"{ident}.json", json.dumps(note))

    def end_browser(self, session_id: str, *, grace: float = 0.0) -> bool:
        """End the browser of ``session_id`` that this driver started, if it still runs
        ``grace`` seconds after its driver was asked to end it (Delete Session timed out
        on a driver that does not answer, or answered while the browser lingers, or the
        driver died): with its whole process tree (``processes.end_tree``), its profile
        removed. Blocking. Whether it had to be ended."""
        if not _SESSION_ID.fullmatch(session_id):
            return False
        note = self._browsers / f"{session_id}.json"
        data = servers.read_json(note) or {}
        note.unlink(missing_ok=True)
        pid, profile = data.get("pid"), data.get("profile")
        if not isinstance(pid, int) or not isinstance(profile, str):
            return False
        folder = Path(profile)
        ended = servers.is_driver_tmp(folder.parent) and processes.end_tree(
            pid, folder, grace=grace
        )
        if ended:
            log.warning("a Chromium outlived its WebDriver session: ended with its processes")
            shutil.rmtree(folder, ignore_errors=True)
        return ended

    def _recorded_tmp(self) -> Path | None:
        """The driver's private ``TMPDIR`` from its state, if :func:`servers.driver_tmp` made it."""
        recorded = (servers.read_json(self._state) or {}).get("tmp")
        if isinstance(recorded, str) and servers.is_driver_tmp(Path(recorded)):
            return Path(recorded)
        return None

    def sweep_profiles(self, min_age: float = PROFILE_SWEEP_AGE) -> int:
        """Remove the browser profiles chromedriver left in its private ``TMPDIR``
        (:func:`servers.driver_tmp`) although their browser is gone: chromedriver removes a
        profile when its session ends, and sometimes fails to (a helper process still
        writing) — in a long-running server they would pile up, site data in them, until
        ``sitekeep stop``. A profile is left alone while its browser runs (its
        ``SingletonLock`` names a live pid) or while younger than ``min_age`` seconds (a
        browser still starting has no lock yet). Returns how many were removed."""
        recorded = self._recorded_tmp()
        if recorded is None:
            return 0
        removed = 0
        now = time.time()
        for profile in recorded.glob("org.chromium.Chromium.scoped_dir.*"):
            try:
                if now - profile.stat().st_mtime < min_age or _profile_in_use(profile):
                    continue
            except OSError:
                continue
            shutil.rmtree(profile, ignore_errors=True)
            removed += 1
        return removed

    def _remove_recorded_tmp(self) -> None:
        tmp = self._recorded_tmp()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
