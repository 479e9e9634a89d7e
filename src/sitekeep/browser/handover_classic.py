"""The WebDriver classic half of a handover (SPEC §21; W3C WebDriver §6.5, §6.6).

A handed-out ``webdriver_url`` is ``…/v1/webdriver/<grant>``; under it the client sends
W3C WebDriver classic commands, and only these are relayed to the browser's driver:

* ``/session/<the handed-out id>/<command>`` for the commands of W3C WebDriver's endpoint
  table (:data:`COMMANDS`), each with its own methods — nothing else: no new session
  (``POST /session``), no session list (``GET /sessions``), no other id in any spelling
  or case, no vendor extension (``goog/cdp/*`` speaks CDP to the browser, ``moz/context``
  runs chrome-privileged script, ``moz/addon/*`` installs from a local path, ``se/*`` is
  the Grid's own), no ``DELETE /session/<id>`` (end it with ``DELETE
  /v1/sessions/{key}/browser``, which sitekeep records);
* ``GET /status`` is answered here (``ready: false``: no session is created here).

The path is read from the raw request line: each segment is percent-decoded once, must
not be empty, ``.``, ``..`` or hold ``/``, ``\\`` or a control character, and is
percent-encoded again on the way to the driver, so no spelling reaches another path
there. A query string is refused. Only the JSON body travels on (parsed, and written
again), with headers of sitekeep's own. Commands that would read or reach beyond the
browser are checked first: a navigation goes only where an agent may (``policy.check_url``:
http(s) and ``about:blank``, never sitekeep or a driver; not ``file:``, ``chrome:``…), and
element *send keys* never types an absolute path, which a file input would upload from
the machine the browser runs on.

Refusals and failures are W3C errors: ``{"value": {"error", "message", "stacktrace"}}``
with the spec's status (§6.6).
"""

from __future__ import annotations

import json
import ntpath
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote_to_bytes

import httpx

from sitekeep.address import Refused
from sitekeep.errors import SitekeepError
from sitekeep.policy import check_url

__all__ = [
    "COMMANDS",
    "STATUS",
    "ClassicUpstream",
    "Command",
    "Refusal",
    "check_command",
    "parse_path",
    "route",
]

ANY = "*"
"""A variable segment of a command's path (an element id, a name)."""

COMMANDS: dict[tuple[str, ...], frozenset[str]] = {
    path: frozenset(methods.split())
    for path, methods in {
        ("timeouts",): "GET POST",
        ("url",): "GET POST",
        ("back",): "POST",
        ("forward",): "POST",
        ("refresh",): "POST",
        ("title",): "GET",
        ("window",): "GET POST DELETE",
        ("window", "handles"): "GET",
        ("window", "new"): "POST",
        ("window", "rect"): "GET POST",
        ("window", "maximize"): "POST",
        ("window", "minimize"): "POST",
        ("window", "fullscreen"): "POST",
        ("frame",): "POST",
        ("frame", "parent"): "POST",
        ("element",): "POST",
        ("elements",): "POST",
        ("element", "active"): "GET",
        ("element", ANY, "shadow"): "GET",
        ("element", ANY, "element"): "POST",
        ("element", ANY, "elements"): "POST",
        ("shadow", ANY, "element"): "POST",
        ("shadow", ANY, "elements"): "POST",
        ("element", ANY, "selected"): "GET",
        ("element", ANY, "attribute", ANY): "GET",
        ("element", ANY, "property", ANY): "GET",
        ("element", ANY, "css", ANY): "GET",
        ("element", ANY, "text"): "GET",
        ("element", ANY, "name"): "GET",
        ("element", ANY, "rect"): "GET",
        ("element", ANY, "enabled"): "GET",
        ("element", ANY, "computedrole"): "GET",
        ("element", ANY, "computedlabel"): "GET",
        ("element", ANY, "click"): "POST",
        ("element", ANY, "clear"): "POST",
        ("element", ANY, "value"): "POST",
        ("element", ANY, "screenshot"): "GET",
        ("source",): "GET",
        ("execute", "sync"): "POST",
        ("execute", "async"): "POST",
        ("cookie",): "GET POST DELETE",
        ("cookie", ANY): "GET DELETE",
        ("actions",): "POST DELETE",
        ("alert", "dismiss"): "POST",
        ("alert", "accept"): "POST",
        ("alert", "text"): "GET POST",
        ("screenshot",): "GET",
        ("print",): "POST",
    }.items()
}
"""W3C WebDriver classic commands under ``/session/<id>/`` (§6.5 endpoints; WebDriver
BiDi's ``webSocketUrl`` aside), and the methods each takes."""

