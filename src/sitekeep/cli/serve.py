"""``sitekeep serve``, ``sitekeep mcp`` and ``sitekeep stop``: the server's processes
(SPEC §2, §5). Browsers outlive a server on purpose (a restart continues them); ``stop``
ends them."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from sitekeep.cli.support import console, err, fail, load_settings, with_service
from sitekeep.errors import SitekeepError

if TYPE_CHECKING:
    from sitekeep.config import Settings

__all__ = ["mcp_stdio", "serve", "stop"]


def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8700,
    log_level: Annotated[str, typer.Option(help="Log level.")] = "info",
) -> None:
    """Serve the HTTP API (browsers outlive the server: a restart continues them)."""
    import uvicorn

    from sitekeep.api.app import create_app
    from sitekeep.cli.logs import configure_logging

    settings = load_settings().model_copy(update={"host": host, "port": port})
    log_config = configure_logging(log_level, settings.log_format)
    uvicorn.run(
        create_app(settings, settle_heap=True),
        host=host,
        port=port,
        log_level=log_level,
        log_config=log_config,
    )


def mcp_stdio(
    log_level: Annotated[str, typer.Option(help="Log level (logs go to stderr).")] = "warning",
) -> None:
    """Serve MCP over stdio for one agent: SITEKEEP_TOKEN says who it is, SITEKEEP_SESSION
    names the session of calls without a key (default "default")."""
    from sitekeep.cli.logs import configure_logging

    settings = load_settings()
    # stdout is the protocol: every log line goes to stderr.
    configure_logging(log_level, settings.log_format, stream=sys.stderr)
    token = os.environ.get("SITEKEEP_TOKEN", "").strip()
    if not token:
        err().print(
            "[red]error:[/] set SITEKEEP_TOKEN (in the MCP client's env) to a token from "
            "sitekeep token create --tenant T --subject S"
        )
        raise typer.Exit(2)
    _serve_mcp(settings, token, os.environ.get("SITEKEEP_SESSION") or "default")


def _serve_mcp(settings: Settings, token: str, session: str) -> None:
    # Imported only now (the service, the MCP SDK): a missing token is said at once.
    import functools

    import anyio

    from sitekeep.errors import Unauthorized
    from sitekeep.mcp.stdio import serve_stdio

    try:
        anyio.run(functools.partial(serve_stdio, settings, token, session=session))
    except Unauthorized as exc:
        err().print(
            f"[red]error:[/] SITEKEEP_TOKEN is unknown in {settings.data_dir}: create it with "
            "sitekeep token create under the same SITEKEEP_DATA_DIR (or SITEKEEP_DATABASE_URL)"
        )
        raise typer.Exit(2) from exc
    except SitekeepError as exc:
        fail(exc)


def stop() -> None:
    """End the embedded drivers (chromedriver, geckodrivers) and every browser they run.

    Browsers outlive ``sitekeep serve`` on purpose (a restart continues them); this is how
    to end them. Sessions, history and saved site data stay: the next call on a session
    opens a new browser and restores its site data.
    """
    settings = load_settings()
    ended = with_service(lambda svc: svc.reaper.end_browsers(), settings)
    where = f"on {settings.webdriver_url}" if settings.webdriver_url else "and the embedded drivers"
    if ended:
        console().print(f"ended {ended} session browser(s) {where} of {settings.data_dir}")
    else:
        console().print(f"no session browser was running; drivers of {settings.data_dir} ended")
