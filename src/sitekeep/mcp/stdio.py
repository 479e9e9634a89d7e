"""MCP over stdio (``sitekeep mcp``): one agent, one principal, for the life of the process.

stdout carries the protocol, so nothing else may write there: logs go to stderr, and the
embedded chromedriver's output goes to /dev/null (``browser.driver``).
"""

from __future__ import annotations

from sitekeep.config import Settings
from sitekeep.mcp.server import build_server
from sitekeep.model import Principal
from sitekeep.service import Service

__all__ = ["serve_stdio"]


async def serve_stdio(settings: Settings, who: Principal, *, session: str) -> None:
    """Open the service, warm the browser pool, serve MCP on stdin/stdout until the client
    closes it, then close the service (browsers live on, SPEC §2).

    Args:
        who: the principal every call is made as (from ``SITEKEEP_TOKEN``).
        session: the default session of calls without ``key`` (``SITEKEEP_SESSION``).
    """
    service = Service.from_settings(settings)
    try:
        await service.browsers.warm_up()
        server = build_server(lambda: service, lambda _ctx: who, default_session=session)
        await server.run_stdio_async()
    finally:
        await service.aclose()
