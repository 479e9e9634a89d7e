"""Routing a browser through a proxy, and answering the proxy's credentials over BiDi
(SPEC §2, §14).

* **Where**: the W3C WebDriver ``proxy`` capability (WebDriver §Proxy), ``manual`` with
  the same HTTP proxy for ``http`` and ``https``. chromedriver turns it into Chromium's
  ``--proxy-server``, geckodriver into Firefox's ``network.proxy.*`` preferences, and a
  Selenium Grid hands it to its node unchanged, so one shape serves every endpoint.
* **Credentials** never travel in the capability or a URL (a capability is logged by
  drivers and Grids, a URL by everyone): a proxy's ``407`` reaches sitekeep as BiDi
  ``network.authRequired`` (blocked by a ``network.addIntercept`` for the
  ``authRequired`` phase) and is answered with ``network.continueWithAuth`` (W3C
  WebDriver BiDi §network). Only a proxy challenge gets them (a 407, or in Chromium,
  which reports no status, the challenge of :data:`PROBE_URL`) — a site asking with 401
  is cancelled (as a person dismissing the prompt; a headless Firefox left to its
  default waits on a prompt nobody sees), so a page can never phish the proxy's password —
  and a request that is challenged again after its answer is cancelled (wrong
  credentials would otherwise loop). Nothing here logs an event's parameters. How a
  proxy's challenge is told from a site's differs by browser: see :class:`ProxyAuth`.
* **Combining with other routing**: :func:`pac_script` writes a PAC script that sends
  chosen hosts to a dead end and everything else through the proxy (or direct), for a
  ``pac`` capability when the browser must also be kept off some addresses.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sitekeep.browser import wire
from sitekeep.browser.bidi import BidiConnection
from sitekeep.errors import BidiError, BrowserUnavailable, InvalidInput

__all__ = ["PROBE_URL", "ProxyAuth", "ProxySettings", "pac_capability", "pac_script"]

log = logging.getLogger(__name__)

_PROXY_CHALLENGE = 407  # RFC 9110 §15.5.8 Proxy Authentication Required
_PROBE_SECONDS = 10.0
_PROBE_ENDS = (wire.NETWORK_RESPONSE_COMPLETED, wire.NETWORK_FETCH_ERROR)
PROBE_URL = "http://sitekeep-proxy-check.invalid/"
"""What :class:`ProxyAuth` loads to meet the proxy's challenge: a ``.invalid`` host never
resolves (RFC 6761 §6.4), so no site answers it and any challenge on it is the proxy's."""


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """An HTTP proxy for one browser, and the credentials it asks for.

    Attributes:
        server: ``host:port`` of the proxy (an IPv6 host in brackets).
        username: the proxy user; None when the proxy asks for nothing.
        password: its password (never shown by ``repr``).
        bypass: hosts that go direct (the capability's ``noProxy``).
        refuse: hosts the browser must not reach at all (the server's own address):
            given, the capability is a PAC script (:func:`pac_script`) that sends them
            to a dead end and the rest through the proxy.
    """

    server: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    bypass: tuple[str, ...] = ()
    refuse: tuple[str, ...] = ()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        bypass: Sequence[str] = (),
        field_name: str = "url",
    ) -> ProxySettings:
        """Settings from a proxy URL ``http://host:port`` and credentials kept apart.

        Raises:
            InvalidInput: ``field_name`` — not ``http://host:port``, or credentials
                written into the URL (the message never repeats the URL).
        """
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise InvalidInput("a proxy URL is http://host:port", field=field_name) from exc
        if parts.username is not None or parts.password is not None:
            raise InvalidInput(
                "a proxy URL must not hold credentials: keep them in a secret",
                field=field_name,
            )
        if parts.scheme != "http" or not parts.hostname or port is None:
            raise InvalidInput("a proxy URL is http://host:port", field=field_name)
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise InvalidInput("a proxy URL is http://host:port, nothing after", field=field_name)
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        return cls(f"{host}:{port}", username, password, tuple(bypass))

    @property
    def has_credentials(self) -> bool:
        return self.username is not None and self.password is not None

    def capability(self) -> dict[str, Any]:
        """The W3C ``proxy`` capability (WebDriver §Proxy): manual, one HTTP proxy for
        http and https — or, with hosts to ``refuse``, a PAC script. No credentials."""
        if self.refuse:
            return pac_capability(pac_script(self, self.refuse))
        out: dict[str, Any] = {
            "proxyType": "manual",
            "httpProxy": self.server,
            "sslProxy": self.server,
        }
        if self.bypass:
            out["noProxy"] = list(self.bypass)
        return out


def pac_script(proxy: ProxySettings | None, refuse_hosts: Sequence[str] = ()) -> str:
    """A PAC script: ``refuse_hosts`` (exact names or IPs) go to a proxy that answers
    nothing (``127.0.0.1:9``, the discard port), the rest through ``proxy`` or direct.

    For combining an own-address block with a country proxy in one ``pac`` capability;
    credentials for ``proxy`` are still answered over BiDi (:class:`ProxyAuth`).
    """
    route = f"PROXY {proxy.server}" if proxy is not None else "DIRECT"
    refused = json.dumps(sorted({h.lower().strip("[]") for h in refuse_hosts}))
    return (
        "function FindProxyForURL(url, host) {\n"
        f"  var refused = {refused};\n"
        "  if (refused.indexOf(host.toLowerCase()) >= 0) return 'PROXY 127.0.0.1:9';\n"
        f"  return {json.dumps(route)};\n"
        "}\n"
    )


