"""The ports: what sitekeep needs of each store, as Protocols (SPEC §13).

One Protocol per kind of store, one module per backend, chosen by URL
(:mod:`sitekeep.stores.urls`); one contract suite per port (``tests/contracts``) runs
against every backend. Stores take and return bytes and plain rows: serialisation and
sealing (:mod:`sitekeep.stores.cipher`) live above them, so no backend ever sees a
plaintext value.

Every method of every port raises :class:`sitekeep.errors.StoreUnavailable` when its
backend cannot be reached, and has then written nothing.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from sitekeep.model import Role

__all__ = [
    "Clock",
    "ClosedReason",
    "ProfileRow",
    "ProfileStore",
    "ProfileVersionRow",
    "ProxyRow",
    "ProxyStore",
    "Run",
    "RunLedger",
    "SecretRow",
    "SecretStore",
    "SessionLocks",
    "SessionStore",
    "TokenRow",
    "TokenStore",
    "Versioned",
    "Visibility",
    "system_clock",
]

Clock = Callable[[], float]
"""Seconds since the epoch; tests pass a controllable one."""


def system_clock() -> float:
    return time.time()


# -- sessions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Versioned:
    """A stored value and its revision (1 for the first write, +1 for each later one)."""

    value: bytes
    revision: int


class SessionStore(Protocol):
    """Bytes under string keys, each with an optional time to live and a revision.

    Expiry follows the clock the store was opened with; a backend with native expiry (Redis)
    also lets its server drop the key then.
    """

    async def get(self, key: str) -> bytes | None:
        """The value, or None when absent or expired."""
        ...

    async def read(self, key: str) -> Versioned | None:
        """The value and its revision, or None when absent or expired."""
        ...

    async def read_many(self, keys: Sequence[str]) -> list[Versioned | None]:
        """:meth:`read` of each key, in order, in one round trip (a list of N sessions
        costs one read, not N)."""
        ...

    async def set(self, key: str, value: bytes, *, ttl: float | None = None) -> None:
        """Write ``value`` (its revision goes up by one); it expires ``ttl`` seconds from now
        (never when None). The value and its expiry are written at once."""
        ...

    async def write(
        self, key: str, value: bytes, *, ttl: float | None, revision: int
    ) -> int | None:
        """Write ``value`` only if the key's revision is still ``revision`` (0: absent or
        expired), atomically; as :meth:`set` otherwise.

        Returns:
            The new revision, or None when another writer came first: nothing was written.
        """
        ...

    async def delete(self, *keys: str) -> int:
        """Delete the keys; returns how many existed."""
        ...

    async def expire(self, key: str, ttl: float, *, under: str | None = None) -> bool:
        """Move the key's expiry to ``ttl`` seconds from now; False when it is absent.
        The revision stays.

        With ``under``, in the same round trip, move the expiry of every live key starting
        with ``under`` (as :meth:`keys` lists them) alike, whether or not ``key`` is live:
        what keeps a session's snapshot versions expiring with its record (issue #26) at
        no more round trips than its snapshot alone."""
        ...

    async def keys(self, prefix: str) -> list[str]:
        """Live keys starting with ``prefix`` (matched literally, case-sensitively), sorted.

        Costs what the keys under ``prefix`` are (an index range, or Redis's per-group
        index), not what the store holds."""
        ...

    async def count(self, prefix: str) -> int:
        """How many :meth:`keys` ``prefix`` would list, without listing them, and without
        blocking the event loop on a large store (``/metrics`` asks it every few seconds)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class SessionLocks(Protocol):
    """Named mutual exclusion shared by every process that uses the same store — and, for a
    networked backend, every machine (SPEC §13: one session, one browser).

    A holder that dies lets go: its process's file lock or database connection closes, or
    its lease (Redis) runs out ``ttl`` seconds after the last renewal. While held, a lease
    is renewed in the background, so a call may run longer than ``ttl``.
    """

    def hold(self, name: str, *, wait: float) -> AbstractAsyncContextManager[None]:
        """Hold ``name`` for the ``async with`` block.

        Args:
            wait: seconds to wait for it; 0 tries once.

        Raises:
            SessionBusy: not acquired within ``wait``.
            StoreUnavailable: the backend cannot be reached.
        """
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


