"""What every MCP tool and resource of sitekeep shares: the lifespan context they reach the
service through, who makes a call, its session, and the one place a sitekeep error becomes
an MCP error (SPEC §5).

The service is not captured when the server is built: the server's lifespan (the SDK's
``MCPServer(lifespan=…)``) yields a :class:`Backing`, and each call reads it from
``ctx.request_context.lifespan_context`` (:func:`backing`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

from sitekeep.errors import NotFound, SitekeepError, error_json
from sitekeep.model import Principal
from sitekeep.service import Service

__all__ = [
    "DEFAULT_SESSION",
    "JSON",
    "SESSION_HEADER",
    "Backing",
    "Ctx",
    "PrincipalOf",
    "ServiceOf",
    "backing",
    "guarded",
    "mcp_error",
]

Ctx = Context[Any, Any]
ServiceOf = Callable[[], Service]
"""The service the calls go to, opened by the transport's owner; asked once, when the
server starts (its lifespan)."""
PrincipalOf = Callable[[Ctx], Principal]
"""Who makes a call: fixed for stdio, from the bearer token for HTTP."""

DEFAULT_SESSION = "default"
SESSION_HEADER = "x-sitekeep-session"
"""HTTP header naming the connection's default session (stdio: ``SITEKEEP_SESSION``)."""

JSON = dict[str, Any]
P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backing:
    """The server's lifespan context: what every call reaches.

    Attributes:
        service: the :class:`Service` every call goes to.
        principal_of: who makes a call, from its context.
        default_session: the session of a call without ``key``, unless its HTTP request
            names one in ``X-Sitekeep-Session``.
    """

    service: Service
    principal_of: PrincipalOf
    default_session: str

    def session_of(self, ctx: Ctx, key: str | None) -> str:
        """The session a call works in: its ``key``, else the connection's."""
        if key is not None:
            return key
        headers = ctx.headers
        return (headers.get(SESSION_HEADER) if headers else None) or self.default_session


def backing(ctx: Ctx) -> tuple[Backing, Principal]:
    """The lifespan context of the call ``ctx`` and who makes it.

    Raises:
        RuntimeError: the server runs under another lifespan than ``build_server``'s.
        Unauthorized: (HTTP) the request carries no principal.
    """
    found = ctx.request_context.lifespan_context
    if not isinstance(found, Backing):
        raise RuntimeError("sitekeep's MCP tools run only under build_server's lifespan")
    return found, found.principal_of(ctx)


def mcp_error(exc: SitekeepError, *, resource: bool) -> Exception:
    """The one place a sitekeep error becomes an MCP error: a tool's error result, or a
    resource read's protocol error, with the HTTP error body as its message."""
    message = json.dumps({"error": error_json(exc)}, ensure_ascii=False)
    if not resource:
        return ToolError(message)
    return ResourceNotFoundError(message) if isinstance(exc, NotFound) else ResourceError(message)


def guarded(
    *, resource: bool = False
) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """Wrap a tool or resource function so a ``SitekeepError`` reaches the client as an
    MCP error; the signature (and so the input schema) is the wrapped function's."""

    def wrap(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        @functools.wraps(fn)
        async def call(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return await fn(*args, **kwargs)
            except SitekeepError as exc:
                raise mcp_error(exc, resource=resource) from exc

        return call

    return wrap
