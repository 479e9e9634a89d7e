"""Request bodies bounded before anything reads them (issue #8 items 8 and 11).

An ASGI middleware in front of every route: a body longer than ``max_body`` bytes is
answered 413 ``body_too_large`` without being read to its end (a ``Content-Length`` over
the limit is refused before a byte is read), and a JSON body nested deeper than
``limits.MAX_DEPTH`` is answered 400 — Python's own JSON parser would stack-overflow on
one a few thousand levels deep, and every layer after it (validation, the journal's
redaction) walks what it was given. So is a JSON body holding a lone surrogate or an
unbounded number anywhere (:mod:`sitekeep.client_json`), the field named: every route,
MCP's too, gets only text and numbers it can encode and store — but a file
(:data:`FILE_PATHS`), which its own reader checks by its format's rules (a storage
state's Web Storage may hold a page's lone surrogate). A body within bounds is handed on
unchanged.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sitekeep import client_json
from sitekeep.api.errors import error_response
from sitekeep.errors import BodyTooLarge, InvalidInput, SitekeepError
from sitekeep.limits import MAX_DEPTH

__all__ = ["FILE_PATHS", "BodyGuard", "depth_of"]

FILE_PATHS = ("/storage-state",)
"""Ends of the paths whose body is a file (``PUT …/storage-state``): its content is
checked by its reader (``sitekeep.interop``), not here."""


def depth_of(value: Any) -> int:
    """How deeply ``value`` nests objects and arrays (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _json_problem(body: bytes, *, file: bool) -> SitekeepError | None:
    too_deep = InvalidInput(f"the request body nests deeper than {MAX_DEPTH} levels", field="body")
    try:
        parsed = client_json.loads(body)
    except RecursionError:
        return too_deep
    except ValueError:
        return None  # not JSON: the route's own parser says so, in the same shape
    if depth_of(parsed) > MAX_DEPTH:
        return too_deep
    if file:
        return None
    try:
        client_json.check(parsed, root="body")
    except InvalidInput as exc:
        return exc
    return None


class BodyGuard:
    """Refuse bodies over ``max_body`` bytes (413) or JSON nested past ``MAX_DEPTH`` (400)."""

    def __init__(self, app: ASGIApp, *, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_body:
            await error_response(BodyTooLarge(cap=self.max_body))(scope, receive, send)
            return
        body, tail = await self._read(receive)
        if body is None:
            await error_response(BodyTooLarge(cap=self.max_body))(scope, receive, send)
            return
        problem = None
        if body and b"json" in headers.get(b"content-type", b"application/json"):
            problem = _json_problem(body, file=scope["path"].endswith(FILE_PATHS))
        if problem is not None:
            await error_response(problem)(scope, receive, send)
            return
        await self.app(scope, _replay(body, tail, receive), send)

    async def _read(self, receive: Receive) -> tuple[bytes | None, Message | None]:
        """The whole body (None past the limit), and a disconnect seen while reading."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks), message
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None, None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), None


def _replay(body: bytes, tail: Message | None, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if tail is not None:
            return tail
        return await receive()

    return replay