# -- tokens and secrets ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenRow:
    """A bearer token as stored: its SHA-256 (hex), never the token (SPEC §1)."""

    token_hash: str
    tenant: str
    subject: str
    role: Role
    created_at: float


class TokenStore(Protocol):
    """Bearer tokens by hash."""

    async def add(self, row: TokenRow) -> None:
        """Store a new token."""
        ...

    async def find(self, token_hash: str) -> TokenRow | None:
        """The token with this hash, or None."""
        ...

    async def list(self, tenant: str | None) -> list[TokenRow]:
        """The tokens of ``tenant`` (every tenant's when None), oldest first."""
        ...

    async def delete(self, token_hash: str) -> bool:
        """Delete the token with this hash; whether there was one."""
        ...


@dataclass(frozen=True, slots=True)
class SecretRow:
    """A secret as stored (SPEC §7): info in the clear, the values only in ``sealed``."""

    tenant: str
    name: str
    description: str
    hosts: tuple[str, ...]
    keys: tuple[str, ...]
    sealed: bytes
    updated_at: float


class SecretStore(Protocol):
    """Per-tenant named secrets, rows as given."""

    async def put(self, row: SecretRow) -> None:
        """Create or replace the row of (tenant, name), at once."""
        ...

    async def get(self, tenant: str, name: str) -> SecretRow | None:
        """One row, or None."""
        ...

    async def list(self, tenant: str) -> list[SecretRow]:
        """The tenant's rows, sorted by name."""
        ...

    async def delete(self, tenant: str, name: str) -> bool:
        """Delete one row; whether it existed."""
        ...

    async def every(self) -> builtins.list[SecretRow]:
        """Every tenant's rows, sorted by (tenant, name) (for key rotation)."""
        ...

    async def swap_sealed(self, tenant: str, name: str, old: bytes, new: bytes) -> bool:
        """Replace the row's ``sealed`` with ``new`` only while it is still ``old``,
        atomically; whether it was replaced."""
        ...


# -- profiles and proxies -------------------------------------------------------------------

Visibility = Literal["private", "workspace"]


@dataclass(frozen=True, slots=True)
class ProfileRow:
    """A profile as stored (SPEC §9): its metadata in the clear, its site data only in
    ``sealed`` (an envelope for (tenant, "profile", id), SPEC §12; None until captured).

    Attributes:
        cookie_domains: the hosts of the captured cookies, without a leading dot, sorted.
        captured_at: when site data was last captured into it (None: never).
        expires_at: the earliest expiry of its captured persistent cookies (None: only
            session cookies, or nothing captured).
    """

    tenant: str
    id: str
    name: str
    visibility: Visibility
    country: str | None
    cookie_domains: tuple[str, ...]
    created_by: str
    created_at: float
    updated_at: float
    captured_at: float | None = None
    expires_at: float | None = None
    sealed: bytes | None = None


@dataclass(frozen=True, slots=True)
class ProfileVersionRow:
    """The site data a profile held before one of its captures (issue #26): only in
    ``sealed``, an envelope for (tenant, "profile-version", "{profile}/{id}").

    Attributes:
        id: the version's id (``sitekeep.versions``), ordered as the versions were kept.
        kept_at: when it was replaced (seconds since the epoch).
    """

    tenant: str
    profile: str
    id: str
    kept_at: float
    sealed: bytes


