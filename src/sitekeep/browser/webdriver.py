"""W3C WebDriver sessions: the capabilities sitekeep starts browsers with, and sessions
created through Selenium and asked about over HTTP (W3C WebDriver §New Session, §Delete
Session, §Get Window Handle).

Selenium creates the W3C session (``webSocketUrl: true``) and builds the browser options;
everything after that goes over BiDi (``browser.bidi``). The drivers sitekeep starts itself
are ``browser.chromedriver`` and ``browser.geckodriver``.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from sitekeep.errors import BrowserUnavailable
from sitekeep.model import BrowserKind, BrowserRef

__all__ = [
    "CHROMIUM_ARGS",
    "CHROMIUM_PAGE_LOAD_STRATEGY",
    "FIREFOX_ENV",
    "FIREFOX_PREFS",
    "NEW_SESSION_TIMEOUT",
    "SessionSpec",
    "StartedSession",
    "create_session",
    "delete_session",
    "session_alive",
    "session_gone",
    "start_session",
    "unreachable",
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
