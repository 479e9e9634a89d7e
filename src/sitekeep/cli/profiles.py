"""``sitekeep profile list|show|create|update|delete`` (SPEC §9) from a shell.

The commands act through the service as ``--as`` (a subject of ``--tenant``, default
``cli``), an admin of the tenant unless ``--member``: the one gate of
:mod:`sitekeep.profiles` applies to them as to every caller — another subject's private
profile is not found. No command ever prints a value; ``sitekeep export --profile`` writes
them to a file, carefully (SPEC §15).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sitekeep.cli.support import Actor, Member, Tenant, acting, show, with_service

if TYPE_CHECKING:
    from rich.table import Table

    from sitekeep.service import Service

__all__ = ["profile_app"]

profile_app = typer.Typer(
    help="Profiles: named sign-ins that sessions open from.", no_args_is_help=True
)

Ident = Annotated[str, typer.Argument(help="The profile's id.")]


def _when(at: Any) -> str:
    if at is None:
        return "—"
    return datetime.fromtimestamp(float(at), UTC).strftime("%Y-%m-%d %H:%M")


def _freshness(profile: dict[str, Any]) -> str:
    status = str(profile["status"])
    if status == "expires_soon":
        return f"expires in {profile['expires_in_days']} days"
    return status


def _table(profiles: list[dict[str, Any]]) -> Table:
    from rich.table import Table

    table = Table("id", "name", "visibility", "country", "domains", "captured", "freshness")
    for p in profiles:
        table.add_row(
            p["id"],
            p["name"],
            p["visibility"],
            p["country"] or "—",
            ", ".join(p["cookie_domains"]) or "—",
            _when(p["captured_at"]),
            _freshness(p),
        )
    return table


@profile_app.command("list")
def list_profiles(tenant: Tenant, subject: Actor = "cli", member: Member = False) -> None:
    """The profiles the subject may see: its own and the workspace's."""
    who = acting(tenant, subject, member)
    found = with_service(lambda svc: svc.profiles.list(who))
    if not found["profiles"]:
        typer.echo(f"no profiles for {subject} in tenant {tenant}")
        return
    show(_table(found["profiles"]))


@profile_app.command("show")
def show_profile(
    ident: Ident, tenant: Tenant, subject: Actor = "cli", member: Member = False
) -> None:
    """One profile and its hosts with counts (never values)."""
    who = acting(tenant, subject, member)
    from rich.table import Table

    found: dict[str, Any] = with_service(lambda svc: svc.profiles.get(who, ident))
    sites = Table("site", "cookies", "localStorage", "sessionStorage")
    for s in found["sites"]:
        sites.add_row(s["site"], str(s["cookies"]), str(s["local"]), str(s["session"]))
    show(_table([found]), sites)


@profile_app.command("create")
def create_profile(
    name: Annotated[str, typer.Argument(help="The profile's name.")],
    tenant: Tenant,
    subject: Actor = "cli",
    member: Member = False,
    workspace: Annotated[bool, typer.Option(help="Share it with the workspace.")] = False,
    country: Annotated[str | None, typer.Option(help="ISO 3166-1 code: de, us.")] = None,
) -> None:
    """Create an empty profile (fill it: sitekeep import --profile, or a capture)."""
    who = acting(tenant, subject, member)
    visibility = "workspace" if workspace else "private"

    from sitekeep.args import CreateBody, unchecked

    body = unchecked(CreateBody, name=name, visibility=visibility, country=country)

    async def use(svc: Service) -> dict[str, Any]:
        return await svc.profiles.create(who, body)

    made = with_service(use)
    typer.echo(f"created profile {made['id']} ({made['name']}, {made['visibility']})")


@profile_app.command("update")
def update_profile(
    ident: Ident,
    tenant: Tenant,
    subject: Actor = "cli",
    member: Member = False,
    name: Annotated[str | None, typer.Option(help="A new name.")] = None,
    visibility: Annotated[str | None, typer.Option(help="private or workspace.")] = None,
    country: Annotated[str | None, typer.Option(help="ISO 3166-1 code.")] = None,
) -> None:
    """Rename, share or make private, or set the country."""
    who = acting(tenant, subject, member)
    changes = {
        k: v
        for k, v in (("name", name), ("visibility", visibility), ("country", country))
        if v is not None
    }
    if not changes:
        typer.echo("error: say --name, --visibility or --country", err=True)
        raise typer.Exit(2)
    done = with_service(lambda svc: svc.profiles.update(who, ident, changes))
    show(_table([done]))


@profile_app.command("delete")
def delete_profile(
    ident: Ident, tenant: Tenant, subject: Actor = "cli", member: Member = False
) -> None:
    """Delete a profile and its site data."""
    who = acting(tenant, subject, member)
    with_service(lambda svc: svc.profiles.delete(who, ident))
    typer.echo(f"deleted profile {ident}")
