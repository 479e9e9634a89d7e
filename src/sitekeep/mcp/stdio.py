"""MCP over stdio (``sitekeep mcp``): one agent, one principal, for the life of the process.

stdout carries the protocol, so nothing else may write there: logs go to stderr, and the
embedded chromedriver's output goes to /dev/null (``browser.servers``).
"""

from __future__ import annotations

from sitekeep.config import Settings
from sitekeep.mcp.server import build_server
from sitekeep.service import Service

__all__ = ["serve_stdio"]


async def serve_stdio(settings: Settings, token: str, *, session: str) -> None:
    """Open the service, check the token, warm the browser pool, serve MCP on stdin/stdout
    until the client closes it, then close the service (browsers live on, SPEC §2).

    Args:
        token: the bearer token every call is made with (``SITEKEEP_TOKEN``).
        session: the default session of calls without ``key`` (``SITEKEEP_SESSION``).

    Raises:
        Unauthorized: an unknown token. StoreUnavailable: a store cannot be reached.
    """
    service = Service.from_settings(settings)
    try:
        who = await service.catalogue.authenticate(f"Bearer {token}")
        await service.reaper.warm_up()
        server = build_server(lambda: service, lambda _ctx: who, default_session=session)
        await server.run_stdio_async()
    finally:
        await service.aclose()
