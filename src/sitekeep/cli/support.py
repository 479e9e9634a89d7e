"""What every ``sitekeep`` command shares: settings, the service, who acts, consoles,
one-line errors.

Light on purpose: ``sitekeep --help`` imports the command modules, and they import this;
everything heavy (pydantic settings, the service, rich, anyio) is imported on first use,
so ``--help`` stays under half a second (``bench/cli_help.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from typer.core import TyperGroup

from sitekeep.errors import SitekeepError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from sitekeep.config import Settings
    from sitekeep.model import Principal
    from sitekeep.service import Service

__all__ = [
    "Actor",
    "Member",
    "Tenant",
    "acting",
    "command_group",
    "console",
    "err",
    "fail",
    "load_settings",
    "operator",
    "show",
    "when",
    "with_service",
]

T = TypeVar("T")

_FIELD_ROOT = re.compile(r"^([A-Za-z_]+)")

FLAGS: Mapping[str, str] = {
    "tenant": "--tenant",
    "subject": "--subject",
    "hosts": "--host",
    "description": "--description",
    "name": "NAME",
    "key": "--key",
}
"""A service error's ``field`` → the command-line flag or argument that feeds it."""

Tenant = Annotated[str, typer.Option(help="The tenant (workspace).")]
Actor = Annotated[str, typer.Option("--as", help="The subject acting (the gate's creator).")]
Member = Annotated[bool, typer.Option("--member", help="Act as a member, not an admin.")]


_SURROGATE = re.compile("[\ud800-\udfff]")


class _Group(TyperGroup):
    """A command group that refuses an argument which is no text before parsing it.

    Python reads bytes of ``argv`` that are not UTF-8 (a name in Latin-1, say) as lone
    surrogates, which no encoder takes: such a value would crash the first store, JSON
    writer or receipt it reached. The root group sees every argument, so one check here
    covers every command; it names the option the value was given to."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for index, arg in enumerate(args):
            if _SURROGATE.search(arg):
                raise typer.BadParameter(
                    "not UTF-8 text", ctx=ctx, param_hint=_argument_name(args, index)
                )
        result: list[str] = super().parse_args(ctx, args)
        return result


def _argument_name(args: list[str], index: int) -> str:
    """``--tenant`` for ``--tenant VALUE`` or ``--tenant=VALUE``, else ``argument N``."""
    arg = args[index]
    if arg.startswith("--") and "=" in arg:
        return arg.split("=", 1)[0]
    if index and args[index - 1].startswith("-") and "=" not in args[index - 1]:
        return args[index - 1]
    return f"argument {index + 1}"


def command_group(help: str) -> typer.Typer:
    """A ``sitekeep`` command group: help as Markdown (paragraphs rewrapped to the
    terminal, ``code`` shown as code, never as raw backticks), bare group prints help,
    arguments that are no text refused (:class:`_Group`)."""
    return typer.Typer(help=help, no_args_is_help=True, rich_markup_mode="markdown", cls=_Group)


def _flags_as_flags() -> None:
    """Show an on/off option as ``--admin``, not ``--admin <bool>``: typer 0.29 prints a
    type column for every option; a flag takes no value, so it gets none."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "_sitekeep", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich._sitekeep = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_as_flags()


@functools.cache
def console() -> Console:
    """stdout, rich (soft-wrapped: long rows stay one line)."""
    from rich.console import Console

    return Console(soft_wrap=True)


def show(*tables: Table) -> None:
    """Print tables on stdout through a new console (sized to the terminal of the moment,
    long cells wrapped: a table, not soft-wrapped text)."""
    from rich.console import Console

    out = Console()
    for table in tables:
        out.print(table)


@functools.cache
def err() -> Console:
    """stderr, rich."""
    from rich.console import Console

    return Console(stderr=True)


def flag_of(field: str | None, flags: Mapping[str, str] = FLAGS) -> str | None:
    """The flag that feeds a service error's ``field`` (``hosts[2]`` → ``--host``)."""
    match = _FIELD_ROOT.match(field or "")
    return flags.get(match.group(1)) if match else None


def fail(exc: SitekeepError, flags: Mapping[str, str] = FLAGS) -> NoReturn:
    """Print the error as one line on stderr, naming the flag to fix, and exit 2."""
    flag = flag_of(getattr(exc, "field", None), flags)
    where = f"{flag}: " if flag else ""
    typer.echo(f"error: {where}{exc.message}", err=True)
    raise typer.Exit(2) from exc


def load_settings() -> Settings:
    """The settings from the environment; a bad one exits 2 naming its variable (never
    its value: pydantic's text would echo it)."""
    from pydantic import ValidationError

    from sitekeep.config import Settings

    try:
        return Settings()
    except ValidationError as exc:
        where = ".".join(str(part) for part in exc.errors()[0]["loc"])
        typer.echo(f"error: bad setting SITEKEEP_{where.upper()}", err=True)
        raise typer.Exit(2) from exc


def with_service(
    use: Callable[[Service], Awaitable[T]],
    settings: Settings | None = None,
    flags: Mapping[str, str] = FLAGS,
) -> T:
    """``use(service)`` on a service opened from the settings, then closed; a sitekeep
    error is one line on stderr naming its flag, and exit status 2."""
    import anyio

    from sitekeep.service import Service

    opened_with = settings or load_settings()

    async def run() -> T:
        service = Service.from_settings(opened_with)
        try:
            return await use(service)
        finally:
            await service.aclose()

    try:
        return anyio.run(run)
    except SitekeepError as exc:
        fail(exc, flags)


def acting(tenant: str, subject: str, member: bool) -> Principal:
    """Who a command acts as: ``subject`` of ``tenant`` (``--as``), an admin of it unless
    ``--member``; the service's gates apply to it as to every caller."""
    from sitekeep.model import Principal

    return Principal(tenant, subject, "member" if member else "admin")


def operator(tenant: str) -> Principal:
    """The tenant's operator at the shell: subject ``cli``, an admin of ``tenant``."""
    return acting(tenant, "cli", member=False)


def when(at: object) -> str:
    """A timestamp (seconds since the epoch) as UTC ``YYYY-MM-DD HH:MM:SS``; ``""`` for
    anything else (never set)."""
    from datetime import UTC, datetime

    if not isinstance(at, int | float):
        return ""
    return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
