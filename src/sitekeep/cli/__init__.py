"""The ``sitekeep`` command (SPEC §5 CLI): serve, mcp, token, sessions, doctor,
import/export, secret, journal, runs, stop.

One module per command group; each imports its shared helpers from
:mod:`sitekeep.cli.support` and this module wires them into one typer app (nothing imports
this module back). Only typer and what the help needs are imported at start: every command
imports what it uses, so ``sitekeep --help`` stays under half a second
(``bench/cli_help.py``).
"""

from __future__ import annotations

from sitekeep.cli.doctor import db_app, doctor
from sitekeep.cli.interop import export_command, import_command
from sitekeep.cli.journal import journal_app
from sitekeep.cli.keys import keys_app
from sitekeep.cli.profiles import profile_app
from sitekeep.cli.proxies import proxy_app
from sitekeep.cli.secrets import secret_app
from sitekeep.cli.serve import mcp_stdio, serve, stop
from sitekeep.cli.sessions import runs, sessions_app
from sitekeep.cli.support import command_group
from sitekeep.cli.tokens import token_app
from sitekeep.cli.versions import profile_versions_app, session_versions_app

__all__ = ["app", "main"]

app = command_group("Real browsers for AI agents that stay signed in.")
# The help lists groups and commands in the order they are added here.
for group, name in (
    (token_app, "token"),
    (sessions_app, "sessions"),
    (db_app, "db"),
    (secret_app, "secret"),
    (journal_app, "journal"),
    (profile_app, "profile"),
    (proxy_app, "proxy"),
    (keys_app, "keys"),
):
    app.add_typer(group, name=name)
sessions_app.add_typer(session_versions_app, name="versions")
profile_app.add_typer(profile_versions_app, name="versions")
app.command("import")(import_command)
app.command("export")(export_command)
app.command()(serve)
app.command("mcp")(mcp_stdio)
app.command()(runs)
app.command()(stop)
app.command()(doctor)


def main() -> None:
    """The console script ``sitekeep`` (``pyproject.toml``)."""
    app()
