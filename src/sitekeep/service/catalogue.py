"""The tenant's catalogue: bearer tokens, secrets and proxies (SPEC §1, §7, §14, §11).

One door per use case, for every facade (HTTP, the admin UI, the CLI), and every change
behind the one admin gate (``gates.require_admin``): creating, replacing or deleting a
secret or a proxy, listing or revoking tokens. A member may list the tenant's secrets
and proxies — names, hosts, key names, never a value. The operator (the CLI, ``who``
None) works on every tenant's tokens; a token is shown once, when it is made, and stored
as its SHA-256.
"""

from __future__ import annotations

from typing import Any

from sitekeep.args import ProxyBody, SecretBody
from sitekeep.auth import TokenInfo
from sitekeep.errors import NotFound
from sitekeep.model import Principal, Role
from sitekeep.proxies import proxy_json
from sitekeep.secrets import SecretInfo
from sitekeep.service.gates import require_admin
from sitekeep.service.parts import Parts

__all__ = ["Catalogue"]


class Catalogue:
    """Tokens, secrets and proxies of the tenants (SPEC §1, §7, §14)."""

    def __init__(self, parts: Parts) -> None:
        self._auth = parts.auth
        self._vault = parts.vault
        self._proxies = parts.proxies
        self._sign_ins = parts.sign_ins

    # -- tokens ---------------------------------------------------------------------------

    async def authenticate(self, authorization: str | None) -> Principal:
        """Who an ``Authorization: Bearer <token>`` header value stands for (the one
        parser of it, for HTTP, MCP over HTTP and the CLI).

        Raises:
            Unauthorized: no bearer token, or an unknown one.
            StoreUnavailable: the token database cannot be reached.
        """
        return await self._auth.principal(authorization)

    async def create_token(self, tenant: str, subject: str, role: Role) -> str:
        """A new bearer token (shown this once; stored as its SHA-256) — the operator's
        (``sitekeep token create``).

        Raises:
            InvalidInput: a tenant or subject outside ``[A-Za-z0-9-_.@]``, 1–128 chars.
        """
        return await self._auth.create(tenant, subject, role)

    async def tokens(self, who: Principal | None, tenant: str | None = None) -> list[TokenInfo]:
        """The tokens of ``who``'s tenant (admin), or for the operator (``who`` None) of
        ``tenant`` (every tenant's when None), oldest first: ids, whom they stand for and
        when made — never a token.

        Raises:
            Forbidden: a member's token. StoreUnavailable: the database is out of reach.
        """
        if who is not None:
            tenant = require_admin(who, "managing tokens").tenant
        return await self._auth.list(tenant)

    async def revoke_token(
        self, who: Principal | None, id_: str, tenant: str | None = None
    ) -> TokenInfo:
        """Revoke a token by id — of ``who``'s tenant (admin), or for the operator
        (``who`` None) within ``tenant`` when given: it stops authenticating and the
        admin UI sign-ins made with it end.

        Raises:
            Forbidden: a member's token. InvalidInput: a malformed id (field ``id``).
            NotFound: no such token. StoreUnavailable: the database is out of reach.
        """
        if who is not None:
            tenant = require_admin(who, "managing tokens").tenant
        info = await self._auth.revoke(id_, tenant)
        await self._sign_ins.end_made_with(info.id)
        return info

    # -- secrets (SPEC §7) ----------------------------------------------------------------

    async def put_secret(self, who: Principal, name: str, body: SecretBody) -> SecretInfo:
        """Create or replace a secret of the caller's tenant (admin): its values are
        written, never shown again.

        Raises:
            Forbidden: a member's token. InvalidInput: naming the field; nothing changed.
        """
        require_admin(who, "managing secrets")
        return await self._vault.put(who.tenant, name, body.description, body.hosts, body.values)

    async def secrets(self, who: Principal) -> list[SecretInfo]:
        """The tenant's secrets, sorted by name — never a value."""
        return await self._vault.list(who.tenant)

    async def secret(self, who: Principal, name: str) -> SecretInfo:
        """One secret's info. Raises: NotFound (field ``name``)."""
        return await self._vault.get_info(who.tenant, name, name_field="name")

    async def delete_secret(self, who: Principal, name: str) -> dict[str, Any]:
        """Delete a secret (admin).

        Returns:
            ``{name, deleted: true}``.

        Raises:
            Forbidden: a member's token. NotFound: the tenant has none of that name.
        """
        require_admin(who, "managing secrets")
        if not await self._vault.delete(who.tenant, name):
            raise NotFound("secret", name, field="name")
        return {"name": name, "deleted": True}

    # -- proxies (SPEC §14) ---------------------------------------------------------------

    async def put_proxy(self, who: Principal, name: str, body: ProxyBody) -> dict[str, Any]:
        """Create or replace a proxy of the caller's tenant (admin); its credentials are
        a secret's name, never a value.

        Raises:
            Forbidden: a member's token. InvalidInput: a bad field, named; nothing stored.
        """
        require_admin(who, "managing proxies")
        row = await self._proxies.put(who.tenant, name, body.country, body.url, body.auth_secret)
        return proxy_json(row)

    async def proxies(self, who: Principal) -> dict[str, Any]:
        """``{proxies: [...], countries: [...]}`` of the caller's tenant."""
        rows = await self._proxies.list(who.tenant)
        countries = sorted({r.country for r in rows})
        return {"proxies": [proxy_json(r) for r in rows], "countries": countries}

    async def proxy(self, who: Principal, name: str) -> dict[str, Any]:
        """One proxy. Raises: NotFound."""
        return proxy_json(await self._proxies.get(who.tenant, name))

    async def delete_proxy(self, who: Principal, name: str) -> dict[str, Any]:
        """Delete a proxy (admin).

        Returns:
            ``{name, deleted: true}``.

        Raises:
            Forbidden: a member's token. NotFound: the pool has none of that name.
        """
        require_admin(who, "managing proxies")
        await self._proxies.delete(who.tenant, name)
        return {"name": name, "deleted": True}
