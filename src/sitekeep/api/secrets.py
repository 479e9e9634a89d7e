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

from typing import Annotated

from fastapi import APIRouter
from pydantic import Field

from sitekeep.api.body import StrictBody
from sitekeep.api.deps import JSON, Admin, Name, Svc, Who
from sitekeep.limits import MAX_DESCRIPTION, MAX_HOSTS, MAX_SECRET_KEYS, MAX_SITE, MAX_TEXT
from sitekeep.secrets import SecretInfo

__all__ = ["SecretBody", "router"]


class SecretBody(StrictBody):
    """The body of ``PUT /v1/secrets/{name}``; the rules are checked by the service."""

    description: str = Field(default="", max_length=MAX_DESCRIPTION)
    hosts: list[Annotated[str, Field(max_length=MAX_SITE)]] = Field(max_length=MAX_HOSTS)
    # Each value's type is checked by the service (secrets.check_values), not here: a
    # validation error names its field by the key, and a key that is no key name may be a
    # value pasted in the wrong place — the service's message names only ``values``.
    values: dict[str, object] = Field(
        json_schema_extra={
            "additionalProperties": {"type": "string", "maxLength": MAX_TEXT},
            "maxProperties": MAX_SECRET_KEYS,
        }
    )


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
async def put_secret(name: Name, body: SecretBody, who: Admin, svc: Svc) -> JSON:
    """Create or replace a secret (admin). Answers its info, never its values."""
    return _json(await svc.put_secret(who, name, body.description, body.hosts, body.values))


@router.get("")
async def list_secrets(who: Who, svc: Svc) -> JSON:
    """The tenant's secrets: names, descriptions, hosts, key names — never values."""
    return {"secrets": [_json(info) for info in await svc.list_secrets(who)]}


@router.get("/{name}")
async def get_secret(name: Name, who: Who, svc: Svc) -> JSON:
    """One secret's info; 404 when the tenant has none of that name."""
    return _json(await svc.get_secret(who, name))


@router.delete("/{name}")
async def delete_secret(name: Name, who: Admin, svc: Svc) -> JSON:
    """Delete a secret (admin); 404 when the tenant has none of that name."""
    await svc.delete_secret(who, name)
    return {"name": name, "deleted": True}
