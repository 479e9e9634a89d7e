"""``sitekeep token create|list|revoke``: bearer tokens from a shell (SPEC §5, §12).

A token is printed once, when it is made; afterwards only its id is ever shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from sitekeep.cli.support import command_group, console, when, with_service

if TYPE_CHECKING:
    from sitekeep.model import Role

__all__ = ["token_app"]

token_app = command_group("Bearer tokens: create, list, revoke.")


@token_app.command("create")
def token_create(
    tenant: Annotated[str, typer.Option(help="The tenant (workspace).")],
    subject: Annotated[str, typer.Option(help="The person or agent the token stands for.")],
    admin: Annotated[bool, typer.Option("--admin", help="Give the admin role.")] = False,
) -> None:
    """Create a bearer token and print it — the only time it is shown."""
    print(with_service(lambda svc: svc.catalogue.create_token(tenant, subject, _role(admin))))


def _role(admin: bool) -> Role:
    return "admin" if admin else "member"


@token_app.command("list")
def token_list(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's tokens.")] = None,
) -> None:
    """The tokens: id, tenant, subject, role, created — never a token."""
    from rich.table import Table

    tokens = with_service(lambda svc: svc.catalogue.tokens(None, tenant))
    if not tokens:
        console().print("no tokens" + (f" in tenant {tenant}" if tenant else ""))
        return
    table = Table("id", "tenant", "subject", "role", "created")
    for info in tokens:
        table.add_row(info.id, info.tenant, info.subject, info.role, when(info.created_at))
    console().print(table)


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(metavar="ID", help="The id token list shows.")],
    tenant: Annotated[str | None, typer.Option(help="Only within this tenant.")] = None,
) -> None:
    """Revoke a token: it stops authenticating (other replicas within 30 s) and the admin
    UI sign-ins made with it end."""
    info = with_service(
        lambda svc: svc.catalogue.revoke_token(None, token_id, tenant),
        flags={"id": "ID", "tenant": "--tenant"},
    )
    console().print(f"revoked {info.id} ({info.tenant}/{info.subject}, {info.role})")
