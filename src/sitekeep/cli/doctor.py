"""``sitekeep doctor`` and ``sitekeep db upgrade``: the installation's health and its
database's schema (SPEC §13). ``doctor`` changes nothing; ``db upgrade`` does what every
start does. The checks are the service's (:mod:`sitekeep.service.doctor`); this module
prints them."""

from __future__ import annotations

import typer

from sitekeep.cli.support import command_group, console, fail, load_settings
from sitekeep.errors import SitekeepError
from sitekeep.version import __version__

__all__ = ["db_app", "doctor"]

db_app = command_group("The SQL database's schema.")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Bring the database and a SQL session store to this sitekeep's newest schema
    (every start does it too; safe while other replicas start)."""
    from sitekeep.service.doctor import upgrade_stores

    settings = load_settings()
    try:
        done = upgrade_stores(settings)
    except SitekeepError as exc:
        fail(exc)
    for name, before, after in done:
        change = "already" if before == after else f"was {before}, now"
        console().print(f"{name}: {change} at schema {after}")


class _Checks:
    """Prints each check's line; :attr:`ok` until a check that is not optional fails."""

    def __init__(self) -> None:
        self.ok = True

    def __call__(self, name: str, passed: bool, detail: str, *, optional: bool = False) -> None:
        self.ok = self.ok and (passed or optional)
        mark = "[green]ok[/]" if passed else ("[yellow]--[/]" if optional else "[red]FAIL[/]")
        console().print(f"{mark}  {name}: {detail}")


def doctor() -> None:
    """Check the browsers, their drivers, the database and the key (changes nothing)."""
    import anyio

    from sitekeep.service import doctor as health

    settings = load_settings()
    check = _Checks()
    for binary in health.binaries(settings):
        check(binary.name, *binary.health(), optional=binary.optional)
    if settings.webdriver_url:
        console().print(f"browsers run on SITEKEEP_WEBDRIVER_URL={settings.webdriver_url}")
    check("data dir", *health.data_dir_health(settings.data_dir))
    database, sessions = anyio.run(health.store_health, settings)
    check("database", *database)
    check("session store", *sessions)
    check("master key", *health.key_health(settings))
    console().print(f"sitekeep {__version__}; data dir {settings.data_dir}")
    raise typer.Exit(0 if check.ok else 1)
