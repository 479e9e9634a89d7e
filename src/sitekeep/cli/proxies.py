"""``sitekeep proxy set|list|delete``: the tenant's proxy pool from a shell (SPEC §14).

Credentials never go on the command line: ``--auth-secret`` names a secret (``sitekeep
secret set``) holding ``username`` and ``password``. The commands act through the service
as the tenant's operator (an admin of it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from sitekeep.cli.support import with_service

if TYPE_CHECKING:
    from sitekeep.model import Principal
    from sitekeep.service import Service

__all__ = ["proxy_app"]

proxy_app = typer.Typer(help="The proxy pool: a proxy per country.", no_args_is_help=True)

Tenant = Annotated[str, typer.Option(help="The tenant (workspace).")]
Name = Annotated[str, typer.Argument(help="The proxy's name.")]


def _operator(tenant: str) -> Principal:
    from sitekeep.model import Principal

    return Principal(tenant, "cli", "admin")


def _run(use: Any) -> Any:
    return with_service(use)


@proxy_app.command("set")
def set_proxy(
    name: Name,
    tenant: Tenant,
    country: Annotated[str, typer.Option(help="ISO 3166-1 code: de, us.")],
    url: Annotated[str, typer.Option(help="http://host:port, no credentials in it.")],
    auth_secret: Annotated[
        str | None, typer.Option(help="A secret holding username and password.")
    ] = None,
) -> None:
    """Create or replace a proxy."""

    async def use(svc: Service) -> dict[str, Any]:
        return await svc.put_proxy(_operator(tenant), name, country, url, auth_secret)

    done = _run(use)
    typer.echo(f"saved proxy {done['name']} ({done['country']})")


@proxy_app.command("list")
def list_proxies(tenant: Tenant) -> None:
    """The tenant's proxies."""
    found = _run(lambda svc: svc.list_proxies(_operator(tenant)))
    if not found["proxies"]:
        typer.echo(f"no proxies in tenant {tenant}")
        return
    table = Table("name", "country", "url", "auth secret")
    for p in found["proxies"]:
        table.add_row(p["name"], p["country"], p["url"], p["auth_secret"] or "—")
    Console().print(table)


@proxy_app.command("delete")
def delete_proxy(name: Name, tenant: Tenant) -> None:
    """Delete a proxy."""
    _run(lambda svc: svc.delete_proxy(_operator(tenant), name))
    typer.echo(f"deleted proxy {name}")
