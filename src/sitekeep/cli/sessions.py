"""``sitekeep sessions list|get`` and ``sitekeep runs``: a tenant's sessions with each
site's sign-in state (SPEC §18) and the run ledger of live browsers (SPEC §1, §13), read
without touching a browser's state."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sitekeep.cli.support import Tenant, command_group, console, operator, when, with_service

if TYPE_CHECKING:
    from rich.table import Table

    from sitekeep.service import Service

__all__ = ["runs", "sessions_app"]

sessions_app = command_group("Sessions of a tenant.")

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]

_STATES = {"signed_in": "signed in", "signed_out": "signed out", "unknown": "unknown"}


def sign_in_lines(sign_in: Mapping[str, Any]) -> str:
    """One line per site, ``host: signed in (sign-in cookie sid)`` — names, never values."""
    lines = []
    for host, known in sign_in.items():
        summary = (known.get("evidence") or {}).get("summary")
        state = _STATES.get(known.get("state", ""), "unknown")
        lines.append(f"{host}: {state}" + (f" ({summary})" if summary else ""))
    return "\n".join(lines) or "—"


@sessions_app.command("list")
def sessions_list(tenant: Tenant, as_json: JsonOption = False) -> None:
    """The tenant's sessions, most recently used first, with each site's sign-in state
    (no browser is touched)."""
    from rich.table import Table

    rows = with_service(lambda svc: svc.views.sessions(operator(tenant)))
    if as_json:
        print(json.dumps({"sessions": rows}, indent=2, ensure_ascii=False))
        return
    if not rows:
        console().print(f"no sessions in tenant {tenant}")
        return
    table = Table("key", "owner", "browser", "live", "url", "sign-in", "last used")
    for row in rows:
        url = "(withheld)" if row.get("url_withheld") else (row.get("url") or "")
        browser = row["browser"]
        live = "yes" if browser["live"] else "no"
        table.add_row(
            row["key"],
            row["owner"],
            browser["kind"],
            live,
            url,
            sign_in_lines(row["sign_in"]),
            when(row["last_used_at"]),
        )
    console().print(table)


@sessions_app.command("get")
def sessions_get(
    key: Annotated[str, typer.Argument(help="The session's key.")],
    tenant: Tenant,
    as_json: JsonOption = False,
) -> None:
    """One session: where it is, its saved site data in short, whether it saves by
    itself and each site's sign-in state (``GET /v1/sessions/{key}``)."""
    view = with_service(lambda svc: svc.views.current(operator(tenant), key))
    if as_json:
        print(json.dumps(view, indent=2, ensure_ascii=False))
        return
    out = console()
    url = "(withheld)" if view.get("url_withheld") else (view.get("url") or "—")
    browser = view["browser"]
    saved = view["site_data"]
    out.print(
        f"session {view['key']}: {browser['kind']}, {'live' if browser['live'] else 'closed'}"
    )
    out.print(f"page: {url}")
    out.print(
        f"saved: {saved['hosts']} hosts, {when(saved['saved_at'])}"
        if saved["saved_at"]
        else "saved: nothing"
    )
    out.print(f"saves by itself: {'yes' if view['autosave'] else 'no'}")
    out.print("sign-in:")
    for line in sign_in_lines(view["sign_in"]).splitlines():
        out.print(f"  {line}")


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
