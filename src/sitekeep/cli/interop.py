"""``sitekeep import`` and ``sitekeep export`` (SPEC §15).

Both move site data between a file and somewhere else, carefully and with a receipt
(:mod:`sitekeep.interop.files`). Today the somewhere else is another file: ``--from FILE
--to FILE`` converts between Playwright storage state JSON and Netscape cookies.txt,
normalising what the source's writer got wrong. A session or a profile as the other end
(``import --from FILE --profile ID --tenant T``, ``export --profile ID --to FILE``) goes
through the service and its gate: the profile's creator (``--as``) or, when shared, an
admin. The file side is as careful as ever; the receipt names the profile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from sitekeep.cli.support import Actor, Member, acting, with_service
from sitekeep.errors import SitekeepError

if TYPE_CHECKING:
    from sitekeep.model import Principal, SiteData
    from sitekeep.service import Service
    from sitekeep.service.files import Format

__all__ = ["FORMATS", "export_command", "import_command"]

FORMATS: tuple[Format, ...] = ("storage-state", "cookies-txt")
"""``sitekeep.interop.FORMATS``, written here so ``--help`` needs no import of the
converters (a unit test holds the two equal)."""

_EXTENSIONS: dict[str, Format] = {".json": "storage-state", ".txt": "cookies-txt"}

From = Annotated[
    Path, typer.Option("--from", help="The file to read (storage state or cookies.txt).")
]
To = Annotated[Path, typer.Option("--to", help="The new file to write (never overwritten).")]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format", help=f"The output's format: {' or '.join(FORMATS)} (default: by extension)."
    ),
]
SourceFormat = Annotated[
    str | None,
    typer.Option("--from-format", help="The source's format (default: detected)."),
]
ReceiptOption = Annotated[
    Path | None,
    typer.Option(help="Where the receipt goes (default: <output>.receipt.json)."),
]
Strict = Annotated[
    bool, typer.Option("--strict", help="Refuse instead of dropping any cookie or origin.")
]


def _format(value: str | None, path: Path, option: str) -> Format:
    if value is None:
        by_extension = _EXTENSIONS.get(path.suffix.lower())
        if by_extension is None:
            typer.echo(f"error: say {option} {' or '.join(FORMATS)} for {path.name}", err=True)
            raise typer.Exit(2)
        return by_extension
    if value not in FORMATS:
        typer.echo(f"error: {option} must be {' or '.join(FORMATS)}", err=True)
        raise typer.Exit(2)
    return value


def _source_format(value: str | None) -> Format | None:
    if value is not None and value not in FORMATS:
        typer.echo(f"error: --from-format must be {' or '.join(FORMATS)}", err=True)
        raise typer.Exit(2)
    return value


def _named(entry: dict[str, Any]) -> str:
    if "path" in entry:
        return str(entry["path"])
    kind = "profile" if "profile" in entry else "session"
    return f"{kind} {entry[kind]}"


def _summary(done: dict[str, Any], receipt_path: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(
        "", "read", "carried", title=f"{_named(done['source'])} → {_named(done['output'])}"
    )
    for kind in ("cookies", "origins", "local_items", "session_items"):
        table.add_row(kind, str(done["read"].get(kind, 0)), str(done["carried"].get(kind, 0)))
    console.print(table)
    for action in ("changed", "dropped"):
        if done[action]:
            rules = ", ".join(f"{rule} ×{n}" for rule, n in done[action].items())
            console.print(f"{action}: {rules}")
    for remark in done["remarks"]:
        console.print(f"note: {remark}")
    console.print(f"receipt: {receipt_path}")


def _convert(
    source: Path,
    output: Path,
    fmt: str | None,
    source_fmt: str | None,
    receipt: Path | None,
    strict: bool,
) -> None:
    from sitekeep.service.files import convert_file

    to = _format(fmt, output, "--format")
    receipt_path = receipt or Path(f"{output}.receipt.json")
    try:
        done = convert_file(
            source,
            output,
            to=to,
            source_format=_source_format(source_fmt),
            receipt_path=receipt_path,
            strict=strict,
        )
    except SitekeepError as exc:
        raise _fail(exc) from exc
    _summary(done, receipt_path.absolute())


def _fail(exc: SitekeepError) -> typer.Exit:
    field = getattr(exc, "field", None)
    where = f" ({field})" if field else ""
    typer.echo(f"error{where}: {exc.message}", err=True)
    return typer.Exit(2)


ProfileOption = Annotated[
    str | None, typer.Option("--profile", help="A profile's id instead of a file.")
]
SessionOption = Annotated[
    str | None, typer.Option("--session", help="A session's key instead of a file.")
]
TenantOption = Annotated[
    str | None, typer.Option("--tenant", help="The tenant (with --profile or --session).")
]


@dataclass(frozen=True, slots=True)
class _End:
    """A profile or a session at the other end of an import or export."""

    kind: Literal["profile", "session"]
    ident: str
    who: Principal

    async def write(self, svc: Service, text: str, fmt: Format | None, strict: bool) -> Any:
        if self.kind == "profile":
            return await svc.interop.import_profile_state(
                self.who, self.ident, text.encode(), fmt, strict=strict
            )
        return await svc.interop.import_session_state(
            self.who, self.ident, text.encode(), fmt, strict=strict
        )

    async def read(self, svc: Service) -> SiteData:
        if self.kind == "profile":  # values: only for who may manage it
            return await svc.interop.profile_site_data(self.who, self.ident)
        return await svc.interop.saved_site_data(self.who, self.ident)


def _end(
    profile: str | None, session: str | None, tenant: str | None, subject: str, member: bool
) -> _End | None:
    if profile is not None and session is not None:
        typer.echo("error: say --profile or --session, not both", err=True)
        raise typer.Exit(2)
    if profile is None and session is None:
        return None
    if tenant is None:
        typer.echo("error: --profile and --session need --tenant", err=True)
        raise typer.Exit(2)
    who = acting(tenant, subject, member)
    return (
        _End("profile", profile, who) if profile is not None else _End("session", str(session), who)
    )


def _into(
    source_path: Path, end: _End, source_fmt: str | None, strict: bool, receipt_path: Path | None
) -> None:
    """``import --from FILE --profile ID|--session KEY``: the file read carefully, the
    profile's site data or the session's snapshot replaced."""
    from sitekeep.service import files

    receipt_path = Path(os.path.abspath(receipt_path or f"{source_path}.{end.ident}.receipt.json"))
    try:
        incoming = files.read_import(source_path, receipt_path)
    except SitekeepError as exc:
        raise _fail(exc) from exc
    fmt = _source_format(source_fmt)
    done_import = with_service(lambda svc: end.write(svc, incoming.text, fmt, strict))
    output: dict[str, str] = {end.kind: end.ident}
    try:
        done = files.finish_import(incoming, fmt, output, done_import["report"], receipt_path)
    except SitekeepError as exc:
        raise _fail(exc) from exc
    _summary(done, receipt_path)


def _out_of(end: _End, output: Path, fmt: str | None, receipt_path: Path | None) -> None:
    """``export --profile ID|--session KEY --to FILE``."""
    from sitekeep.service import files

    to = _format(fmt, output, "--format")
    output = Path(os.path.abspath(output))
    receipt_path = Path(os.path.abspath(receipt_path or f"{output}.receipt.json"))
    try:
        files.check_free(receipt_path)
    except SitekeepError as exc:
        raise _fail(exc) from exc
    site_data = with_service(end.read)
    try:
        done = files.export_to(site_data, output, to, {end.kind: end.ident}, receipt_path)
    except SitekeepError as exc:
        raise _fail(exc) from exc
    _summary(done, receipt_path)


def import_command(
    source: From,
    to: Annotated[Path | None, typer.Option("--to", help="A new file to write.")] = None,
    profile: ProfileOption = None,
    session: SessionOption = None,
    tenant: TenantOption = None,
    subject: Actor = "cli",
    member: Member = False,
    fmt: FormatOption = None,
    from_format: SourceFormat = None,
    receipt: ReceiptOption = None,
    strict: Strict = False,
) -> None:
    """Import site data from a storage state or cookies.txt file — into a profile
    (--profile), a session's snapshot (--session) or a new file (--to) — normalised, with
    a receipt."""
    end = _end(profile, session, tenant, subject, member)
    if (to is None) == (end is None):
        typer.echo("error: say one of --to FILE, --profile ID or --session KEY", err=True)
        raise typer.Exit(2)
    if end is not None:
        _into(source, end, from_format, strict, receipt)
        return
    assert to is not None
    _convert(source, to, fmt, from_format, receipt, strict)


def export_command(
    to: To,
    source: Annotated[
        Path | None, typer.Option("--from", help="A storage state or cookies.txt file.")
    ] = None,
    profile: ProfileOption = None,
    session: SessionOption = None,
    tenant: TenantOption = None,
    subject: Actor = "cli",
    member: Member = False,
    fmt: FormatOption = None,
    from_format: SourceFormat = None,
    receipt: ReceiptOption = None,
    strict: Strict = False,
) -> None:
    """Export site data to a new storage state or cookies.txt file — from a profile
    (--profile), a session's snapshot (--session) or another such file (--from) — with a
    receipt."""
    end = _end(profile, session, tenant, subject, member)
    if (source is None) == (end is None):
        typer.echo("error: say one of --from FILE, --profile ID or --session KEY", err=True)
        raise typer.Exit(2)
    if end is not None:
        _out_of(end, to, fmt, receipt)
        return
    assert source is not None
    _convert(source, to, fmt, from_format, receipt, strict)