STATUS = {
    "invalid argument": 400,
    "invalid session id": 404,
    "unknown command": 404,
    "unknown method": 405,
    "session not created": 500,
    "unsupported operation": 500,
    "unknown error": 500,
}
"""HTTP status of each W3C error code a handover answers itself (§6.6)."""

_MAX_SEGMENT = 1024
_BODY_METHODS = frozenset({"POST"})
_HEADERS = {"Content-Type": "application/json; charset=utf-8", "Accept": "application/json"}
_CLOSE = "end the browser with DELETE /v1/sessions/{key}/browser instead"


class Refusal(Exception):
    """A W3C WebDriver error a handover answers (§6.6): ``code`` is the spec's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def status(self) -> int:
        return STATUS.get(self.code, 500)

    def json(self) -> dict[str, Any]:
        """``{"value": {"error", "message", "stacktrace": ""}}``."""
        return {"value": {"error": self.code, "message": self.message, "stacktrace": ""}}


@dataclass(frozen=True, slots=True)
class Command:
    """One classic command for the handed-out session.

    Attributes:
        method: ``GET``, ``POST`` or ``DELETE``.
        path: the segments after ``/session/<id>/``, decoded (``("element", id, "click")``).
        pattern: its row of :data:`COMMANDS` (``("element", "*", "click")``).
    """

    method: str
    path: tuple[str, ...]
    pattern: tuple[str, ...]


def parse_path(raw: bytes) -> list[str]:
    """The segments of a raw request path, each percent-decoded once (UTF-8).

    Raises:
        Refusal: ``invalid argument`` — an empty, ``.`` or ``..`` segment, one that decodes
            to ``/``, ``\\`` or a control character, or is not UTF-8, or is too long.
    """
    if not raw.startswith(b"/"):
        raise Refusal("invalid argument", "the path must start with /")
    segments = []
    for part in raw[1:].split(b"/"):
        try:
            segment = unquote_to_bytes(part).decode("utf-8")
        except UnicodeDecodeError:
            raise Refusal("invalid argument", "a path segment is not UTF-8") from None
        if segment in ("", ".", "..") or len(segment) > _MAX_SEGMENT or _unsafe(segment):
            raise Refusal("invalid argument", "the path holds an empty, dot or unsafe segment")
        segments.append(segment)
    return segments


def _unsafe(segment: str) -> bool:
    return any(c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F for c in segment)


def route(method: str, tail: Sequence[str], session_id: str) -> Command | None:
    """The command ``method tail`` names under the handover whose session id is
    ``session_id``; None for ``GET /status`` (answered by the handover itself).

    Args:
        tail: the path's segments after the grant.

    Raises:
        Refusal: ``session not created`` (``POST /session``), ``invalid session id``
            (another session), ``unknown command`` (not a W3C classic command),
            ``unknown method`` (a command's path with another method), ``unsupported
            operation`` (``DELETE /session/<id>``).
    """
    if list(tail) == ["status"] and method == "GET":
        return None
    if list(tail) == ["session"] and method == "POST":
        raise Refusal(
            "session not created",
            "a handover drives its one session; open another with POST /v1/sessions",
        )
    if len(tail) < 2 or tail[0] != "session":
        raise Refusal("unknown command", "only /status and /session/<id>/… are served here")
    if tail[1] != session_id:
        raise Refusal("invalid session id", "not the session this handover is for")
    rest = tuple(tail[2:])
    if not rest:
        if method == "DELETE":
            raise Refusal("unsupported operation", f"the session is sitekeep's: {_CLOSE}")
        raise Refusal("unknown command", "no such command")
    pattern = _pattern_of(rest)
    if pattern is None:
        raise Refusal(
            "unknown command", "only W3C WebDriver classic commands are relayed (no extensions)"
        )
    if method not in COMMANDS[pattern]:
        raise Refusal("unknown method", f"{'/'.join(pattern)} takes {sorted(COMMANDS[pattern])}")
    return Command(method, rest, pattern)


def _pattern_of(path: tuple[str, ...]) -> tuple[str, ...] | None:
    for pattern in COMMANDS:
        if len(pattern) == len(path) and all(
            want in (ANY, got) for want, got in zip(pattern, path, strict=True)
        ):
            return pattern
    return None


def parse_body(command: Command, raw: bytes) -> dict[str, Any] | None:
    """The command's JSON body (an object; none for ``GET``/``DELETE``).

    Raises:
        Refusal: ``invalid argument`` — not a JSON object.
    """
    if command.method not in _BODY_METHODS:
        return None
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise Refusal("invalid argument", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise Refusal("invalid argument", "the body must be a JSON object")
    return body


def check_command(
    command: Command,
    body: dict[str, Any] | None,
    *,
    own: Refused,
    own_origins: Iterable[str],
) -> None:
    """Refuse a command that would reach beyond the browser (see the module docstring).

    Raises:
        Refusal: ``invalid argument`` — a URL an agent may not open (its reason), or text
            an element would read as a file to upload.
    """
    if command.pattern == ("url",) and body is not None:
        try:
            check_url(body.get("url"), own=own, own_origins=own_origins)  # type: ignore[arg-type]
        except SitekeepError as exc:
            raise Refusal("invalid argument", f"url: {exc.message}") from None
    if command.pattern == ("element", ANY, "value") and body is not None:
        text = body.get("text")
        if isinstance(text, str) and any(_a_path(line) for line in text.splitlines()):
            raise Refusal(
                "invalid argument",
                "text: an absolute path is not typed over a handover (a file input would "
                "upload that file from the machine the browser runs on); type it with "
                "POST …/actions",
            )


def _a_path(line: str) -> bool:
    """Whether a driver would read ``line`` as a file to upload: an absolute path, POSIX
    or Windows (``/…``, ``\\…``, ``C:\\…``); chromedriver and geckodriver take no other."""
    line = line.strip()
    return posixpath.isabs(line) or ntpath.isabs(line)


class ClassicUpstream:
    """The calls a handover makes to the browser's WebDriver server (httpx, one pool)."""

    def __init__(self, *, timeout: float, max_answer: int) -> None:
        """``timeout``: seconds a command may take (a page load is bounded by its own
        timeout, 300 s by default); ``max_answer``: bytes of the largest answer."""
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=10.0),
            follow_redirects=False,
            trust_env=False,
        )
        self._max = max_answer

    async def aclose(self) -> None:
        await self._client.aclose()

    async def call(
        self,
        endpoint: str,
        session_id: str,
        method: str,
        path: Sequence[str],
        body: dict[str, Any] | None,
    ) -> tuple[int, Any]:
        """``method {endpoint}/session/{session_id}/{path}`` with ``body``: the status and
        the parsed answer (each segment percent-encoded; no header of the client's).

        Raises:
            Refusal: ``unknown error`` — the driver could not be reached, answered
                something other than JSON, or more than ``max_answer`` bytes.
        """
        url = f"{endpoint.rstrip('/')}/session/{quote(session_id, safe='')}"
        url += "".join("/" + quote(segment, safe="") for segment in path)
        content = None if body is None else json.dumps(body).encode()
        try:
            async with self._client.stream(method, url, content=content, headers=_HEADERS) as reply:
                data = await self._read(reply)
                status = reply.status_code
        except httpx.HTTPError as exc:  # its text may hold the driver's URL: never shown
            raise Refusal(
                "unknown error", f"the browser's driver did not answer ({type(exc).__name__})"
            ) from None
        try:
            return status if 200 <= status < 600 else 500, json.loads(data)
        except (ValueError, RecursionError):
            raise Refusal(
                "unknown error", "the browser's driver answered something not JSON"
            ) from None

    async def _read(self, reply: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in reply.aiter_bytes():
            size += len(chunk)
            if size > self._max:
                raise Refusal("unknown error", f"the answer is larger than {self._max} bytes")
            chunks.append(chunk)
        return b"".join(chunks)


def window_handles(answer: Any) -> list[Any]:
    """The handles of a ``GET /window/handles`` answer (none when it is not one)."""
    value = answer.get("value") if isinstance(answer, dict) else None
    return value if isinstance(value, list) else []
