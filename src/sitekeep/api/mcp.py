"""MCP over streamable HTTP at ``/mcp`` in the HTTP app (SPEC §5), behind the bearer token:
the HTTP side of :mod:`sitekeep.mcp`'s one server (its gate answers with the HTTP API's
error bodies, so it lives with the HTTP API).

:class:`BearerGate` wraps the SDK's streamable HTTP app: a request without a known token
gets the HTTP API's 401 body; one with gets its :class:`Principal` in the ASGI scope,
where :func:`principal_from_request` finds it for each tool call, and the SDK's
``AuthenticatedUser`` naming that principal and its token, so an MCP session answers only
the token that opened it: any other caller's ``Mcp-Session-Id`` — another tenant's, or
another token of the same subject (a member token riding its admin token's session) — is
a 404, as if the session did not exist. The SDK's own Host /
Origin checks (DNS rebinding) stay on for a loopback bind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context, MCPServer
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from sitekeep.api.errors import status_of
from sitekeep.errors import SitekeepError, Unauthorized, error_json
from sitekeep.model import Principal
from sitekeep.service import Service

__all__ = ["MCP_PATH", "BearerGate", "mcp_route", "principal_from_request"]

MCP_PATH = "/mcp"
PRINCIPAL = "sitekeep.principal"
"""The ASGI scope key holding the caller's :class:`Principal`."""


class BearerGate:
    """ASGI middleware: ``Authorization: Bearer <token>`` (checked by the service) or the
    HTTP API's error body — 401 for a missing or unknown token, 503 when the token
    database cannot be reached."""

    def __init__(self, app: ASGIApp, service_of: Callable[[], Service]) -> None:
        self._app = app
        self._service_of = service_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        try:
            principal = await self._service_of().catalogue.authenticate(
                Headers(scope=scope).get("authorization")
            )
        except SitekeepError as error:
            unauthorized = isinstance(error, Unauthorized)
            response = JSONResponse(
                {"error": error_json(error)},
                status_code=status_of(error),
                headers={"WWW-Authenticate": "Bearer"} if unauthorized else None,
            )
            await response(scope, receive, send)
            return
        await self._app({**scope, PRINCIPAL: principal, "user": _user(principal)}, receive, send)


def _user(principal: Principal) -> AuthenticatedUser:
    """The SDK's user for ``principal``: its session manager binds each MCP session to the
    user that opened it (client id = ``tenant:token id``, subject = subject) and answers
    every other user's request for that session id with 404. The bearer token itself is
    not kept, only its id (:func:`sitekeep.auth.token_id`)."""
    return AuthenticatedUser(
        AccessToken(
            token="",
            client_id=f"{principal.tenant}:{principal.token}",
            scopes=[principal.role],
            subject=principal.subject,
        )
    )


def principal_from_request(ctx: Context[Any, Any]) -> Principal:
    """The principal :class:`BearerGate` put in the scope of the call's HTTP request.

    Raises:
        Unauthorized: the request did not pass the gate (never, once mounted by
            :func:`mcp_route`).
    """
    request = ctx.request_context.request
    principal = getattr(request, "scope", {}).get(PRINCIPAL)
    if not isinstance(principal, Principal):
        raise Unauthorized("this MCP endpoint needs Authorization: Bearer <token>")
    return principal


def mcp_route(server: MCPServer, service_of: Callable[[], Service], *, host: str) -> Route:
    """The route serving ``server`` at exactly ``/mcp`` (no redirect to ``/mcp/``, which
    some clients do not follow on POST), behind :class:`BearerGate`.

    The caller runs ``server.session_manager.run()`` in its lifespan.

    Args:
        host: the interface the server binds; on loopback the SDK checks ``Host`` and
            ``Origin`` against loopback names with any port (DNS rebinding).
    """
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return Route(MCP_PATH, endpoint=BearerGate(app, service_of), include_in_schema=False)
