"""HTTP routes of the secrets catalogue: ``/v1/secrets`` (SPEC §7).

Values are write-only: a PUT takes them, no response ever carries one. Writes (PUT, DELETE)
need an ``admin`` token; reads are for any member of the tenant. The store is
``app.state.secrets`` (a :class:`~sitekeep.stores.secrets.SecretStore` opened in the app's
lifespan); errors are ``SitekeepError``s, mapped by the app's one table (``api.errors``).

Routes (each answers ``{name, description, hosts, keys, updated_at}`` per secret)::

    PUT    /v1/secrets/{name}   {description?, hosts: [pattern], values: {key: value}}  admin
    GET    /v1/secrets          -> {secrets: [...]}, sorted by name
    GET    /v1/secrets/{name}   -> one secret
    DELETE /v1/secrets/{name}   -> {name, deleted: true}                              admin
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict

from sitekeep.api.app import Who
from sitekeep.errors import Forbidden, NotFound, StoreUnavailable
from sitekeep.model import Principal
from sitekeep.secrets import SecretInfo
from sitekeep.stores.secrets import SecretStore

__all__ = ["SecretBody", "router"]

JSON = dict[str, Any]


class SecretBody(BaseModel):
    """The body of ``PUT /v1/secrets/{name}``; the rules are checked by the store."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    hosts: list[str]
    values: dict[str, str]


def _store(request: Request) -> SecretStore:
    store: SecretStore | None = getattr(request.app.state, "secrets", None)
    if store is None:
        raise StoreUnavailable("the secrets catalogue is not open in this server")
    return store


Store = Annotated[SecretStore, Depends(_store)]


def _admin(who: Who) -> Principal:
    # A dependency, so a member is refused before its body is even read.
    if who.role != "admin":
        raise Forbidden("managing secrets needs an admin token (sitekeep token create --admin)")
    return who


Admin = Annotated[Principal, Depends(_admin)]


def _json(info: SecretInfo) -> JSON:
    return {
        "name": info.name,
        "description": info.description,
        "hosts": list(info.hosts),
        "keys": list(info.keys),
        "updated_at": info.updated_at,
    }


router = APIRouter(prefix="/v1/secrets", tags=["secrets"])


@router.put("/{name}")
async def put_secret(name: str, body: SecretBody, who: Admin, store: Store) -> JSON:
    """Create or replace a secret (admin). Answers its info, never its values."""
    return _json(await store.put(who.tenant, name, body.description, body.hosts, body.values))


@router.get("")
async def list_secrets(who: Who, store: Store) -> JSON:
    """The tenant's secrets: names, descriptions, hosts, key names — never values."""
    return {"secrets": [_json(info) for info in await store.list(who.tenant)]}


@router.get("/{name}")
async def get_secret(name: str, who: Who, store: Store) -> JSON:
    """One secret's info; 404 when the tenant has none of that name."""
    return _json(await store.get_info(who.tenant, name))


@router.delete("/{name}")
async def delete_secret(name: str, who: Admin, store: Store) -> JSON:
    """Delete a secret (admin); 404 when the tenant has none of that name."""
    if not await store.delete(who.tenant, name):
        raise NotFound("secret", name)
    return {"name": name, "deleted": True}
