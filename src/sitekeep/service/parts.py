"""What the service's rooms work with: one small frozen set of parts (SPEC §13).

:class:`Parts` is made once, by :meth:`Parts.wire`, from the settings, the stores, the
cipher, the browser manager, a clock and the journal; every room takes it (or less) —
never the :class:`~sitekeep.service.Service`, never another room.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from sitekeep.auth import Authenticator
from sitekeep.browser.manager import BrowserManager
from sitekeep.config import Settings
from sitekeep.journal import Journal, open_journal
from sitekeep.profiles import GatedProfiles
from sitekeep.proxies import Proxies
from sitekeep.seam import Seam
from sitekeep.service.autosave import Autosaves
from sitekeep.service.signins import SignIns
from sitekeep.stores import SessionLocks, SessionStore, open_database, open_sessions
from sitekeep.stores.base import (
    ProfileStore,
    ProxyStore,
    RunLedger,
    SecretStore,
    TokenStore,
)
from sitekeep.stores.cipher import Cipher
from sitekeep.stores.database import Database
from sitekeep.stores.profiles import SqlProfileStore, SqlProxyStore
from sitekeep.stores.runs import SqlRunLedger
from sitekeep.stores.secrets import SqlSecretStore
from sitekeep.stores.tokens import SqlTokenStore
from sitekeep.vault import Vault

__all__ = ["Parts", "Stores", "own_origins"]


@dataclass(frozen=True, slots=True)
class Stores:
    """Every store a service uses, opened from the settings' URLs (SPEC §13)."""

    sessions: SessionStore
    locks: SessionLocks
    database: Database
    tokens: TokenStore
    secrets: SecretStore
    runs: RunLedger
    profiles: ProfileStore
    proxies: ProxyStore

    @classmethod
    def open(cls, settings: Settings, clock: Callable[[], float] = time.time) -> Stores:
        """Open (and upgrade to the newest schema) the database and the session store.

        Raises:
            InvalidInput: a store URL naming no known backend (field: its setting).
            StoreUnavailable: a store cannot be reached or upgraded.
        """
        database = open_database(settings.database)
        try:
            sessions, locks = open_sessions(
                settings.session_store_url, clock, lock_ttl=settings.lock_ttl
            )
        except BaseException:
            database.dispose()
            raise
        return cls(
            sessions,
            locks,
            database,
            SqlTokenStore(database),
            SqlSecretStore(database),
            SqlRunLedger(database),
            SqlProfileStore(database),
            SqlProxyStore(database),
        )

    async def aclose(self) -> None:
        await self.locks.aclose()
        await self.sessions.aclose()
        await self.database.aclose()


def own_origins(settings: Settings) -> list[str]:
    """The origins the server itself answers on: agents may not open them (SPEC §12)."""
    port = settings.port
    return [f"http://{host}:{port}" for host in (settings.host, "127.0.0.1", "localhost")]


@dataclass(frozen=True, slots=True)
class Parts:
    """What every room may use.

    Attributes:
        seam: where every browser-affecting call passes (``sitekeep.seam``).
        vault: the tenants' secrets (SPEC §7). auth: the bearer tokens (SPEC §1).
        profiles: the profiles, each behind its gate (SPEC §9). proxies: the proxy pool
            (SPEC §14). sign_ins: the admin UI's sign-ins (SPEC §11).
        clock: seconds since the epoch. replica: ``host:pid`` of this process.
        autosaves: the sessions' automatic saves and checkpoints (SPEC §18).
    """

    settings: Settings
    stores: Stores
    cipher: Cipher
    browsers: BrowserManager
    journal: Journal
    seam: Seam
    vault: Vault
    auth: Authenticator
    profiles: GatedProfiles
    proxies: Proxies
    sign_ins: SignIns
    clock: Callable[[], float]
    replica: str
    autosaves: Autosaves

    @classmethod
    def wire(
        cls,
        settings: Settings,
        stores: Stores,
        cipher: Cipher,
        browsers: BrowserManager,
        clock: Callable[[], float] = time.time,
        journal: Journal | None = None,
    ) -> Parts:
        """The parts over opened stores; the journal is ``journal`` when given, else
        the one the settings name."""
        journal = journal or open_journal(settings)
        vault = Vault(stores.secrets, cipher, clock)
        auth = Authenticator(stores.tokens, clock)
        profiles = GatedProfiles(stores.profiles, cipher, clock, versions=settings.versions)
        proxies = Proxies(stores.proxies, vault, clock)
        replica = f"{socket.gethostname()}:{os.getpid()}"
        seam = Seam(
            settings,
            store=stores.sessions,
            locks=stores.locks,
            runs=stores.runs,
            cipher=cipher,
            browsers=browsers,
            vault=vault,
            journal=journal,
            profiles=profiles,
            proxies=proxies,
            replica=replica,
            own_origins=lambda: own_origins(settings),
            clock=clock,
        )
        sign_ins = SignIns(stores.sessions, auth, clock)
        autosaves = Autosaves(settings, seam, browsers)
        seam.on_use = autosaves.used
        return cls(
            settings, stores, cipher, browsers, journal, seam, vault, auth, profiles, proxies,
            sign_ins, clock, replica, autosaves,
        )  # fmt: skip

    def own_origins(self) -> list[str]:
        """The origins the server itself answers on (:func:`own_origins`)."""
        return own_origins(self.settings)