def pac_capability(script: str) -> dict[str, Any]:
    """The W3C ``proxy`` capability of type ``pac`` carrying ``script`` as a data: URL."""
    encoded = base64.b64encode(script.encode()).decode()
    return {
        "proxyType": "pac",
        "proxyAutoconfigUrl": f"data:application/x-ns-proxy-autoconfig;base64,{encoded}",
    }


class ProxyAuth:
    """Answers a browser's proxy challenges over one BiDi connection (module docstring).

    **Telling the proxy's challenge from a site's.** Only a proxy challenge gets the
    credentials; every other challenge is cancelled. Firefox reports the challenge's
    response (``network.AuthRequiredParameters.response``): status 407 is the proxy's
    (RFC 9110 §15.5.8), anything else a site's. Chromium (chromedriver's BiDi, measured
    with Chromium 156) reports neither: status ``-1``, no headers, no ``authChallenges``,
    for a proxy's 407 and a site's 401 alike — and no order of events tells them apart
    (a proxy that never asks lets the very first request reach a site that asks with
    401). So with ``probe`` (Chromium), :meth:`install` first loads :data:`PROBE_URL`
    in a background tab: its host is under ``.invalid`` (RFC 6761 §6.4, never resolves),
    so no site can answer it and a challenge on it can only be the proxy's. That one
    challenge gets the credentials; Chromium keeps them for the proxy and sends them
    unasked from then on; every later challenge whose status is unknown is a site's and
    is cancelled (a proxy that never asked never gets them at all). Requests to hosts
    that bypass the proxy (loopback, ``bypass``) never get them either.

    Limits (Chromium): a proxy that challenges again later (its own session expired) has
    that challenge cancelled like a site's, until the next connection probes again (a
    reattach); the probe waits at most ``_PROBE_SECONDS`` (10 s) for a proxy that does
    not answer, and each connection's probe opens and closes one background tab.

    Install it on every connection to a browser started with credentials: intercepts and
    subscriptions belong to the connection that made them, and a challenge nobody
    answers leaves its request waiting.
    """

    def __init__(self, settings: ProxySettings) -> None:
        if not settings.has_credentials:
            raise ValueError("ProxyAuth needs a username and a password")
        self._settings = settings
        self._answered: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._conn: BidiConnection | None = None
        self.answered = 0
        """How many challenges got the credentials (for tests and diagnostics)."""

    async def install(self, conn: BidiConnection, *, probe: bool = False) -> None:
        """Listen to ``network.authRequired`` and block it for every request; with
        ``probe`` (a browser that does not report a challenge's status: Chromium), load
        :data:`PROBE_URL` once so the proxy's own challenge is answered.

        Raises:
            BidiError, BrowserUnavailable: the browser refused or went away.
        """
        self._conn = conn
        conn.add_listener(wire.NETWORK_AUTH_REQUIRED, self._on_auth_required)
        await conn.subscribe([wire.NETWORK_AUTH_REQUIRED])
        await wire.call(conn, wire.network_add_intercept(["authRequired"]))
        if probe:
            await self._probe(conn)

    async def _probe(self, conn: BidiConnection) -> None:
        made = await wire.call(conn, wire.browsing_context_create(background=True))
        context = str(made.get("context", ""))
        ended = asyncio.Event()

        def on_end(params: wire.RequestParams) -> None:
            # The first response or failure of the probe comes after its challenge (if
            # the proxy made one) was answered and the retry was settled.
            if str((params.get("request") or {}).get("url", "")) == PROBE_URL:
                ended.set()

        removers = [conn.add_listener(event, on_end) for event in _PROBE_ENDS]
        try:
            watching = await conn.subscribe(_PROBE_ENDS, [context])
            await wire.call(conn, wire.browsing_context_navigate(context, PROBE_URL, wait="none"))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_PROBE_SECONDS):
                    await ended.wait()
            if not ended.is_set():
                log.info("the proxy probe did not end in %.0f s", _PROBE_SECONDS)
            with contextlib.suppress(BidiError):
                await conn.unsubscribe(watching)
        finally:
            for remove in removers:
                remove()
            with contextlib.suppress(BidiError):
                await wire.call(conn, wire.browsing_context_close(context))

    def _bypassed(self, url: str) -> bool:
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:
            return True
        if host == "localhost" or host.endswith(".localhost") or host in self._settings.bypass:
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def _decide(self, params: wire.RequestParams) -> wire.AuthAction:
        request = params.get("request") or {}
        status = (params.get("response") or {}).get("status")
        ident = str(request.get("request", ""))
        url = str(request.get("url", ""))
        if self._bypassed(url):
            return {"action": "cancel"}
        proxy_challenge = status == _PROXY_CHALLENGE or (status in (-1, None) and url == PROBE_URL)
        if not proxy_challenge:
            return {"action": "cancel"}  # a site's 401: never the proxy's password
        if ident in self._answered:
            log.warning("the proxy refused its credentials: the request is cancelled")
            return {"action": "cancel"}
        self._answered.add(ident)
        self.answered += 1
        return {
            "action": "provideCredentials",
            "credentials": {
                "type": "password",
                "username": self._settings.username,
                "password": self._settings.password,
            },
        }

    def _on_auth_required(self, params: wire.RequestParams) -> None:
        if not params.get("isBlocked", False) or self._conn is None:
            return
        request = str((params.get("request") or {}).get("request", ""))
        self._spawn(self._continue(request, self._decide(params)))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _continue(self, request: str, action: wire.AuthAction) -> None:
        assert self._conn is not None
        command = wire.network_continue_with_auth(request, action)
        try:
            await wire.call(self._conn, command)
        except (BidiError, BrowserUnavailable) as exc:
            # Never the parameters: they hold the password.
            code = getattr(exc, "code", type(exc).__name__)
            log.info("%s failed: %s", command.method, code)
