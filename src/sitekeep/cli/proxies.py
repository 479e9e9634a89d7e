"""``sitekeep proxy set|list|delete``: the tenant's proxy pool from a shell (SPEC §14).

Credentials never go on the command line: ``--auth-secret`` names a secret (``sitekeep
secret set``) holding ``username`` and ``password``. The commands act through the service
as the tenant's operator (an admin of it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from sitekeep.cli.support import Tenant, operator, show, with_service

if TYPE_CHECKING:
    from sitekeep.service import Service

__all__ = ["proxy_app"]

proxy_app = typer.Typer(help="The proxy pool: a proxy per country.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(help="The proxy's name.")]


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

    from sitekeep.args import ProxyBody, unchecked

    body = unchecked(ProxyBody, country=country, url=url, auth_secret=auth_secret)

    async def use(svc: Service) -> dict[str, Any]:
        return await svc.catalogue.put_proxy(operator(tenant), name, body)

    done = with_service(use)
    typer.echo(f"saved proxy {done['name']} ({done['country']})")


@proxy_app.command("list")
def list_proxies(tenant: Tenant) -> None:
    """The tenant's proxies."""
    found = with_service(lambda svc: svc.catalogue.proxies(operator(tenant)))
    if not found["proxies"]:
        typer.echo(f"no proxies in tenant {tenant}")
        return
    from rich.table import Table

    table = Table("name", "country", "url", "auth secret")
    for p in found["proxies"]:
        table.add_row(p["name"], p["country"], p["url"], p["auth_secret"] or "—")
    show(table)


@proxy_app.command("delete")
def delete_proxy(name: Name, tenant: Tenant) -> None:
    """Delete a proxy."""
    with_service(lambda svc: svc.catalogue.delete_proxy(operator(tenant), name))
    typer.echo(f"deleted proxy {name}")
