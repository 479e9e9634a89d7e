"""``sitekeep secret set|list|delete``: the secrets catalogue from a shell (SPEC §7).

Values are read from stdin only, never from arguments (which land in shell history and
``ps``): either one JSON object ``{"username": "...", "password": "..."}`` or ``key=value``
lines, blank lines ignored; everything after the first ``=`` is the value, verbatim. The
commands act through the service as the tenant's operator (an admin of it).
Any error prints one line to stderr and exits 2; no message ever holds a value.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from sitekeep.cli.support import Tenant, command_group, console, fail, operator, with_service
from sitekeep.errors import InvalidInput, NotFound, SitekeepError

if TYPE_CHECKING:
    from sitekeep.service import Service

__all__ = ["parse_values", "secret_app"]

T = TypeVar("T")

secret_app = command_group("The secrets catalogue: values are read from stdin only.")


def parse_values(text: str) -> dict[str, str]:
    """The values on stdin: a JSON object, or ``key=value`` lines (blank lines ignored).

    Returns:
        ``{key: value}`` in the order given; keys and values are checked by the store.

    Raises:
        InvalidInput: field ``stdin``; the message names a line or position, never its text.
    """
    if text.lstrip().startswith("{"):
        return _parse_json(text)
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInput(f"stdin line {number} is not key=value", field="stdin")
        if key in values:
            raise InvalidInput(f"stdin line {number} repeats a key given before", field="stdin")
        values[key] = value
    if not values:
        raise InvalidInput(
            "no values on stdin: pipe key=value lines or a JSON object", field="stdin"
        )
    return values


def _parse_json(text: str) -> dict[str, str]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:  # its msg holds no input text, only a position
        raise InvalidInput(
            f"stdin is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            field="stdin",
        ) from None
    if not isinstance(parsed, dict):
        raise InvalidInput("stdin must hold one JSON object of key: value", field="stdin")
    return parsed


@secret_app.command("set")
def set_secret(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The secret's name.")],
    tenant: Tenant,
    host: Annotated[
        list[str] | None,
        typer.Option(help="A host it may be typed on: app.example.test or *.example.test."),
    ] = None,
    description: Annotated[str, typer.Option(help="What it is, for people.")] = "",
) -> None:
    """Create or replace a secret; its values come from stdin (JSON or key=value lines)."""
    if sys.stdin.isatty():
        typer.echo(
            "reading values from stdin (key=value lines, or JSON); end with Ctrl-D", err=True
        )
    try:
        values = parse_values(sys.stdin.read())
    except SitekeepError as exc:
        fail(exc, {})  # its message names stdin already
    from sitekeep.args import SecretBody, unchecked

    body = unchecked(SecretBody, description=description, hosts=host or [], values=values)
    info = with_service(lambda svc: svc.catalogue.put_secret(operator(tenant), name, body))
    typer.echo(f"saved secret {info.name} (keys: {', '.join(info.keys)})")


@secret_app.command("list")
def list_secrets(tenant: Tenant) -> None:
    """The tenant's secrets: name, description, hosts and key names (never values)."""
    infos = with_service(lambda svc: svc.catalogue.secrets(operator(tenant)))
    if not infos:
        typer.echo(f"no secrets in tenant {tenant}")
        return
    from rich.table import Table

    table = Table("name", "description", "hosts", "keys")
    for info in infos:
        table.add_row(info.name, info.description, ", ".join(info.hosts), ", ".join(info.keys))
    console().print(table)


@secret_app.command("delete")
def delete_secret(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The secret's name.")], tenant: Tenant
) -> None:
    """Delete a secret."""

    async def delete(svc: Service) -> bool:
        try:
            await svc.catalogue.delete_secret(operator(tenant), name)
        except NotFound:
            return False
        return True

    if not with_service(delete):
        typer.echo(
            f"error: no secret named {name!r} in tenant {tenant} "
            f"(see: sitekeep secret list --tenant {tenant})",
            err=True,
        )
        raise typer.Exit(2)
    typer.echo(f"deleted secret {name}")
