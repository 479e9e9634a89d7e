"""The opt-in local Chromium engine ``SITEKEEP_CHROMIUM_BIDI=mapper`` (issue #15).

chromedriver runs chromium-bidi's mapper (BiDi → CDP) in a hidden tab of the browser and
relays every BiDi message through itself: a ``script.evaluate("1")`` costs 2.6–3.5 ms
there against ~1.2 ms when the same mapper runs in Node beside the browser, talking CDP
over ``--remote-debugging-pipe`` — what Puppeteer's ``BidiOverCdp`` does
(``bench/save_restore.py --engines``). sitekeep still speaks only W3C BiDi: CDP stays
between the mapper and Chromium, as inside chromedriver.

Each browser gets one Node process (``mapper_node/server.mjs``, the npm package
``chromium-bidi`` pinned in ``mapper_node/package.json``, installed by
``scripts/setup-mapper.sh``, never at run time). sitekeep builds Chromium's whole command
line (the flags of ``webdriver.CHROMIUM_ARGS``, the settings' ``browser_args``, the proxy,
a fresh ``--user-data-dir``); the Node process starts it as its child, in its own
process group, detached from sitekeep so the browser outlives a restarted server
(stateless reattach, SPEC §2). It listens on one loopback port:
``ws://127.0.0.1:<port>/session/<id>`` is the BiDi socket (any number, one after another
or at once; each socket's subscriptions and intercepts end with it, as chromedriver's
channels do), and of WebDriver classic only ``GET /status``, ``GET /session/<id>/window``
(alive: 200, gone: 404 ``invalid session id``) and ``DELETE /session/<id>``. Every other
classic command answers 404 ``unknown command``: so ``GET /v1/sessions/{key}/webdriver``
refuses mapper sessions (``Conflict``) rather than hand out an endpoint that cannot drive.

State, per browser: ``<data_dir>/mapper/<port>.json`` (pid of the Node process, which
leads the group, and the profile folder, removed when the browser ends).

Against other local users and web pages (``server.mjs``'s header): the session id — the
socket's one secret — reaches Node in its environment, never its world-readable argv;
the port is bound here before Node starts and handed over as its fd 3, so nobody can
take it in between and pass for the mapper; Node refuses any request carrying an
``Origin`` or a ``Host`` other than its loopback port (web pages, DNS rebinding); the
folder is 0700 and each state file 0600.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sitekeep.browser.servers import PerBrowserServers, driver_tmp, launch_driver, write_private
from sitekeep.browser.webdriver import CHROMIUM_ARGS, CHROMIUM_PREFS
from sitekeep.errors import BrowserUnavailable
from sitekeep.model import BrowserRef

__all__ = ["MAPPER_DIR", "LocalMapper", "check_installed", "chromium_argv", "proxy_flags"]

log = logging.getLogger(__name__)

MAPPER_DIR = Path(__file__).with_name("mapper_node")
"""The Node side: ``server.mjs``, its ``package.json`` and (after set-up) ``node_modules``."""

AUTOMATION_ARGS = (
    "--disable-client-side-phishing-detection",
    "--disable-default-apps",
    "--disable-hang-monitor",
    "--disable-popup-blocking",
    "--disable-prompt-on-repost",
    "--enable-automation",
    "--password-store=basic",
    "--use-mock-keychain",
    "--remote-debugging-pipe",
)
"""What chromedriver adds to every Chromium it starts, that sitekeep's flags do not
already say (no logging flags: nobody reads them here), plus the CDP pipe."""


UNHANDLED_PROMPT_BEHAVIOR = "dismiss and notify"
"""What chromedriver's sessions run with when not asked otherwise (W3C WebDriver §User
prompts' default): alert, confirm and prompt dismissed, ``beforeunload`` accepted — said
here rather than left to chromium-bidi's own default, so both engines answer a page alike."""


SETUP_HINT = "run scripts/setup-mapper.sh"
"""What to do about missing or stale npm packages (``check_installed``)."""


def _version(manifest: Path) -> str | None:
    """The ``version`` of an npm ``package.json``, or None when it is missing or unreadable."""
    try:
        version = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


