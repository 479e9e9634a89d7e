"""The browser never reaches the sitekeep server itself, nor a WebDriver/BiDi endpoint
(SPEC §12; issue #8 item 5; attacker review C1).

A URL check before navigating cannot see what a page does next: a 302 from an allowed
host, a frame, an image, a ``fetch``, a name that resolves to loopback. So every browser
carries a ``network.addIntercept`` in the ``beforeRequestSent`` phase (W3C WebDriver BiDi
§7.6.3) for requests to the server's **port** on any host — the URL pattern keeps every
other request free of a round trip — and each such request is resolved the way the
browser resolves it (``sitekeep.address``): one that reaches the server's own listening
address fails (``network.failRequest``, the page sees a network error) and any other
continues (``network.continueRequest``). Redirect hops are requests of their own, so a
redirect to the server fails at the hop.

Install it on every connection, like the proxy's credentials: intercepts and
subscriptions belong to the connection that made them, and a blocked request nobody
answers wedges its tab (research/bidi-spike.md §9 gotcha 7) — so every decision is
answered, and a failed decision fails the request rather than leaving it blocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit

from sitekeep.address import Refused, ServerAddress, port_of, system_resolve
from sitekeep.browser import wire
from sitekeep.browser.bidi import BidiConnection
from sitekeep.errors import BidiError, BrowserUnavailable

__all__ = ["OwnAddressGuard", "reaches_refused"]

log = logging.getLogger(__name__)

_DEFAULT_PORTS = (80, 443)
_RESOLVE_TIMEOUT = 2.0


class OwnAddressGuard:
    """Fails every request of a browser that would reach the sitekeep server or one of
    the WebDriver/BiDi endpoints it drives browsers through (``address.Refused``).

    Attributes:
        refusals: how many requests it has failed on this connection.
    """

    def __init__(self, own: Refused | ServerAddress) -> None:
        self._own = own if isinstance(own, Refused) else Refused(own)
        self._conn: BidiConnection | None = None
        self._intercepts: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._everything = False
        self.refusals = 0

    async def install(self, conn: BidiConnection) -> None:
        """Subscribe to ``network.beforeRequestSent`` and intercept requests to every
        refused port on any host (every request when one is a scheme's default port,
        which a URL pattern cannot tell from none); endpoints refused later get an
        intercept of their own before they are used (``Refused.add``).

        Raises:
            BidiError, BrowserUnavailable: the browser refused or went away.
        """
        self._conn = conn
        conn.add_listener(wire.NETWORK_BEFORE_REQUEST_SENT, self._on_request)
        await conn.subscribe([wire.NETWORK_BEFORE_REQUEST_SENT])
        ports = self._own.ports
        if ports & set(_DEFAULT_PORTS):
            await self._intercept(None)
        else:
            await self._intercept(sorted(ports))
        self._own.subscribe(self._on_new_port)
        conn.on_close(lambda: self._own.unsubscribe(self._on_new_port))

    async def _intercept(self, ports: list[int] | None) -> None:
        assert self._conn is not None
        patterns: list[wire.UrlPattern] | None = None
        if ports is None:
            self._everything = True
        else:
            patterns = [{"type": "pattern", "port": str(p)} for p in ports]
        command = wire.network_add_intercept(["beforeRequestSent"], url_patterns=patterns)
        result = await wire.call(self._conn, command)
        self._intercepts.add(str(result.get("intercept", "")))

    async def _on_new_port(self, port: int) -> None:
        if self._everything or self._conn is None or self._conn.closed:
            return
        try:
            await self._intercept(None if port in _DEFAULT_PORTS else [port])
        except (BidiError, BrowserUnavailable):  # a browser going away needs no guard
            log.info("could not add an intercept for a new endpoint: the browser is gone")

    def _on_request(self, params: wire.RequestParams) -> None:
        intercepts = set(params.get("intercepts") or [])
        if not params.get("isBlocked") or not intercepts & self._intercepts:
            return
        request = params.get("request") or {}
        ident, url = str(request.get("request", "")), str(request.get("url", ""))
        # Another intercept (the spare tab's) answers requests it also holds.
        alone = intercepts <= self._intercepts
        task = asyncio.get_running_loop().create_task(self._answer(ident, url, alone))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, request: str, url: str, alone: bool) -> None:
        assert self._conn is not None
        try:
            own = await self._reaches(url)
        except Exception:  # never leave the request blocked: it would wedge the tab
            log.exception("the own-address check failed: the request is failed")
            own = True
        if own:
            self.refusals += 1
            log.info("refused a browser request to the sitekeep server or a driver")
        elif not alone:
            return
        answer = wire.network_fail_request if own else wire.network_continue_request
        with contextlib.suppress(BidiError, BrowserUnavailable):
            await wire.call(self._conn, answer(request))

    async def _reaches(self, url: str) -> bool:
        return await reaches_refused(self._own, url)


async def reaches_refused(refused: Refused, url: str) -> bool:
    """Whether a request to ``url`` would reach one of ``refused``'s sockets, the host
    resolved the way the browser resolves it (its rules, else the system resolver in a
    worker thread, bounded by 2 s).

    Raises:
        TimeoutError: the system resolver did not answer in time.
    """
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    sockets = refused.on_port(port_of(url))
    if not host or not sockets:
        return False
    for own in sockets:
        found = own.addresses_of(host)
        if not found:  # not a literal nor a name the browser maps: the system resolver
            loop = asyncio.get_running_loop()
            async with asyncio.timeout(_RESOLVE_TIMEOUT):
                found = await loop.run_in_executor(None, system_resolve, host)
        if any(own.is_own(address) for address in found):
            return True
    return False
