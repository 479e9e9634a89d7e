"""``sitekeep sessions list`` and ``sitekeep runs``: a tenant's sessions and the run ledger
of live browsers (SPEC §1, §13), read without touching a browser."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from sitekeep.cli.support import Tenant, command_group, console, operator, when, with_service

if TYPE_CHECKING:
    from rich.table import Table

    from sitekeep.service import Service

__all__ = ["runs", "sessions_app"]

sessions_app = command_group("Sessions of a tenant.")


@sessions_app.command("list")
def sessions_list(tenant: Tenant) -> None:
    """The tenant's sessions, most recently used first (no browser is touched)."""
    from rich.table import Table

    rows = with_service(lambda svc: svc.views.sessions(operator(tenant)))
    if not rows:
        console().print(f"no sessions in tenant {tenant}")
        return
    table = Table("key", "owner", "browser", "live", "url", "last used")
    for row in rows:
        url = "(withheld)" if row.get("url_withheld") else (row.get("url") or "")
        browser = row["browser"]
        live = "yes" if browser["live"] else "no"
        table.add_row(
            row["key"], row["owner"], browser["kind"], live, url, when(row["last_used_at"])
        )
    console().print(table)


def runs(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's runs.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Closed runs too, newest first.")] = False,
    limit: Annotated[int, typer.Option(help="At most this many (1–1000).")] = 100,
    reap: Annotated[bool, typer.Option("--reap", help="Run one reaper pass first.")] = False,
) -> None:
    """The run ledger: each live browser of every replica (SPEC §13)."""

    async def use(svc: Service) -> tuple[dict[str, int], list[dict[str, object]]]:
        reaped = await svc.reaper.reap() if reap else {}
        who = None if tenant is None else operator(tenant)
        return reaped, await svc.admin.runs(who, open_only=not every, limit=limit, addresses=True)

    reaped, rows = with_service(use)
    if reap:
        done = ", ".join(f"{n} {why}" for why, n in sorted(reaped.items())) or "nothing"
        console().print(f"reaper: {done}")
    if not rows:
        console().print("no open runs" if not every else "no runs")
        return
    console().print(_runs_table(rows))


def _runs_table(rows: list[dict[str, object]]) -> Table:
    from rich.table import Table

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
            when(row["opened_at"]),
            f"{when(row['closed_at'])} {closed}".strip(),
        )
    return table
