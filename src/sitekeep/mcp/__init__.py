"""sitekeep over MCP (SPEC §5): one server for stdio (``sitekeep mcp``) and streamable
HTTP (``/mcp`` in the HTTP app, mounted by ``sitekeep.api.mcp``)."""

from __future__ import annotations

from sitekeep.mcp.server import DEFAULT_SESSION, SESSION_HEADER, build_server

__all__ = ["DEFAULT_SESSION", "SESSION_HEADER", "build_server"]