def check_installed(folder: Path) -> None:
    """Check that ``folder/node_modules`` holds each dependency at the exact version
    ``folder/package.json`` pins (``chromium-bidi``, ``ws``…): a checkout pulled past an
    upgrade still runs the old mapper until ``scripts/setup-mapper.sh`` is run again, and
    an old chromium-bidi fails later, mid-session, in ways that do not name the cause.

    Raises:
        BrowserUnavailable: a dependency is missing or at another version; the message
            names it, both versions and the command to run.
    """
    try:
        pinned = json.loads((folder / "package.json").read_text(encoding="utf-8"))
        wanted: dict[str, str] = dict(pinned["dependencies"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BrowserUnavailable(f"{folder / 'package.json'} is unreadable") from exc
    for name, version in sorted(wanted.items()):
        found = _version(folder / "node_modules" / name / "package.json")
        if found is None:
            raise BrowserUnavailable(
                f"SITEKEEP_CHROMIUM_BIDI=mapper needs its npm packages ({name} is not "
                f"installed): {SETUP_HINT}"
            )
        if found != version:
            raise BrowserUnavailable(
                f"SITEKEEP_CHROMIUM_BIDI=mapper: node_modules holds {name} {found}, "
                f"package.json pins {version}: {SETUP_HINT}"
            )


def proxy_flags(capability: Mapping[str, Any] | None) -> list[str]:
    """Chromium flags for the W3C ``proxy`` capability (``ProxySettings.capability``), as
    chromedriver translates it: manual → ``--proxy-server`` (+ ``--proxy-bypass-list``),
    pac → ``--proxy-pac-url``. No credentials are ever in it (answered over BiDi).

    Raises:
        BrowserUnavailable: a proxy type this engine does not translate.
    """
    if not capability:
        return []
    kind = capability.get("proxyType")
    if kind == "pac":
        return [f"--proxy-pac-url={capability['proxyAutoconfigUrl']}"]
    if kind == "manual":
        server = capability.get("sslProxy") or capability.get("httpProxy")
        flags = [f"--proxy-server={server}"]
        if capability.get("noProxy"):
            flags.append(f"--proxy-bypass-list={';'.join(capability['noProxy'])}")
        return flags
    raise BrowserUnavailable(f"the mapper engine cannot apply a proxy of type {kind!r}")


def chromium_argv(
    binary: Path,
    profile: Path,
    extra: tuple[str, ...] = (),
    proxy: Mapping[str, Any] | None = None,
) -> list[str]:
    """Chromium's whole command line for the mapper engine: the flags chromedriver gets
    from sitekeep (``CHROMIUM_ARGS``, ``--no-sandbox`` as root, ``extra`` from the
    settings), those chromedriver adds itself, the proxy, the profile, one blank tab."""
    args = [str(binary), *CHROMIUM_ARGS, *AUTOMATION_ARGS]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox
    args += [*extra, *proxy_flags(proxy), f"--user-data-dir={profile}", "about:blank"]
    return args


def write_preferences(profile: Path) -> None:
    """Write :data:`~sitekeep.browser.webdriver.CHROMIUM_PREFS` into the new profile's
    ``Default/Preferences``, as chromedriver does with ``goog:chromeOptions.prefs`` (a
    dotted name is a path in its JSON): Chromium reads them as it starts."""
    nested: dict[str, Any] = {}
    for name, value in CHROMIUM_PREFS.items():
        *path, last = name.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    folder = profile / "Default"
    folder.mkdir(mode=0o700, exist_ok=True)
    write_private(folder / "Preferences", json.dumps(nested))


def _listening() -> socket.socket:
    """A TCP socket listening on a free port of 127.0.0.1, for the Node process to serve
    on (its fd 3): bound before the process starts, so no other local process can take
    the port in between and be taken for the mapper (server.mjs's header)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # As libuv binds (Node did before): the connections it accepts inherit the option,
    # so a crashed Node's half-closed ones do not hold the port for a minute.
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener


class LocalMapper(PerBrowserServers):
    """Browsers of the mapper engine: one Node process (and its Chromium) per browser,
    started detached, each on its own loopback port (module docstring)."""

    def __init__(self, data_dir: Path, node: str | None = None) -> None:
        super().__init__(data_dir / "mapper")
        self._node = node or shutil.which("node")

    def launch(
        self,
        chromium: Path,
        *,
        args: tuple[str, ...] = (),
        insecure: bool = False,
        proxy: Mapping[str, Any] | None = None,
        timeout: float = 20.0,
    ) -> BrowserRef:
        """Start a Chromium and its mapper, ready for BiDi (blocking, ~0.5 s).

        Returns:
            Its ref: ``endpoint`` the Node process's HTTP URL, ``ws_url`` its BiDi socket.

        Raises:
            BrowserUnavailable: no Node, the mapper's npm packages are missing or not the
                versions pinned (``check_installed``), or the browser did not become ready
                within ``timeout`` seconds.
        """
        server = MAPPER_DIR / "server.mjs"
        if self._node is None:
            raise BrowserUnavailable("SITEKEEP_CHROMIUM_BIDI=mapper needs Node.js (node)")
        check_installed(MAPPER_DIR)
        if not chromium.exists():
            raise BrowserUnavailable(
                f"{chromium} is missing: install it (apt-get install chromium)"
            )
        started = time.time()
        self._private_dir()
        with _listening() as listener:
            port = int(listener.getsockname()[1])
            profile = Path(tempfile.mkdtemp(prefix=f"{port}.", suffix=".profile", dir=self._dir))
            session = uuid.uuid4().hex
            write_preferences(profile)
            command = chromium_argv(chromium, profile, args, proxy)
            config = {
                "session": session,
                "argv": command,
                "acceptInsecureCerts": insecure,
                "unhandledPromptBehavior": UNHANDLED_PROMPT_BEHAVIOR,
            }
            url = f"http://127.0.0.1:{port}"
            argv = [self._node, str(server), f"--port={port}"]
            env = {"BIDI_MAPPER_CONFIG": json.dumps(config)}
            private = driver_tmp()
            try:
                pid = launch_driver(
                    argv, url, timeout, env, tmp=private, fds={3: listener.fileno()}
                )
            except BrowserUnavailable:
                shutil.rmtree(profile, ignore_errors=True)
                shutil.rmtree(private, ignore_errors=True)
                raise
        # What chromedriver's New Session logs through Selenium (its capabilities): the
        # command line, which holds no credential (a proxy's are answered over BiDi).
        log.debug("mapper engine: Chromium on port %d: %s", port, shlex.join(command))
        state = {"pid": pid, "profile": str(profile), "session": session, "tmp": str(private)}
        write_private(self._state(url), json.dumps(state))
        return BrowserRef(
            kind="chromium",
            endpoint=url,
            session_id=session,
            ws_url=f"ws://127.0.0.1:{port}/session/{session}",
            started_at=started,
            insecure=insecure,
        )
