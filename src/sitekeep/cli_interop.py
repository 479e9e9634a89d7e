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

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from sitekeep.cli_profiles import Actor, Member, acting
from sitekeep.errors import Conflict, SitekeepError
from sitekeep.interop import FORMATS, Format, Report, detect_format, export_site_data
from sitekeep.interop.files import (
    check_unchanged,
    convert_file,
    decode_text,
    publish,
    read_source,
    receipt,
)
from sitekeep.model import Principal

if TYPE_CHECKING:
    from sitekeep.service import Service

__all__ = ["export_command", "import_command"]

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


def _end(entry: dict[str, Any]) -> str:
    return str(entry["path"]) if "path" in entry else f"profile {entry['profile']}"


def _summary(done: dict[str, Any], receipt_path: Path) -> None:
    console = Console()
    table = Table("", "read", "carried", title=f"{_end(done['source'])} → {_end(done['output'])}")
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
TenantOption = Annotated[
    str | None, typer.Option("--tenant", help="The profile's tenant (with --profile).")
]


def with_service(use: Any) -> Any:
    from sitekeep.cli import with_service as run  # sitekeep.cli imports this module

    return run(use)


def _profile_who(tenant: str | None, subject: str, member: bool) -> Principal:
    if tenant is None:
        typer.echo("error: --profile needs --tenant", err=True)
        raise typer.Exit(2)
    return acting(tenant, subject, member)


def _publish_receipt(path: Path, done: dict[str, Any]) -> None:
    try:
        publish(path, (json.dumps(done, indent=2, ensure_ascii=False) + "\n").encode())
    except SitekeepError as exc:
        raise _fail(exc) from exc


def _into_profile(
    source_path: Path,
    ident: str,
    who: Principal,
    source_fmt: str | None,
    strict: bool,
    receipt_path: Path | None,
) -> None:
    """``import --from FILE --profile ID``: the file read carefully, the profile replaced."""
    receipt_path = Path(os.path.abspath(receipt_path or f"{source_path}.{ident}.receipt.json"))
    try:
        source = read_source(source_path)
        remarks = Report()
        text = decode_text(source, remarks)
        if receipt_path.exists() or receipt_path.is_symlink():
            raise Conflict(f"{receipt_path} exists: a conversion never overwrites")
        check_unchanged(source)
    except SitekeepError as exc:
        raise _fail(exc) from exc

    async def use(svc: Service) -> dict[str, Any]:
        return await svc.import_profile_state(
            who, ident, text.encode(), _source_format(source_fmt), strict=strict
        )

    done_import = with_service(use)
    fmt = source_fmt or detect_format(text)
    done = receipt(
        "import",
        source={
            "path": str(source.path),
            "bytes": source.size,
            "sha256": source.sha256,
            "format": fmt,
        },
        output={"profile": ident},
        report=Report(),
        now=time.time(),
    )
    done.update(done_import["report"])
    done["remarks"] = [*remarks.remarks, *done["remarks"]]
    _publish_receipt(receipt_path, done)
    _summary(done, receipt_path)


def _from_profile(
    ident: str, output: Path, who: Principal, fmt: str | None, receipt_path: Path | None
) -> None:
    """``export --profile ID --to FILE``: values, so only for who may manage the profile."""
    to = _format(fmt, output, "--format")
    output = Path(os.path.abspath(output))
    receipt_path = Path(os.path.abspath(receipt_path or f"{output}.receipt.json"))

    async def use(svc: Service) -> Any:
        return (await svc.profiles.load(who, ident, "capture")).site_data

    exported = export_site_data(with_service(use), to)
    try:
        if receipt_path.exists() or receipt_path.is_symlink():
            raise Conflict(f"{receipt_path} exists: a conversion never overwrites")
        published = publish(output, exported.data)
    except SitekeepError as exc:
        raise _fail(exc) from exc
    done = receipt(
        "export",
        source={"profile": ident},
        output={
            "path": str(published.path),
            "bytes": published.size,
            "sha256": published.sha256,
            "format": to,
        },
        report=exported.report,
        now=time.time(),
    )
    _publish_receipt(receipt_path, done)
    _summary(done, receipt_path)


def import_command(
    source: From,
    to: Annotated[Path | None, typer.Option("--to", help="A new file to write.")] = None,
    profile: ProfileOption = None,
    tenant: TenantOption = None,
    subject: Actor = "cli",
    member: Member = False,
    fmt: FormatOption = None,
    from_format: SourceFormat = None,
    receipt: ReceiptOption = None,
    strict: Strict = False,
) -> None:
    """Import site data from a storage state or cookies.txt file — into a profile
    (--profile, replacing its site data) or a new file (--to) — normalised, with a receipt."""
    if (to is None) == (profile is None):
        typer.echo("error: say one of --to FILE or --profile ID", err=True)
        raise typer.Exit(2)
    if profile is not None:
        who = _profile_who(tenant, subject, member)
        _into_profile(source, profile, who, from_format, strict, receipt)
        return
    assert to is not None
    _convert(source, to, fmt, from_format, receipt, strict)


def export_command(
    to: To,
    source: Annotated[
        Path | None, typer.Option("--from", help="A storage state or cookies.txt file.")
    ] = None,
    profile: ProfileOption = None,
    tenant: TenantOption = None,
    subject: Actor = "cli",
    member: Member = False,
    fmt: FormatOption = None,
    from_format: SourceFormat = None,
    receipt: ReceiptOption = None,
    strict: Strict = False,
) -> None:
    """Export site data to a new storage state or cookies.txt file — from a profile
    (--profile) or another such file (--from) — with a receipt."""
    if (source is None) == (profile is None):
        typer.echo("error: say one of --from FILE or --profile ID", err=True)
        raise typer.Exit(2)
    if profile is not None:
        _from_profile(profile, to, _profile_who(tenant, subject, member), fmt, receipt)
        return
    assert source is not None
    _convert(source, to, fmt, from_format, receipt, strict)
