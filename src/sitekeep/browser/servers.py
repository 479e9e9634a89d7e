"""WebDriver servers sitekeep starts detached, and the records that end them (SPEC §2).

The embedded drivers (``browser.chromedriver``, ``browser.geckodriver``) and the mapper
engine's Node (``browser.mapper``) are started by sitekeep detached from its own process (a
new session, their state in files in the data dir), because stateless reattach needs the
browsers to outlive the API process: a restarted ``sitekeep serve`` finds the same driver
and continues in the same browsers. Selenium's ``Service`` ties the driver to the Python
process that started it, so it cannot be used for this. Here: a free port, the spawn (no
``SITEKEEP_*`` variable, no inherited descriptor), readiness, a private ``TMPDIR``, state
files only this user reads, and :class:`PerBrowserServers`, the servers started one per
browser.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from sitekeep.browser import processes
from sitekeep.browser.processes import alive, end_group, exited, wait_group_gone
from sitekeep.errors import BrowserUnavailable

__all__ = [
    "PerBrowserServers",
    "child_environ",
    "comes_ready",
    "driver_tmp",
    "free_port",
    "is_driver",
    "is_driver_tmp",
    "launch_driver",
    "read_json",
    "spawn_detached",
    "stop_all_recorded",
    "stop_recorded",
    "write_private",
]


def free_port() -> int:
    """A loopback port free now, for a driver or Firefox's remote agent to bind seconds
    later — chosen *below* the kernel's ephemeral range (``ip_local_port_range``).

    A port the kernel hands out for ``bind(0)`` or an outgoing connection is released here
    and may be handed out again before the program binds it: a Chromium's DevTools server
    (chromedriver starts it on port 0) took one, and a geckodriver's ``webSocketUrl`` then
    led to it ("cannot open the BiDi socket: InvalidStatus", once in a full test run).
    Below that range the kernel never picks on its own; a random pick there keeps two
    launches apart. Falls back to ``bind(0)`` when the range leaves no room below it."""
    low = _ephemeral_low()
    floor = max(1024, low // 2)
    for _ in range(64) if low - floor > 1000 else ():
        port = random.randrange(floor, low)
        with socket.socket() as s, contextlib.suppress(OSError):
            s.bind(("127.0.0.1", port))
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux; 32768, its default, when
    it cannot be read)."""
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii")
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _answers(url: str) -> bool:
    """Whether a WebDriver server answers at ``url`` (ready or busy with a session)."""
    try:
        return httpx.get(f"{url}/status", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def _ready(url: str) -> bool:
    try:
        reply = httpx.get(f"{url}/status", timeout=2.0)
        return bool(reply.json().get("value", {}).get("ready"))
    except (httpx.HTTPError, ValueError):
        return False


def spawn_detached(
    argv: list[str], env: Mapping[str, str] | None = None, fds: Mapping[int, int] | None = None
) -> int:
    """Start ``argv`` in a new session (its own process group), stdio on /dev/null, with
    this process's environment less every ``SITEKEEP_*`` variable, plus ``env``; ``fds``
    maps a descriptor number in the child to one of ours it gets (a listening socket).

    Not ``SITEKEEP_*``: they hold the master key, the scrape token, database and Redis
    URLs with their passwords, an agent's bearer token — none of a driver's business, and
    a driver's browsers inherit its environment, so a page that broke out of its
    renderer's sandbox would read them in ``/proc/self/environ``.

    No other descriptor: every inheritable one this process holds (one it was started
    with — ``flock``'s lock, a supervisor's pipe) is closed in the child, else the driver
    and its browsers, which outlive this process, would hold it open for their lifetime.

    ``posix_spawn`` rather than ``subprocess.Popen``: the driver is meant to outlive this
    process, and a ``Popen`` object would warn when collected while it still runs.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        given = dict(fds or {})
        actions: list[tuple[int, ...]] = [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)]
        actions += [(os.POSIX_SPAWN_DUP2, ours, child) for child, ours in given.items()]
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited(keep={0, 1, 2, *given})]
        environ = {**child_environ(), **(env or {})}
        return os.posix_spawn(argv[0], argv, environ, file_actions=actions, setsid=True)
    finally:
        os.close(devnull)


def child_environ() -> dict[str, str]:
    """This process's environment less every ``SITEKEEP_*`` variable, in any case (the
    settings read ``sitekeep_master_key`` as ``SITEKEEP_MASTER_KEY``), for a program
    sitekeep starts (see :func:`spawn_detached` for why)."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("SITEKEEP_")}


