"""``sitekeep keys rotate|status``: the master key ring and the blobs it seals (SPEC §12).

``rotate`` adds a new key to the key file (or, with keys from ``SITEKEEP_MASTER_KEY``,
uses the last one listed there), then reseals every secret, profile and snapshot under it
with a progress bar (:mod:`sitekeep.service.keys`). Old keys stay in the ring — other
processes may still hold blobs they sealed a moment ago — unless ``--retire`` is given:
then a second pass counts what each key seals and removes the keys nothing uses.
Exit status 1 when a blob was left behind (a session busy past the lock wait, or a blob
that does not open for its record), 2 on an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from sitekeep.cli.support import err, load_settings, show, with_service

if TYPE_CHECKING:
    from sitekeep.service import Service

__all__ = ["keys_app"]

keys_app = typer.Typer(help="The master key ring (SPEC §12).", no_args_is_help=True)


async def _rotate(svc: Service, retire: bool) -> tuple[dict[str, dict[str, int]], bool, list[str]]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from sitekeep.service import keys as rotation

    total = len(await svc.keys.blobs())
    columns = (
        TextColumn("[bold]resealing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err(), transient=False) as progress:
        task = progress.add_task("", total=total)

        def advance(blob: rotation.Blob, outcome: rotation.Outcome) -> None:
            progress.update(task, advance=1, description=f"{blob.kind} {outcome}")

        report, retired = await svc.keys.rotate(advance, retire=retire)
    return report.counts, report.complete, retired


@keys_app.command("rotate")
def rotate(
    new_key: Annotated[
        bool, typer.Option(help="Add a new key first (off: reseal under the newest key).")
    ] = True,
    retire: Annotated[
        bool, typer.Option(help="Then remove the keys that no blob uses any more.")
    ] = False,
) -> None:
    """Reseal every secret, profile, snapshot and session mask under a new key."""
    from sitekeep.service import keys as rotation

    settings = load_settings()
    if settings.master_key:
        err().print("keys come from SITEKEEP_MASTER_KEY: resealing under the last one listed")
    elif new_key:
        added = rotation.add_key(settings)  # None only for keys from the environment
        if added is not None:
            err().print(f"added key {added.id}; {added.keys} keys in {added.path}")
    counts, complete, retired = with_service(lambda svc: _rotate(svc, retire), settings)
    from rich.table import Table

    table = Table("kind", "resealed", "already current", "gone", "busy", "unreadable")
    for kind in rotation.KINDS:
        n = counts.get(kind, {})
        outcomes = ("resealed", "current", "gone", "busy", "unreadable")
        table.add_row(kind, *(str(n.get(o, 0)) for o in outcomes))
    show(table)
    if retired:
        err().print(f"retired keys no blob uses: {', '.join(retired)}")
    if not complete:
        err().print("[yellow]some blobs were left under older keys: run it again[/]")
        raise typer.Exit(1)


@keys_app.command("status")
def status() -> None:
    """The key ring and how many blobs each key seals now."""

    async def use(svc: Service) -> tuple[list[str], str, dict[str, int]]:
        ring = svc.keys.ring
        return list(ring.ids), ring.current.id, await svc.keys.key_use()

    ids, current, used = with_service(use)
    from rich.table import Table

    table = Table("key id", "seals", "")
    for kid in ids:
        table.add_row(kid, str(used.get(kid, 0)), "current" if kid == current else "")
    for kid in sorted(set(used) - set(ids)):
        table.add_row(kid, str(used[kid]), "[red]unknown: these blobs do not open[/]")
    show(table)
