"""The MCP facade: sitekeep's agent operations as MCP tools and resources (SPEC §5).

:func:`build_server` makes one ``MCPServer`` for stdio (``sitekeep mcp``) and streamable
HTTP (``/mcp``): the tools of :mod:`.tools` and the resources of :mod:`.resources`, which
reach the service through the server's lifespan context (:class:`~.calls.Backing`). A
:class:`~sitekeep.errors.SitekeepError` becomes an MCP error result in one place
(:func:`~.calls.guarded`), carrying ``{"error": {type, message, field?}}`` — the HTTP
error shape.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    CallToolResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
)
from pydantic import ValidationError

from sitekeep.args import invalid_input
from sitekeep.errors import SitekeepError
from sitekeep.mcp.calls import (
    DEFAULT_SESSION,
    SESSION_HEADER,
    Backing,
    Ctx,
    PrincipalOf,
    ServiceOf,
    backing,
    mcp_error,
)
from sitekeep.mcp.resources import TEMPLATES, readable
from sitekeep.mcp.tools import TOOLS
from sitekeep.version import __version__

__all__ = ["DEFAULT_SESSION", "SESSION_HEADER", "PrincipalOf", "ServiceOf", "build_server"]

INSTRUCTIONS = """\
sitekeep drives a real Chromium browser that stays signed in between sessions.
Typical use: open_session → navigate → snapshot (refs e1, e2…) → click / type by ref.
After signing in, call save_site_data once; a later open_session comes back signed in.
Use type_secret for passwords: it types a stored credential you never see.
Every page tool returns {url, title} of where the browser landed. Omit `key` to work in
this connection's session."""


class _Server(MCPServer[Backing]):
    """An ``MCPServer`` whose ``resources/list`` names what the caller can read now: each
    of its tenant's sessions' current page and saved site data, and each saved host (the
    resource templates alone name nothing a client can read)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Ctx | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The SDK's call, but arguments of the wrong shape come back as the HTTP API's
        ``invalid_input`` naming the field: the SDK's own message quotes pydantic's
        ``input_value`` — the text typed, say — and no error may echo a value."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            error = mcp_error(invalid_input(exc.__cause__), resource=False)
            raise ToolError(f"Error executing tool {name}: {error}") from None

    async def _handle_list_resources(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        context: Ctx = Context(request_context=ctx, mcp_server=self)
        try:
            found, who = backing(context)
            listed = await readable(found.service, who)
        except SitekeepError as exc:
            raise mcp_error(exc, resource=True) from exc
        return ListResourcesResult(resources=[*await self.list_resources(), *listed])


def build_server(
    service_of: ServiceOf,
    principal_of: PrincipalOf,
    *,
    default_session: str = DEFAULT_SESSION,
) -> MCPServer[Backing]:
    """The MCP server over a service.

    Args:
        service_of: returns the :class:`~sitekeep.service.Service`; asked once, as the
            server starts (its lifespan), so the server can be built before the service
            opens.
        principal_of: returns who makes a call, from its context.
        default_session: the session a call without ``key`` works in, unless the HTTP
            request names one in ``X-Sitekeep-Session``.
    """

    @asynccontextmanager
    async def lifespan(_: MCPServer[Backing]) -> AsyncIterator[Backing]:
        yield Backing(service_of(), principal_of, default_session)

    server = _Server("sitekeep", instructions=INSTRUCTIONS, version=__version__, lifespan=lifespan)
    for tool in TOOLS:
        server.tool(name=tool.name, annotations=tool.annotations, description=tool.description)(
            tool.fn
        )
    for template in TEMPLATES:
        server.resource(
            template.uri,
            name=template.name,
            description=template.description,
            mime_type="application/json",
        )(template.fn)
    return server
