"""The :class:`Service`: sitekeep's rooms wired over one set of
:class:`~sitekeep.service.parts.Parts` (the rooms: :mod:`sitekeep.service`). It holds no
use case of its own; the facades reach each room through it (``svc.sessions.open``…)."""

from __future__ import annotations

import time
from collections.abc import Callable

from sitekeep.browser.manager import BrowserManager
from sitekeep.config import Settings
from sitekeep.journal import Journal
from sitekeep.service.admin import Admin
from sitekeep.service.catalogue import Catalogue
from sitekeep.service.checks import Checks
from sitekeep.service.flows import Flows
from sitekeep.service.handover import Handovers
from sitekeep.service.interop import Interop
from sitekeep.service.keys import Keys
from sitekeep.service.live import LiveSessions
from sitekeep.service.parts import Parts, Stores
from sitekeep.service.profiles import Profiles
from sitekeep.service.reaper import Reaper
from sitekeep.service.sessions import Sessions
from sitekeep.service.signins import SignIns
from sitekeep.service.versions import Versions
from sitekeep.service.views import Views
from sitekeep.stores.cipher import Cipher, KeyFile

__all__ = ["Service"]


class Service:
    """sitekeep's use cases: the rooms, wired over one set of :class:`Parts`.

    Attributes:
        sessions, flows, views, profiles, interop, catalogue, admin, sign_ins, live,
        handovers, reaper, keys, versions, checks: the rooms (see the module's docstring).
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
        self.versions = Versions(parts)
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
