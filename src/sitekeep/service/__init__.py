"""The use cases: one room per kind, and the :class:`Service` that wires them.

HTTP, MCP, the CLI and the admin UI call these rooms and nothing below them. Every call
that affects a browser passes through one seam (``sitekeep.seam``): it locks the session,
journals each operation through one operation context (begin durable → work → mask →
apply → finish, SPEC §8), reattaches to (or silently reopens) its browser, records where
the browser landed in the history and writes the record back.

Rooms, each a module taking the service's :class:`~sitekeep.service.parts.Parts`::

    sessions    open, act (navigate, back, forward…), save, close, delete   SPEC §3, §5
    flows       run_flow                                                    SPEC §6
    views       current page, the sessions list, site data by host          SPEC §5
    profiles    create, list, read, change, delete, capture                 SPEC §9
    interop     storage-state import/export, the state preview              SPEC §9, §15
    catalogue   tokens, secrets, proxies behind the one admin gate          SPEC §1, §7, §14
    admin       the admin panes: sessions, history, journal, site data      SPEC §11
    signins     the admin UI's sign-ins                                     SPEC §11
    live        live sessions and tickets; relay: the socket                SPEC §10
    handover    WebDriver handovers                                         SPEC §21
    reaper      warm-up, the reaper, sitekeep stop, /metrics                SPEC §2, §13
    keys        the master key ring, rotation                               SPEC §12
    checks      per-site sign-in checks of sessions and profiles, run now   SPEC §18
    autosave    automatic saves: close, reaper, stop, shutdown, checkpoints SPEC §18

Results are plain JSON-able dicts in the shapes of SPEC §5; none holds a value except the
owner's per-host view (``Views.site_data_host``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio

from sitekeep.browser.manager import BrowserManager
from sitekeep.config import Settings
from sitekeep.journal import Journal
from sitekeep.service.admin import Admin
from sitekeep.service.catalogue import Catalogue
from sitekeep.service.checks import Checks
from sitekeep.service.flows import Flows
from sitekeep.service.gates import require_admin
from sitekeep.service.handover import Handovers
from sitekeep.service.interop import Interop
from sitekeep.service.keys import Keys
from sitekeep.service.live import LiveSessions
from sitekeep.service.parts import Parts, Stores
from sitekeep.service.profiles import Profiles
from sitekeep.service.reaper import Reaper
from sitekeep.service.sessions import Sessions
from sitekeep.service.signins import SignIns
from sitekeep.service.views import Views
from sitekeep.stores.cipher import Cipher, KeyFile
from sitekeep.stores.health import database_health, session_store_health

__all__ = ["Service", "require_admin", "store_health"]


class Service:
    """sitekeep's use cases: the rooms, wired over one set of :class:`Parts`.

    Attributes:
        sessions, flows, views, profiles, interop, catalogue, admin, sign_ins, live,
        handovers, reaper, keys, checks: the rooms (see the module's docstring).
        parts: what they work with (the stores, the seam, the settings, the clock…).
    """

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.sessions = Sessions(parts)
        self.flows = Flows(parts.seam)
        self.views = Views(parts)
        self.profiles = Profiles(parts)
        self.interop = Interop(parts)
        self.catalogue = Catalogue(parts)
        self.admin = Admin(parts)
        self.sign_ins: SignIns = parts.sign_ins
        self.live = LiveSessions(parts, self.sessions.open)
        self.handovers = Handovers(parts)
        self.reaper = Reaper(parts)
        self.keys = Keys(parts)
        self.checks = Checks(parts)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        clock: Callable[[], float] = time.time,
        journal: Journal | None = None,
    ) -> Service:
        """Open the stores, load (or generate) the master key, prepare the browsers; the
        journal is ``journal`` when given, else the one the settings name.

        Raises:
            InvalidInput: a store URL naming no known backend (field: its setting).
            StoreUnavailable: a store cannot be reached or upgraded.
        """
        cipher = Cipher(KeyFile(settings.key_file, settings.master_key))
        stores = Stores.open(settings, clock)
        browsers = BrowserManager(settings)
        return cls(Parts.wire(settings, stores, cipher, browsers, clock, journal))

    async def aclose(self) -> None:
        """Save each session this process drives a browser of (SPEC §18: an automatic
        save at shutdown), then close sockets and store connections; browsers live on
        (SPEC §2)."""
        await self.parts.autosaves.shutdown()
        await self.parts.browsers.aclose()
        await self.handovers.aclose()
        await self.parts.stores.aclose()
        await self.parts.journal.aclose()


async def store_health(settings: Settings) -> tuple[tuple[bool, str], tuple[bool, str]]:
    """Whether the database and the session store can be reached and read, each with a
    line for a person — changing nothing (``sitekeep doctor``)."""
    database = await anyio.to_thread.run_sync(database_health, settings.database)
    return database, await session_store_health(settings.session_store_url)
