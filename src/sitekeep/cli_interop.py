"""``sitekeep import`` and ``sitekeep export`` (SPEC §15).

Both move site data between a file and somewhere else, carefully and with a receipt
(:mod:`sitekeep.interop.files`). Today the somewhere else is another file: ``--from FILE
--to FILE`` converts between Playwright storage state JSON and Netscape cookies.txt,
normalising what the source's writer got wrong. A session or a profile as the other end
(``import --from FILE --session KEY``, ``export --profile ID --to FILE``) takes its place
beside ``--to``/``--from`` once profiles have a store; the options below are shaped so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sitekeep.errors import SitekeepError

if TYPE_CHECKING:
    from sitekeep.interop import Format

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
    typer.Option(help="Where the receipt goes (default: the output file name + .receipt.json)."),
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


def _summary(done: dict[str, Any], receipt_path: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(
        "", "read", "carried", title=f"{done['source']['path']} → {done['output']['path']}"
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
    from sitekeep.interop.files import convert_file

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
        field = getattr(exc, "field", None)
        where = f" ({field})" if field else ""
        typer.echo(f"error{where}: {exc.message}", err=True)
        raise typer.Exit(2) from exc
    _summary(done, receipt_path.absolute())


def _command(doc: str) -> Callable[..., None]:
    """One command function per name: ``import`` and ``export`` share their options until
    a session or profile end makes them differ."""

    def command(
        source: From,
        to: To,
        fmt: FormatOption = None,
        from_format: SourceFormat = None,
        receipt: ReceiptOption = None,
        strict: Strict = False,
    ) -> None:
        _convert(source, to, fmt, from_format, receipt, strict)

    command.__doc__ = doc
    return command


import_command = _command(
    "Import site data from a storage state or cookies.txt file (today into a new file, "
    "normalised), with a receipt."
)
export_command = _command(
    "Export site data to a storage state or cookies.txt file (today from another such "
    "file), with a receipt."
)