class ProfileStore(Protocol):
    """Per-tenant profiles, rows as given, each with the versions of its site data."""

    async def put(self, row: ProfileRow) -> None:
        """Create or replace the row of (tenant, id), at once."""
        ...

    async def get(self, tenant: str, ident: str) -> ProfileRow | None:
        """One row, or None."""
        ...

    async def list(self, tenant: str | None) -> list[ProfileRow]:
        """The tenant's rows (every tenant's when None), sorted by (tenant, name, id)."""
        ...

    async def delete(self, tenant: str, ident: str) -> bool:
        """Delete one row and its versions; whether it existed."""
        ...

    async def swap_sealed(self, tenant: str, ident: str, old: bytes, new: bytes) -> bool:
        """Replace the row's ``sealed`` with ``new`` only while it is still ``old``,
        atomically (key rotation never overwrites a capture made meanwhile); whether it
        was replaced."""
        ...

    async def put_over(
        self,
        row: ProfileRow,
        *,
        over: bytes | None,
        version: ProfileVersionRow | None = None,
        keep: int = 0,
    ) -> bool:
        """Replace the row of (tenant, id) with ``row`` only while it exists and its
        ``sealed`` is still ``over`` (None: nothing captured yet), and keep ``version``
        among its versions, dropping all but the newest ``keep`` — all at once.

        Returns:
            Whether it was written; False (nothing written) when another write came
            first or the row is gone.
        """
        ...

    async def versions(self, tenant: str, ident: str) -> builtins.list[ProfileVersionRow]:
        """The profile's versions, newest first."""
        ...

    async def version(self, tenant: str, ident: str, version: str) -> ProfileVersionRow | None:
        """One version of the profile, or None."""
        ...

    async def every_version(self) -> builtins.list[ProfileVersionRow]:
        """Every tenant's versions, sorted by (tenant, profile, id) (for key rotation)."""
        ...

    async def swap_version_sealed(
        self, tenant: str, ident: str, version: str, old: bytes, new: bytes
    ) -> bool:
        """:meth:`swap_sealed` of one version; whether it was replaced."""
        ...


@dataclass(frozen=True, slots=True)
class ProxyRow:
    """One proxy of a tenant's pool (SPEC §14). ``url`` holds no credentials: they are
    the ``username``/``password`` of the secret named ``auth_secret``."""

    tenant: str
    name: str
    country: str
    url: str
    auth_secret: str | None
    updated_at: float


class ProxyStore(Protocol):
    """Per-tenant proxies, rows as given."""

    async def put(self, row: ProxyRow) -> None:
        """Create or replace the row of (tenant, name), at once."""
        ...

    async def get(self, tenant: str, name: str) -> ProxyRow | None:
        """One row, or None."""
        ...

    async def list(self, tenant: str) -> list[ProxyRow]:
        """The tenant's rows, sorted by name."""
        ...

    async def delete(self, tenant: str, name: str) -> bool:
        """Delete one row; whether it existed."""
        ...


# -- the run ledger --------------------------------------------------------------------------

ClosedReason = Literal["closed", "expired", "reaped", "crashed"]


@dataclass(frozen=True, slots=True)
class Run:
    """One live (or once live) browser (SPEC §13 run ledger).

    Attributes:
        id: the run's id, made when its browser was reserved.
        endpoint, webdriver_session: where the browser runs (the WebDriver server and its
            session id: a Grid session id, or the embedded driver's); None until started.
        replica: the process that opened it (host:pid), for people reading the ledger.
    """

    id: str
    tenant: str
    session: str
    browser: str
    opened_at: float
    endpoint: str | None = None
    webdriver_session: str | None = None
    closed_at: float | None = None
    closed_reason: ClosedReason | None = None
    replica: str = ""


class RunLedger(Protocol):
    """The run ledger: reservations under caps, starts, closes, lists."""

    async def reserve(
        self, run: Run, *, per_tenant: int | None, total: int | None
    ) -> Literal["tenant", "global"] | None:
        """Add ``run`` (open, not started) unless a cap is reached, counting the open runs
        of every replica except those of the same (tenant, session). Two reservations never
        both pass a cap that only one fits under.

        Returns:
            None when added; else the scope whose cap is reached (nothing was added).
        """
        ...

    async def started(self, run_id: str, endpoint: str, webdriver_session: str) -> None:
        """Record where the run's browser runs."""
        ...

    async def close(self, webdriver_session: str, *, at: float, reason: ClosedReason) -> int:
        """Close the open runs of this WebDriver session; how many."""
        ...

    async def close_run(self, run_id: str, *, at: float, reason: ClosedReason) -> bool:
        """Close one open run; whether it was open."""
        ...

    async def open_runs(self) -> list[Run]:
        """Every open run of every tenant, oldest first."""
        ...

    async def list(self, tenant: str | None, *, open_only: bool, limit: int) -> list[Run]:
        """Runs of ``tenant`` (every tenant when None), newest first, at most ``limit``."""
        ...
