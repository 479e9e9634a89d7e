"""HTTP routes of the secrets catalogue: ``/v1/secrets`` (SPEC §7).

Values are write-only: a PUT takes them, no response ever carries one. Writes (PUT, DELETE)
need an ``admin`` token; reads are for any member of the tenant. Every route calls the
service (its vault); errors are ``SitekeepError``s, mapped by the app's one table
(``api.errors``).

Routes (each answers ``{name, description, hosts, keys, updated_at}`` per secret)::

    PUT    /v1/secrets/{name}   {description?, hosts: [pattern], values: {key: value}}  admin
    GET    /v1/secrets          -> {secrets: [...]}, sorted by name
    GET    /v1/secrets/{name}   -> one secret
    DELETE /v1/secrets/{name}   -> {name, deleted: true}                              admin
"""

from __future__ import annotations

from typing import Protocol

from fastapi import APIRouter

from sitekeep.api.deps import JSON, Admin, Name, Svc, Who
from sitekeep.args import SecretBody

__all__ = ["router"]


class _Info(Protocol):
    """A secret's info (``sitekeep.secrets.SecretInfo``): never a value."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def hosts(self) -> tuple[str, ...]: ...

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def updated_at(self) -> float: ...


def _json(info: _Info) -> JSON:
    return {
        "name": info.name,
        "description": info.description,
        "hosts": list(info.hosts),
        "keys": list(info.keys),
        "updated_at": info.updated_at,
    }


router = APIRouter(prefix="/v1/secrets", tags=["secrets"])


@router.put("/{name}")
async def put_secret(name: Name, body: SecretBody, who: Admin, svc: Svc) -> JSON:
    """Create or replace a secret (admin). Answers its info, never its values."""
    return _json(await svc.catalogue.put_secret(who, name, body))


@router.get("")
async def list_secrets(who: Who, svc: Svc) -> JSON:
    """The tenant's secrets: names, descriptions, hosts, key names — never values."""
    return {"secrets": [_json(info) for info in await svc.catalogue.secrets(who)]}


@router.get("/{name}")
async def get_secret(name: Name, who: Who, svc: Svc) -> JSON:
    """One secret's info; 404 when the tenant has none of that name."""
    return _json(await svc.catalogue.secret(who, name))


@router.delete("/{name}")
async def delete_secret(name: Name, who: Admin, svc: Svc) -> JSON:
    """Delete a secret (admin); 404 when the tenant has none of that name."""
    return await svc.catalogue.delete_secret(who, name)
