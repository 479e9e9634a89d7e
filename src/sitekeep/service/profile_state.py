"""A profile's sign-in state per site and its checks, beside the profile (SPEC §18).

Kept in the session store under ``profile-state/{tenant}/{id}`` — hosts, states, cookie
*names* and check definitions, never a value — so a list of profiles shows each one's
sign-in state without opening its sealed site data. It goes with the profile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import TypeAdapter, ValidationError

from sitekeep.errors import StoreUnavailable
from sitekeep.model import SignIn, SignInCheck, SiteData
from sitekeep.signin import states_json
from sitekeep.stores import SessionStore

__all__ = ["ProfileState", "ProfileStates"]


@dataclass(frozen=True, slots=True)
class ProfileState:
    """A profile's sign-in state per site (as its capture or a check run judged it) and
    its checks, by host."""

    sign_in: Mapping[str, SignIn] = field(default_factory=dict)
    checks: Mapping[str, SignInCheck] = field(default_factory=dict)

    def sign_in_json(self) -> dict[str, Any]:
        """``{host: {state, evidence, at}}``, a check not run yet as ``unknown``."""
        return states_json(self.sign_in, tuple(self.checks))


_STATE_JSON: TypeAdapter[ProfileState] = TypeAdapter(ProfileState)


def _state_key(tenant: str, ident: str) -> str:
    return f"profile-state/{tenant}/{ident}"


@dataclass(frozen=True, slots=True)
class ProfileStates:
    """Each profile's :class:`ProfileState` in the session store (no expiry: it goes with
    the profile, :meth:`delete`)."""

    store: SessionStore

    async def get(self, tenant: str, ident: str) -> ProfileState:
        return _state_of(await self.store.get(_state_key(tenant, ident)))

    async def get_many(self, tenant: str, idents: Sequence[str]) -> list[ProfileState]:
        """:meth:`get` of each, in one store round trip."""
        found = await self.store.read_many([_state_key(tenant, i) for i in idents])
        return [_state_of(f.value if f else None) for f in found]

    async def put(self, tenant: str, ident: str, state: ProfileState) -> None:
        await self.store.set(_state_key(tenant, ident), _STATE_JSON.dump_json(state))

    async def judged(self, tenant: str, ident: str, data: SiteData) -> None:
        """The profile's site data was replaced by ``data``: its sign-in state is
        ``data``'s (its checks stay)."""
        state = await self.get(tenant, ident)
        await self.put(tenant, ident, replace(state, sign_in=dict(data.sign_in)))

    async def delete(self, tenant: str, ident: str) -> None:
        await self.store.delete(_state_key(tenant, ident))


def _state_of(raw: bytes | None) -> ProfileState:
    if raw is None:
        return ProfileState()
    try:
        return _STATE_JSON.validate_json(raw)
    except ValidationError as exc:
        raise StoreUnavailable("a profile's sign-in state is stored in an unreadable form") from exc
