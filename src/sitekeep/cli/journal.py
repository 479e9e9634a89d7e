"""``sitekeep journal check|replay|tail``: the journal from a shell (SPEC §8).

Each command reads the journal the settings name (``SITEKEEP_JOURNAL_URL``, by default the
JSON-lines files in the data dir), or one file given with ``--file`` (a copy taken aside,
say). Nothing is ever written. Long reads show a progress bar on stderr; ``--json`` prints
one JSON document on stdout for scripts. Exit status: 0 when everything read is valid, 1
when a problem was found (corrupt or oversize lines, a broken branch, a record id used
twice), 2 on bad usage, settings or a journal that cannot be reached. A torn tail is
reported but is no problem: it is an append that never returned.

Each command runs in one event loop, the journal closed in it: the Redis backend's
connections belong to the loop that opened them.

The reader (:mod:`sitekeep.service.journal`) is imported inside the commands, so
``sitekeep --help`` stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from sitekeep.cli.support import command_group, console, err

if TYPE_CHECKING:
    from sitekeep.service.journal import Advance, JournalReader, Stream

__all__ = ["journal_app"]

T = TypeVar("T")

journal_app = command_group(
    "The journal of browser operations: check, replay, tail (never writes)."
)

TenantOption = Annotated[str | None, typer.Option(help="The tenant (workspace).")]
KeyOption = Annotated[str | None, typer.Option("--key", help="The session key.")]
FileOption = Annotated[
    Path | None, typer.Option("--file", help="Read this journal file instead of the settings'.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def _journal() -> JournalReader:
    from pydantic import ValidationError

    from sitekeep.config import Settings
    from sitekeep.errors import SitekeepError
    from sitekeep.service.journal import JournalReader

    try:
        return JournalReader.from_settings(Settings())
    except (ValidationError, SitekeepError) as exc:
        err().print(f"[red]bad setting:[/] {getattr(exc, 'message', exc)}")
        raise typer.Exit(2) from exc


def _file_journal(path: Path) -> tuple[JournalReader, Stream]:
    """A reader over one file, read whatever its name."""
    from sitekeep.service.journal import JournalReader

    if not path.is_file():
        err().print(f"[red]error:[/] no journal file at {path}")
        raise typer.Exit(2)
    return JournalReader.from_file(path)


def _one(file: Path | None, tenant: str | None, key: str | None) -> tuple[JournalReader, Stream]:
    if file is not None:
        return _file_journal(file)
    if tenant is None or key is None:
        err().print("[red]error:[/] give --tenant and --key, or --file")
        raise typer.Exit(2)
    return _journal(), (tenant, key)


@contextmanager
def _progress(journal: JournalReader, stream: Stream) -> Iterator[Advance]:
    """A progress bar over the bytes of ``stream``, one task per replay pass."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    total = journal.size(stream)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
    )
    with Progress(*columns, console=err(), transient=True) as bar:
        tasks: dict[str, Any] = {}

        def advance(phase: str, size: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(f"{stream[0]}/{stream[1]} {phase}", total=total)
            bar.advance(tasks[phase], size)

        yield advance


def _run(journal: JournalReader, work: Callable[[], Awaitable[T]]) -> T:
    """``work()``, then the journal closed, in one event loop; a sitekeep error (the
    journal unreachable, say) is one line on stderr and exit status 2."""
    import anyio

    from sitekeep.errors import SitekeepError

    async def go() -> T:
        try:
            return await work()
        finally:
            await journal.aclose()

    try:
        return anyio.run(go)
    except SitekeepError as exc:
        err().print(f"[red]error:[/] {exc.message}")
        raise typer.Exit(2) from exc


@journal_app.command()
def check(
    tenant: TenantOption = None,
    key: KeyOption = None,
    file: FileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Validate journals: every record, the ancestry of the last one, the torn tail.

    With no option, every session's journal; ``--tenant`` alone, that tenant's."""
    if file is not None or key is not None:
        journal, one = _one(file, tenant, key)
        streams: list[Stream] | None = [one]
    else:
        journal, streams = _journal(), None

    async def check_all() -> dict[Stream, dict[str, Any]]:
        found = streams if streams is not None else await journal.streams(tenant)
        checked = {}
        for stream in found:
            with _progress(journal, stream) as advance:
                checked[stream] = await journal.check(stream, advance)
        return checked

    results = _run(journal, check_all)
    if as_json:
        rows = [{"tenant": t, "key": k, **report} for (t, k), report in results.items()]
        print(json.dumps(rows, indent=2))
    else:
        for found, report in results.items():
            _print_check(found, report)
        bad = sum(not report["ok"] for report in results.values())
        console().print(f"{len(results)} journal(s) checked, {bad} with problems")
    raise typer.Exit(1 if any(not report["ok"] for report in results.values()) else 0)


def _print_check(stream: Stream, report: dict[str, Any]) -> None:
    mark = "[green]ok[/]" if report["ok"] else "[red]PROBLEMS[/]"
    console().print(
        f"{mark}  {stream[0]}/{stream[1]}: {report['records']} records in {report['lines']} "
        f"lines, {report['branch']} on the branch to {report['leaf'] or 'nothing'}"
    )
    torn = report["torn"]
    if torn is not None:
        console().print(
            f"    torn tail: {torn['size']} bytes at byte {torn['position']} "
            "(an append that never returned: not committed)"
        )
    for problem in report["problems"]:
        where = []
        if problem["line"] is not None:
            where.append(f"line {problem['line']}")
        if problem["position"] is not None:
            where.append(f"byte {problem['position']}")
        console().print(f"    {problem['kind']} {', '.join(where)}: {problem['message']}")


@journal_app.command()
def replay(
    tenant: TenantOption = None,
    key: KeyOption = None,
    file: FileOption = None,
    leaf: Annotated[
        str | None, typer.Option(help="Replay the branch ending at this record id.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Rebuild a session's state from its journal: URL, history, refs, unsettled calls."""
    journal, one = _one(file, tenant, key)

    async def replayed() -> dict[str, Any]:
        with _progress(journal, one) as advance:
            return await journal.replay(one, leaf, advance)

    body = _run(journal, replayed)
    if as_json:
        print(json.dumps(body, indent=2))
    else:
        _print_state(body)
    raise typer.Exit(0 if body["report"]["ok"] else 1)


def _print_state(body: dict[str, Any]) -> None:
    url = "(withheld: it holds a typed secret)" if body["url_withheld"] else body["url"]
    console().print(f"url: {url}")
    console().print(f"browser generation: {body['generation']}")
    refs = body["refs"]
    console().print(
        f"refs: {refs['snapshot']} ({refs['count']} refs, {refs['status']})"
        if refs
        else "refs: none"
    )
    console().print(f"last save: {body['last_save'] or 'none'}")
    for pending in body["unsettled"]:
        console().print(
            f"[yellow]unsettled[/] {pending['op']} (begin {pending['begin']}): inspect the "
            "browser before acting; it is never repeated"
        )
    for entry in body["history"]:
        console().print(f"  {entry['url']}")
    _print_check_lines(body["report"])


def _print_check_lines(report: dict[str, Any]) -> None:
    if report["torn"]:
        console().print(f"torn tail: {report['torn']['size']} bytes (not committed)")
    for problem in report["problems"]:
        console().print(f"[red]{problem['kind']}[/] line {problem['line']}: {problem['message']}")


@journal_app.command()
def tail(
    tenant: TenantOption = None,
    key: KeyOption = None,
    file: FileOption = None,
    lines: Annotated[int, typer.Option("-n", "--lines", min=1, max=10_000)] = 20,
    as_json: JsonOption = False,
) -> None:
    """The last operations of a session: op, redacted arguments, outcome, URL, duration."""
    journal, one = _one(file, tenant, key)
    rows = _run(journal, lambda: journal.tail(one, lines))
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        console().print(_tail_line(row))


def _tail_line(row: dict[str, Any]) -> str:
    if "invalid" in row:
        return f"{row['position']:>12}  [red]invalid[/] {row['invalid']}"
    if "mark" in row:
        return f"{row['position']:>12}  mark {row['mark']} {json.dumps(row['detail'])}"
    where = "(url withheld)" if row.get("url_withheld") else row.get("url") or ""
    duration = f"{row['duration'] * 1000:.0f} ms" if "duration" in row else ""
    args = json.dumps(row.get("args", {}), ensure_ascii=False)
    return f"{row['position']:>12}  {row['op']} {args} {row['outcome']} {where} {duration}".rstrip()