def _inherited(keep: set[int]) -> list[int]:
    """This process's open descriptors a child would inherit (not close-on-exec), less
    ``keep``: from ``/proc/self/fd`` (Linux), else none known."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found = []
    for name in names:
        fd = int(name)
        if fd in keep:
            continue
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed since
            if os.get_inheritable(fd):
                found.append(fd)
    return found


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by this user only (0600, whatever the umask
    and whatever mode a file left by an older sitekeep had): a driver's state names its
    browser's session, the key to drive that signed-in browser over the driver's
    unauthenticated loopback port, and the data dir may be one another user can list.

    Raises:
        OSError: the file could not be written (``path`` a symlink: ``ELOOP``).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(text)


def driver_tmp() -> Path:
    """A new private temporary folder (mode 0700, unpredictable name, short path in the
    system temp dir) for one driver and its browsers: their ``TMPDIR``.

    Why: chromedriver makes each browser's profile (``org.chromium.Chromium.scoped_dir.*``)
    and geckodriver its ``rust_mozprofile*`` in ``TMPDIR``, and remove them only when a
    session ends cleanly — chromedriver sometimes fails to while the browser's helpers
    still write, and a killed group never does — leaving profiles, site data in them,
    behind. In a folder of its own, removed once the group is gone, nothing is left. Short
    because Chromium puts its singleton socket there (a Unix socket path: ≤ 107 bytes)."""
    return Path(tempfile.mkdtemp(prefix="sitekeep-driver-"))


def launch_driver(
    argv: list[str],
    url: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
    tmp: Path | None = None,
    fds: Mapping[int, int] | None = None,
) -> int:
    """Start a WebDriver server detached (its environment plus ``env``; ``TMPDIR`` set to
    ``tmp`` when given; descriptors ``fds`` as :func:`spawn_detached`) and wait
    (``timeout`` s) until ``url`` is ready.

    Raises:
        BrowserUnavailable: it exited or did not become ready in time.
    """
    extra = {**(env or {}), **({"TMPDIR": str(tmp)} if tmp is not None else {})}
    pid = spawn_detached(argv, extra, fds)
    deadline = time.monotonic() + timeout
    while not _ready(url):
        if exited(pid) or time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            raise BrowserUnavailable(f"{Path(argv[0]).name} did not become ready")
        time.sleep(0.05)
    return pid


def is_driver_tmp(tmp: Path) -> bool:
    """Whether ``tmp`` is a folder :func:`driver_tmp` could have made (a state file is
    data, never a path to trust blindly)."""
    return tmp.parent == Path(tempfile.gettempdir()) and tmp.name.startswith("sitekeep-driver-")


def _remove_tmp(recorded: object) -> None:
    """Remove a driver's private temporary folder named in its state (``tmp``) — only one
    :func:`driver_tmp` made."""
    if isinstance(recorded, str) and is_driver_tmp(Path(recorded)):
        shutil.rmtree(recorded, ignore_errors=True)


def comes_ready(pid: int, url: str, timeout: float) -> bool:
    """Whether the driver ``pid`` at ``url`` answers ready, waited for up to ``timeout``
    seconds while it runs (a loaded machine answers late; a dead driver never does)."""
    deadline = time.monotonic() + timeout
    while not _ready(url):
        if time.monotonic() > deadline or not is_driver(pid, url):
            return False
        time.sleep(0.2)
    return True


def is_driver(pid: int, url: str) -> bool:
    """Whether ``pid`` is still the WebDriver server listening at ``url`` (never signal a
    reused pid): its command line names the port (Linux ``/proc``), else it answers.

    Not ``_answers`` alone: a driver busy ending its session (geckodriver waiting for a
    Firefox to quit) may not answer ``/status`` in time, and was then left running with
    its browser."""
    if not alive(pid):
        return False
    port = url.rstrip("/").rsplit(":", 1)[-1]
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return _answers(url)
    return f"--port={port}".encode() in argv


class PerBrowserServers:
    """Servers started one per browser, detached, each on its own loopback port, their
    pid and the browser's profile recorded in ``<folder>/<port>.json`` so that any
    process on the data dir can end them (geckodriver, the mapper engine's Node)."""

    def __init__(self, folder: Path) -> None:
        self._dir = folder

    def _private_dir(self) -> None:
        """Make the folder this user's alone (0700, also when it was made looser before):
        its state files name each browser's session, its profiles hold site data (a
        Firefox's cookies.sqlite, mode 0644, holds cookie values)."""
        self._dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self._dir, 0o700)

    def owns(self, endpoint: str) -> bool:
        """Whether ``endpoint`` is a server of this kind this data dir started."""
        return self._state(endpoint).exists()

    def _state(self, endpoint: str) -> Path:
        port = endpoint.rstrip("/").rsplit(":", 1)[-1]
        return self._dir / f"{port}.json"

    def stop(self, endpoint: str, session_id: str | None = None) -> bool:
        """End the server at ``endpoint`` and its browser and remove the browser's
        profile — only if it runs the session ``session_id`` when given; whether it was
        running (:func:`stop_recorded`)."""
        return stop_recorded(self._state(endpoint), endpoint, session_id)

    def running(self, endpoint: str, session_id: str) -> bool:
        """Whether the server this data dir started at ``endpoint`` still runs, for
        ``session_id``. Asked before a word is sent to its port: once the server died,
        any local process may listen there and answer like it — and would be sent the
        cookies of the next restore."""
        try:
            data = json.loads(self._state(endpoint).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if not isinstance(data, dict) or data.get("session") != session_id:
            return False
        pid = data.get("pid")
        return isinstance(pid, int) and is_driver(pid, endpoint)

    def forget_dead(self, endpoint: str, session_id: str) -> None:
        """Remove the state file and the profile of the server at ``endpoint`` running
        ``session_id`` once its process is gone (a crash, the OOM killer): the profile
        holds the dead browser's cookies and storage, and nothing else would remove it
        before this data dir's next shutdown. A server still running is left alone
        (busy is not dead)."""
        stop_recorded(self._state(endpoint), endpoint, session_id, only_dead=True)

    def stop_all(self) -> int:
        """End every server of this kind this data dir started, and their browsers; how
        many ran."""
        return stop_all_recorded(self._dir)

    def end_dead(self) -> int:
        """End the browsers of every server of this kind that died, and forget those
        servers (:meth:`forget_dead`; at start, by the reaper); how many there were."""
        dead = 0
        for state in self._dir.glob("*.json") if self._dir.is_dir() else ():
            endpoint = f"http://127.0.0.1:{state.stem}"
            # Unreadable: maybe being written; a state is forgotten only once it names a
            # pid that is no driver.
            pid = (read_json(state) or {}).get("pid")
            if isinstance(pid, int) and not is_driver(pid, endpoint):
                stop_recorded(state, endpoint, only_dead=True)
                dead += 1
        return dead


def stop_recorded(
    state: Path, endpoint: str, session_id: str | None = None, *, only_dead: bool = False
) -> bool:
    """End the per-browser server at ``endpoint`` whose ``state`` file (JSON ``{pid,
    profile, session}``) this data dir keeps: its process group (it and its browser),
    then, once no process of the group is left, the browser's profile folder and the
    file. Whether it was running.

    ``session_id``: the WebDriver session of the browser to end. When the file names
    another (``""``: one still starting), the server at that port now runs another
    browser — the one asked for is gone and its port was given again (a crashed driver,
    a machine restarted) — and nothing is done: a stale ref (a dead process's warm pool,
    the reaper's run, a session's record) never ends another tenant's browser.
    ``only_dead``: nothing is done while the server still runs either."""
    try:
        data = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    data = data if isinstance(data, dict) else {}
    recorded = data.get("session")
    if session_id is not None and isinstance(recorded, str) and recorded != session_id:
        return False
    pid = data.get("pid")
    running = False
    if only_dead and isinstance(pid, int) and is_driver(pid, endpoint):
        return False
    if isinstance(pid, int):
        if is_driver(pid, endpoint):
            running = True
            end_group(pid)
            wait_group_gone(pid, 10.0)  # a browser still writing its profile
        # A dead driver's browser runs on in its group (or one outlived SIGTERM).
        processes.end_leftovers(pid, _recorded_folders(state, data))
    profile = data.get("profile")
    if isinstance(profile, str):
        shutil.rmtree(profile, ignore_errors=True)
    _remove_tmp(data.get("tmp"))
    with contextlib.suppress(FileNotFoundError):
        state.unlink()
    return running


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in the file ``path``, or None (missing, unreadable, not an object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _recorded_folders(state: Path, data: dict[str, Any]) -> list[Path]:
    """The folders a per-browser server's ``state`` names that its browser runs in: the
    profile beside the state file, the private ``TMPDIR`` (:func:`driver_tmp`)."""
    found = []
    profile, tmp = data.get("profile"), data.get("tmp")
    if isinstance(profile, str) and Path(profile).parent == state.parent:
        found.append(Path(profile))
    if isinstance(tmp, str) and is_driver_tmp(Path(tmp)):
        found.append(Path(tmp))
    return found


def stop_all_recorded(folder: Path) -> int:
    """:func:`stop_recorded` for every ``<port>.json`` in ``folder``; how many ran."""
    states = list(folder.glob("*.json")) if folder.is_dir() else []
    return sum(stop_recorded(state, f"http://127.0.0.1:{state.stem}") for state in states)
