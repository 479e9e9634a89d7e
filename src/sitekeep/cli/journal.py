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

The journal package is imported inside the commands, so ``sitekeep --help`` stays fast.
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
    from sitekeep.journal import Journal, JournalKey, Replayed

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


def _journal() -> Journal:
    from pydantic import ValidationError

    from sitekeep.config import Settings
    from sitekeep.errors import SitekeepError
    from sitekeep.journal import open_journal

    try:
        return open_journal(Settings())
    except (ValidationError, SitekeepError) as exc:
        err().print(f"[red]bad setting:[/] {getattr(exc, 'message', exc)}")
        raise typer.Exit(2) from exc


def _file_journal(path: Path) -> tuple[Journal, JournalKey]:
    """A journal over one file, read whatever its name."""
    from sitekeep.journal import Journal, JournalKey
    from sitekeep.journal.files import JournalFile

    if not path.is_file():
        err().print(f"[red]error:[/] no journal file at {path}")
        raise typer.Exit(2)
    return Journal(JournalFile(path)), JournalKey("file", path.name)


def _one(file: Path | None, tenant: str | None, key: str | None) -> tuple[Journal, JournalKey]:
    from sitekeep.journal import JournalKey

    if file is not None:
        return _file_journal(file)
    if tenant is None or key is None:
        err().print("[red]error:[/] give --tenant and --key, or --file")
        raise typer.Exit(2)
    return _journal(), JournalKey(tenant, key)


@contextmanager
def _progress(journal: Journal, key: JournalKey) -> Iterator[Callable[[str, int], None]]:
    """A progress bar over the bytes of ``key``'s stream, one task per replay pass."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    path = getattr(journal.backend, "path", None)
    total = path(key).stat().st_size if callable(path) and path(key).exists() else None
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
                tasks[phase] = bar.add_task(f"{key.tenant}/{key.key} {phase}", total=total)
            bar.advance(tasks[phase], size)

        yield advance


def _run(journal: Journal, work: Callable[[], Awaitable[T]]) -> T:
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


async def _replay(journal: Journal, key: JournalKey, leaf: str | None = None) -> Replayed:
    """Replay ``key`` in a worker thread, a progress bar on stderr; repeated record ids
    are reported too."""
    import anyio.to_thread

    def read() -> Replayed:
        with _progress(journal, key) as advance:
            return journal.replay_sync(key, leaf, advance, duplicates=True)

    return await anyio.to_thread.run_sync(read)


def _report_json(result: Replayed) -> dict[str, Any]:
    report = result.report
    return {
        "ok": report.ok,
        "lines": report.lines,
        "records": report.records,
        "branch": report.branch,
        "leaf": report.leaf,
        "torn": {"position": report.torn.position, "size": report.torn.size}
        if report.torn
        else None,
        "problems": [
            {"kind": p.kind, "line": p.line, "position": p.position, "message": p.message}
            for p in report.problems
        ],
    }


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
        keys: list[JournalKey] | None = [one]
    else:
        journal, keys = _journal(), None

    async def check_all() -> dict[JournalKey, Replayed]:
        found = keys if keys is not None else await journal.backend.keys(tenant)
        return {k: await _replay(journal, k) for k in found}

    results = _run(journal, check_all)
    if as_json:
        rows = [{"tenant": k.tenant, "key": k.key, **_report_json(r)} for k, r in results.items()]
        print(json.dumps(rows, indent=2))
    else:
        for found, result in results.items():
            _print_check(found, result)
        bad = sum(not r.report.ok for r in results.values())
        console().print(f"{len(results)} journal(s) checked, {bad} with problems")
    raise typer.Exit(1 if any(not r.report.ok for r in results.values()) else 0)


def _print_check(key: JournalKey, result: Replayed) -> None:
    report = result.report
    mark = "[green]ok[/]" if report.ok else "[red]PROBLEMS[/]"
    console().print(
        f"{mark}  {key.tenant}/{key.key}: {report.records} records in {report.lines} lines, "
        f"{report.branch} on the branch to {report.leaf or 'nothing'}"
    )
    if report.torn is not None:
        console().print(
            f"    torn tail: {report.torn.size} bytes at byte {report.torn.position} "
            "(an append that never returned: not committed)"
        )
    for problem in report.problems:
        where = []
        if problem.line is not None:
            where.append(f"line {problem.line}")
        if problem.position is not None:
            where.append(f"byte {problem.position}")
        console().print(f"    {problem.kind} {', '.join(where)}: {problem.message}")


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
    result = _run(journal, lambda: _replay(journal, one, leaf))
    state = result.state
    body = {
        "url": state.url,
        "url_withheld": state.url_withheld,
        "history": [{"origin": e.origin, "url": e.url, "at": e.at} for e in state.history],
        "generation": state.generation,
        "refs": {
            "snapshot": f"s{state.refs.number}",
            "record": state.refs.snapshot,
            "count": state.refs.count,
            "generation": state.refs.generation,
            "status": state.refs_status,
        }
        if state.refs
        else None,
        "unsettled": [
            {"begin": p.begin, "op": p.op, "call": p.call, "step": p.step, "at": p.at}
            for p in state.unsettled
        ],
        "last_save": {"at": state.last_save.at, **state.last_save.detail}
        if state.last_save
        else None,
        "typed_secrets": [list(t) for t in state.typed_secrets],
        "report": _report_json(result),
    }
    if as_json:
        print(json.dumps(body, indent=2))
    else:
        _print_state(body)
    raise typer.Exit(0 if result.report.ok else 1)


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
