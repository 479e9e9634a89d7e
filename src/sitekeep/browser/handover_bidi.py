"""The WebDriver BiDi half of a handover (SPEC §21; W3C WebDriver BiDi §5, §7).

A handed-out ``bidi_url`` is a WebSocket sitekeep serves; each client socket gets a BiDi
socket of its own to the browser (chromedriver's, Firefox's remote agent, a Grid's
``se/bidi``) and :class:`BidiRelay` pumps between them. Sitekeep's own connection to the
same browser carries what keeps the browser in bounds — above all the own-address guard's
``network.addIntercept`` (``browser.guard``), which fails every request a page makes to
sitekeep or a driver — and in BiDi whoever holds a socket to a session can answer or
remove what another socket made. So :class:`BidiGate` lets through what reaches this
browser only, and nothing that undoes sitekeep's hold on it:

* modules of the spec only (``session``, ``browser``, ``browsingContext``, ``emulation``,
  ``input``, ``log``, ``network``, ``permissions``, ``script``, ``storage``); no vendor
  extension command or event (``goog:cdp.sendCommand`` speaks CDP), no ``webExtension``
  (installs from a path on the browser's machine);
* never ``session.new``, ``session.end`` or ``browser.close`` (end the browser with
  ``DELETE /v1/sessions/{key}/browser``), ``browser.setDownloadBehavior`` (writes to a
  folder of that machine), ``input.setFiles`` (reads files there), a user context with a
  ``proxy`` of its own (the browser would connect wherever it names, past the guard), a
  ``browsingContext.navigate`` an agent may not make (``policy.check_url``), or closing
  the browser's last tab;
* ``network.removeIntercept``, ``script.removePreloadScript`` and ``session.unsubscribe``
  by id only for what this socket made (the ids it got back); never ``session.unsubscribe``
  by event names (it names no one's subscription, and Firefox's sockets to a session share
  its subscriptions: sitekeep's guard's would go, and with it its intercept);
* no ``Proxy-Authorization`` request header in an event (the proxy's credentials are a
  secret's values, which sitekeep answers the proxy's challenge with);
* ``network.continueRequest``/``continueResponse``/``continueWithAuth``/``failRequest``/
  ``provideResponse`` only for a request an event showed blocked by an intercept of this
  socket — one blocked by sitekeep's alone is sitekeep's to answer; when sitekeep's guard
  holds it too, it is released only if its URL reaches none of the refused sockets (the
  guard's own test, :func:`sitekeep.browser.guard.reaches_refused`), and its URL is never
  changed (``url``).

Command ids are the relay's own on the browser's socket (the client's are given back in
each answer), so the relay can ask the browser itself and a client cannot answer for it.
Refusals are BiDi error messages, ``{"type": "error", "id", "error", "message"}``; every
answer and event passes :class:`~sitekeep.browser.scrub.Scrubber` first. Bounds: a client
message of at most ``max_message`` bytes, :data:`IN_FLIGHT` commands unanswered, a queue
of :data:`QUEUED` commands waiting for their turn (then the relay reads no more: the
client waits), :data:`BLOCKED` requests remembered.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.protocol import State

from sitekeep.address import Refused
from sitekeep.browser import wire
from sitekeep.browser.bidi import ack_at_once, open_socket
from sitekeep.browser.scrub import Scrubber
from sitekeep.errors import SitekeepError
from sitekeep.policy import check_url

__all__ = [
    "BLOCKED",
    "IN_FLIGHT",
    "MODULES",
    "QUEUED",
    "BidiGate",
    "BidiRefusal",
    "BidiRelay",
    "Outbound",
    "open_upstream",
]


MODULES = frozenset(
    {
        "session",
        "browser",
        "browsingContext",
        "emulation",
        "input",
        "log",
        "network",
        "permissions",
        "script",
        "storage",
    }
)
"""The BiDi modules a handover relays (the spec's, ``webExtension`` aside)."""
IN_FLIGHT = 256
"""Commands of one socket sent and not yet answered; past it, a command is refused."""
QUEUED = 64
"""Commands of one socket waiting for their turn; past it, the relay stops reading."""
BLOCKED = 4096
"""Blocked requests of this socket's intercepts remembered at once (oldest forgotten)."""
UPSTREAM_MAX = 64 * 1024 * 1024
"""Bytes of the largest message the browser may send (a full-page screenshot)."""
SEND_WITHIN = 30.0
"""Seconds a message may wait to be written to either socket."""
CLEAN_UP_WITHIN = 2.0
"""Seconds the relay waits, as it ends, for the browser to drop what the socket made."""

_CLOSE = "end the browser with DELETE /v1/sessions/{key}/browser instead"
_REFUSED = {
    wire.SESSION_NEW: "a handover drives its one session; open another with POST /v1/sessions",
    wire.SESSION_END: f"the session is sitekeep's: {_CLOSE}",
    wire.BROWSER_CLOSE: f"the browser is sitekeep's: {_CLOSE}",
    wire.BROWSER_SET_DOWNLOAD_BEHAVIOR: (
        "downloads would be written on the machine the browser runs on"
    ),
    wire.INPUT_SET_FILES: "files would be read from the machine the browser runs on",
}
_CONTINUATIONS = frozenset(
    {
        wire.NETWORK_CONTINUE_REQUEST,
        wire.NETWORK_CONTINUE_RESPONSE,
        wire.NETWORK_CONTINUE_WITH_AUTH,
        wire.NETWORK_FAIL_REQUEST,
        wire.NETWORK_PROVIDE_RESPONSE,
    }
)
_BLOCKING: frozenset[str] = frozenset(
    {wire.NETWORK_BEFORE_REQUEST_SENT, wire.NETWORK_RESPONSE_STARTED, wire.NETWORK_AUTH_REQUIRED}
)
_FINISHED: frozenset[str] = frozenset({wire.NETWORK_RESPONSE_COMPLETED, wire.NETWORK_FETCH_ERROR})
_MAX_ID = 2**53 - 1


class BidiRefusal(Exception):
    """A command the relay answers itself with a BiDi error (§5.2 ``ErrorResponse``)."""

    def __init__(self, ident: int | None, code: str, message: str) -> None:
        super().__init__(message)
        self.ident = ident
        self.code = code
        self.message = message

    def text(self) -> str:
        """The error message: ``{"type": "error", "id", "error", "message"}``."""
        error = {"type": "error", "id": self.ident, "error": self.code, "message": self.message}
        return json.dumps(error)


@dataclass(frozen=True, slots=True)
class Outbound:
    """A command for the browser's socket.

    Attributes:
        ident: its id there (the relay's). method, params: the command.
        urgent: a network continuation: sent at once, not after a turn (a call holding
            the session may be waiting on that very request).
        released: the URL of a request it would release that sitekeep's guard also
            holds, to be checked against the refused sockets first; else ``""``.
    """

    ident: int
    method: str
    params: dict[str, Any]
    urgent: bool = False
    released: str = ""

    def text(self) -> str:
        return json.dumps({"id": self.ident, "method": self.method, "params": self.params})


@dataclass(frozen=True, slots=True)
class _Asked:
    client: int | None  # None: the relay's own command
    method: str
    params: dict[str, Any]


class BidiGate:
    """What one handed-out BiDi socket may send, and what it has made (no I/O).

    Attributes:
        intercepts, preloads, subscriptions: ids of what this socket made.
    """

    def __init__(self, *, own: Refused, own_origins: Iterable[str]) -> None:
        self.intercepts: set[str] = set()
        self.preloads: set[str] = set()
        self.subscriptions: set[str] = set()
        self._own = own
        self._own_origins = list(own_origins)
        self._blocked: OrderedDict[str, tuple[frozenset[str], str]] = OrderedDict()
        self._asked: dict[int, _Asked] = {}
        self._ids = itertools.count(1)

    def command(self, text: str) -> Outbound:
        """The client's message as a command for the browser.

        Raises:
            BidiRefusal: not a command (``invalid argument``), an unknown or refused one
                (``unknown command``, ``unsupported operation``, ``invalid argument``
                naming why), or :data:`IN_FLIGHT` are unanswered.
        """
        ident, method, params = _parse(text)
        released = self._check(ident, method, params)
        if len(self._asked) >= IN_FLIGHT:
            raise BidiRefusal(ident, "unknown error", f"{IN_FLIGHT} commands are unanswered")
        return self._ask(ident, method, params, released)

    def own(self, command: wire.Command[Any]) -> Outbound:
        """A command of the relay's own (its answer goes to the relay, never the client)."""
        return self._ask(None, command.method, dict(command.params), "")

    def _ask(self, ident: int | None, method: str, params: dict[str, Any], url: str) -> Outbound:
        up = next(self._ids)
        self._asked[up] = _Asked(ident, method, params)
        return Outbound(up, method, params, method in _CONTINUATIONS, url)

    def forget(self, outbound: Outbound) -> int | None:
        """A command that will not be sent after all: the client's id for it."""
        asked = self._asked.pop(outbound.ident, None)
        return asked.client if asked is not None else None

    def _check(self, ident: int, method: str, params: dict[str, Any]) -> str:
        module = method.split(".", 1)[0]
        if ":" in method or "." not in method or module not in MODULES:
            raise BidiRefusal(ident, "unknown command", f"{method!r} is not relayed by sitekeep")
        if method in _REFUSED:
            raise BidiRefusal(ident, "unsupported operation", f"sitekeep: {_REFUSED[method]}")
        why = self._argument_refused(method, params)
        if why is not None:
            raise BidiRefusal(ident, "invalid argument", why)
        self._check_own(ident, method, params)
        return self._check_release(ident, method, params)

    def _argument_refused(self, method: str, params: dict[str, Any]) -> str | None:
        """Why an argument of the command reaches beyond the browser, or None."""
        if method == wire.BROWSING_CONTEXT_NAVIGATE:
            try:
                check_url(params.get("url"), own=self._own, own_origins=self._own_origins)  # type: ignore[arg-type]
            except SitekeepError as exc:
                return f"url: {exc.message}"
        if method == wire.SESSION_SUBSCRIBE:
            events = params.get("events")
            if not isinstance(events, list) or any(":" in str(e) for e in events):
                return "sitekeep: events of the spec's modules only"
        if method == wire.BROWSER_CREATE_USER_CONTEXT and "proxy" in params:
            return "sitekeep: a user context takes no proxy here"
        return None

    def _check_own(self, ident: int, method: str, params: dict[str, Any]) -> None:
        made = {
            wire.NETWORK_REMOVE_INTERCEPT: (self.intercepts, [params.get("intercept")]),
            wire.SCRIPT_REMOVE_PRELOAD_SCRIPT: (self.preloads, [params.get("script")]),
            wire.SESSION_UNSUBSCRIBE: (self.subscriptions, params.get("subscriptions")),
        }.get(method)
        if made is None:
            return
        if method == wire.SESSION_UNSUBSCRIBE and set(params) != {"subscriptions"}:
            # By event names (UnsubscribeByAttributesRequest) it names no one's: Firefox's
            # sockets to a session share its subscriptions, sitekeep's guard's too.
            raise BidiRefusal(
                ident, "invalid argument", "sitekeep: unsubscribe by the subscription ids only"
            )
        ids, asked = made
        if not isinstance(asked, list) or not asked or not all(i in ids for i in asked):
            raise BidiRefusal(
                ident, "invalid argument", "sitekeep: only what this socket made can be removed"
            )

    def _check_release(self, ident: int, method: str, params: dict[str, Any]) -> str:
        if method not in _CONTINUATIONS:
            return ""
        held = self._blocked.get(str(params.get("request")))
        if held is None:
            raise BidiRefusal(
                ident,
                "invalid argument",
                "sitekeep: the request is not blocked by an intercept of this socket",
            )
        if method == wire.NETWORK_CONTINUE_REQUEST and "url" in params:
            raise BidiRefusal(
                ident, "invalid argument", "sitekeep: a request's url is not changed here"
            )
        holders, url = held
        if holders - self.intercepts and method != wire.NETWORK_FAIL_REQUEST:
            return url  # sitekeep's guard holds it too: released only if it reaches none
        return ""

    def answer(self, message: dict[str, Any]) -> tuple[int | None, dict[str, Any] | None]:
        """A message from the browser: ``(relay id, None)`` for the answer to one of the
        relay's own commands, ``(None, message)`` for the client (its id given back),
        ``(None, None)`` for nothing."""
        kind = message.get("type")
        if kind == "event":
            self._saw(str(message.get("method")), message.get("params"))
            return None, _without_proxy_credentials(message)
        ident = message.get("id")
        asked = self._asked.pop(ident, None) if isinstance(ident, int) else None
        if asked is None:
            return None, (message if kind == "error" and ident is None else None)
        if asked.client is None:
            return ident, None
        if kind == "success":
            self._made(asked, message.get("result"))
        return None, {**message, "id": asked.client}

    def _made(self, asked: _Asked, result: Any) -> None:
        result = result if isinstance(result, dict) else {}
        added = {
            wire.NETWORK_ADD_INTERCEPT: (self.intercepts, result.get("intercept")),
            wire.SCRIPT_ADD_PRELOAD_SCRIPT: (self.preloads, result.get("script")),
            wire.SESSION_SUBSCRIBE: (self.subscriptions, result.get("subscription")),
        }.get(asked.method)
        if added is not None and isinstance(added[1], str):
            added[0].add(added[1])
        if asked.method == wire.NETWORK_REMOVE_INTERCEPT:
            self.intercepts.discard(str(asked.params.get("intercept")))
        elif asked.method == wire.SCRIPT_REMOVE_PRELOAD_SCRIPT:
            self.preloads.discard(str(asked.params.get("script")))
        elif asked.method == wire.SESSION_UNSUBSCRIBE:
            self.subscriptions.difference_update(asked.params.get("subscriptions") or [])
        elif asked.method in _CONTINUATIONS:
            self._blocked.pop(str(asked.params.get("request")), None)

    def _saw(self, method: str, params: Any) -> None:
        if not isinstance(params, dict):
            return
        found = params.get("request")
        request: dict[str, Any] = found if isinstance(found, dict) else {}
        ident = str(request.get("request", ""))
        if method in _FINISHED:
            self._blocked.pop(ident, None)
        if method not in _BLOCKING or not params.get("isBlocked"):
            return
        holders = frozenset(str(i) for i in params.get("intercepts") or [])
        if holders & self.intercepts:
            self._blocked[ident] = (holders, str(request.get("url", "")))
            self._blocked.move_to_end(ident)
            while len(self._blocked) > BLOCKED:
                self._blocked.popitem(last=False)

    def clean_up(self) -> list[Outbound]:
        """The relay's commands that remove what this socket made, as it ends."""
        return [
            *(self.own(wire.network_remove_intercept(i)) for i in self.intercepts),
            *(self.own(wire.script_remove_preload_script(s)) for s in self.preloads),
        ]


def _without_proxy_credentials(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` without a ``Proxy-Authorization`` request header: sitekeep answers the
    proxy's challenge with a secret's values (SPEC §14), which are write-only (§7)."""
    params = event.get("params")
    request = params.get("request") if isinstance(params, dict) else None
    headers = request.get("headers") if isinstance(request, dict) else None
    if not isinstance(headers, list):
        return event
    kept = [
        h
        for h in headers
        if not (isinstance(h, dict) and str(h.get("name", "")).lower() == "proxy-authorization")
    ]
    if len(kept) == len(headers):
        return event
    assert isinstance(params, dict) and isinstance(request, dict)
    return {**event, "params": {**params, "request": {**request, "headers": kept}}}


def _parse(text: str) -> tuple[int, str, dict[str, Any]]:
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        raise BidiRefusal(None, "invalid argument", "a command is a JSON object") from None
    ident = message.get("id") if isinstance(message, dict) else None
    if not isinstance(ident, int) or isinstance(ident, bool) or not 0 <= ident <= _MAX_ID:
        raise BidiRefusal(None, "invalid argument", "a command needs an integer id")
    method, params = message.get("method"), message.get("params", {})
    if not isinstance(method, str) or not isinstance(params, dict):
        raise BidiRefusal(ident, "invalid argument", "a command needs a method and params")
    return ident, method, params


async def open_upstream(url: str, *, timeout: float) -> ClientConnection:
    """A BiDi socket of the relay's own to the browser at ``url``.

    Raises:
        BrowserUnavailable: it could not be opened within ``timeout``.
    """
    ws = await open_socket(url, timeout=timeout, max_size=UPSTREAM_MAX)
    ack_at_once(ws)
    return ws


Send = Callable[[str], Awaitable[None]]
Receive = Callable[[], Awaitable[str]]


class BidiRelay:
    """Pumps one client socket and its own socket to the browser (module docstring).

    :meth:`run` returns when the client leaves (None), the browser's socket closes
    (``"browser"``), ``watch`` names why the handover ended (its message) or could not
    tell (a store out of reach: that error's message).
    """

    def __init__(
        self,
        gate: BidiGate,
        upstream: ClientConnection,
        *,
        send: Send,
        receive: Receive,
        scrub: Scrubber,
        turn: Callable[[], Awaitable[None]],
        reaches: Callable[[str], Awaitable[bool]],
        watch: Callable[[], Awaitable[str | None]],
        every: float,
        max_message: int,
    ) -> None:
        self._gate = gate
        self._up = upstream
        self._send = send
        self._receive = receive
        self._scrub = scrub
        self._turn = turn
        self._reaches = reaches
        self._watch = watch
        self._every = every
        self._max = max_message
        self._queue: asyncio.Queue[Outbound] = asyncio.Queue(QUEUED)
        self._own: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._saying = asyncio.Lock()

    async def run(self) -> str | None:
        """Pump until one side ends; then drop what the client made (bounded)."""
        tasks = [
            asyncio.create_task(self._from_client(), name="handover-client"),
            asyncio.create_task(self._from_browser(), name="handover-browser"),
            asyncio.create_task(self._in_turn(), name="handover-turns"),
            asyncio.create_task(self._watching(), name="handover-watch"),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        ended = next(iter(done))
        await self._clean_up()
        failed = None if ended.cancelled() else ended.exception()
        if isinstance(failed, SitekeepError):  # a store out of reach: the grant is unknown
            return f"sitekeep: {failed.message}"
        return None if ended.cancelled() or failed is not None else ended.result()

    async def say(self, text: str) -> None:
        """Send ``text`` to the client (one writer at a time; bounded)."""
        async with self._saying:
            async with asyncio.timeout(SEND_WITHIN):
                await self._send(text)

    async def _from_client(self) -> None:
        while True:
            text = await self._receive()
            if len(text.encode()) > self._max:
                too_big = f"a message is at most {self._max} bytes"
                await self.say(BidiRefusal(None, "invalid argument", too_big).text())
                continue
            try:
                outbound = self._gate.command(text)
            except BidiRefusal as refusal:
                await self.say(refusal.text())
                continue
            if outbound.urgent:
                await self._release(outbound)
            else:
                await self._queue.put(outbound)

    async def _release(self, outbound: Outbound) -> None:
        if outbound.released and await self._reaches(outbound.released):
            why = "sitekeep: the request goes to sitekeep or a driver; it is not released"
            await self._refuse(outbound, "invalid argument", why)
            return
        await self._to_browser(outbound.text())

    async def _refuse(self, outbound: Outbound, code: str, message: str) -> None:
        """Answer ``outbound`` with an error instead of sending it."""
        ident = self._gate.forget(outbound)
        await self.say(BidiRefusal(ident, code, message).text())

    async def _in_turn(self) -> None:
        while True:
            outbound = await self._queue.get()
            refusal = await self._refusal(outbound)
            if refusal is not None:
                await self._refuse(outbound, *refusal)
                continue
            await self._to_browser(outbound.text())

    async def _refusal(self, outbound: Outbound) -> tuple[str, str] | None:
        """Why ``outbound`` is not sent after its turn, or None."""
        try:
            await self._turn()
        except SitekeepError as exc:
            return "unknown error", f"sitekeep: {exc.message}"
        if outbound.method == wire.BROWSING_CONTEXT_CLOSE and await self._last_tab(outbound):
            return "unsupported operation", f"sitekeep: it is the browser's last tab; {_CLOSE}"
        return None

    async def _last_tab(self, outbound: Outbound) -> bool:
        tree = await self._ask(wire.browsing_context_get_tree(max_depth=0))
        tops = [c.get("context") for c in (tree.get("result") or {}).get("contexts") or []]
        return tops == [outbound.params.get("context")]

    async def _ask(self, command: wire.Command[Any]) -> dict[str, Any]:
        outbound = self._gate.own(command)
        answer = asyncio.get_running_loop().create_future()
        self._own[outbound.ident] = answer
        try:
            await self._to_browser(outbound.text())
            async with asyncio.timeout(SEND_WITHIN):
                result: dict[str, Any] = await answer
                return result
        finally:
            self._own.pop(outbound.ident, None)

    async def _to_browser(self, text: str) -> None:
        async with asyncio.timeout(SEND_WITHIN):
            await self._up.send(text)

    async def _from_browser(self) -> str:
        with contextlib.suppress(websockets.exceptions.ConnectionClosed):
            async for raw in self._up:
                await self._pass_on(raw)
        return "browser"

    async def _pass_on(self, raw: str | bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        own, out = self._gate.answer(message)
        if own is not None:
            answer = self._own.get(own)
            if answer is not None and not answer.done():
                answer.set_result(message)
        elif out is not None:
            await self.say(json.dumps(self._scrub.value(out)))

    async def _watching(self) -> str:
        while True:
            await asyncio.sleep(self._every)
            why = await self._watch()
            if why is not None:
                return why

    async def _clean_up(self) -> None:
        """Remove the intercepts and preload scripts the client made: left behind, an
        intercept would block the browser's requests with nobody to answer them."""
        removals = self._gate.clean_up()
        if not removals or self._up.state is not State.OPEN:
            return
        waiting = {r.ident for r in removals}
        with contextlib.suppress(TimeoutError, websockets.exceptions.ConnectionClosed):
            async with asyncio.timeout(CLEAN_UP_WITHIN):
                for removal in removals:
                    await self._up.send(removal.text())
                while waiting:
                    message = json.loads(await self._up.recv())
                    own, _ = (
                        self._gate.answer(message) if isinstance(message, dict) else (None, None)
                    )
                    if own is not None:
                        waiting.discard(own)
