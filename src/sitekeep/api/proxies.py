"""HTTP routes of the tenant's proxy pool: ``/v1/proxies`` (SPEC §14).

Writes (PUT, DELETE) need an ``admin`` token; members list and read. A proxy's URL never
holds credentials: ``auth_secret`` names the secret (SPEC §7) whose ``username`` and
``password`` the browser answers the proxy with, over BiDi.

Routes::

    PUT    /v1/proxies/{name}   {country, url, auth_secret?}  -> proxy             admin
    GET    /v1/proxies          -> {proxies: [...], countries: [...]}
    GET    /v1/proxies/{name}   -> proxy
    DELETE /v1/proxies/{name}   -> {name, deleted: true}                           admin
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field

from sitekeep.api.body import StrictBody
from sitekeep.api.deps import JSON, Admin, Name, Svc, Who
from sitekeep.limits import MAX_NAME, MAX_URL

__all__ = ["ProxyBody", "router"]


class ProxyBody(StrictBody):
    """The body of ``PUT /v1/proxies/{name}``; the rules are checked by the service."""

    country: str = Field(max_length=MAX_NAME)
    url: str = Field(max_length=MAX_URL)
    auth_secret: str | None = Field(default=None, max_length=MAX_NAME)


router = APIRouter(prefix="/v1/proxies", tags=["proxies"])


@router.put("/{name}")
async def put_proxy(name: Name, body: ProxyBody, who: Admin, svc: Svc) -> JSON:
    """Create or replace a proxy of the pool (admin)."""
    return await svc.put_proxy(who, name, body.country, body.url, body.auth_secret)


@router.get("")
async def list_proxies(who: Who, svc: Svc) -> JSON:
    """The tenant's proxies and the countries they cover."""
    return await svc.list_proxies(who)


@router.get("/{name}")
async def get_proxy(name: Name, who: Who, svc: Svc) -> JSON:
    """One proxy; 404 when the pool has none of that name."""
    return await svc.get_proxy(who, name)


@router.delete("/{name}")
async def delete_proxy(name: Name, who: Admin, svc: Svc) -> JSON:
    """Delete a proxy (admin); 404 when the pool has none of that name."""
    await svc.delete_proxy(who, name)
    return {"name": name, "deleted": True}
