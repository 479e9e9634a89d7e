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

from sitekeep.api.deps import JSON, Admin, Name, Svc, Who
from sitekeep.args import ProxyBody

__all__ = ["router"]


router = APIRouter(prefix="/v1/proxies", tags=["proxies"])


@router.put("/{name}")
async def put_proxy(name: Name, body: ProxyBody, who: Admin, svc: Svc) -> JSON:
    """Create or replace a proxy of the pool (admin)."""
    return await svc.catalogue.put_proxy(who, name, body)


@router.get("")
async def list_proxies(who: Who, svc: Svc) -> JSON:
    """The tenant's proxies and the countries they cover."""
    return await svc.catalogue.proxies(who)


@router.get("/{name}")
async def get_proxy(name: Name, who: Who, svc: Svc) -> JSON:
    """One proxy; 404 when the pool has none of that name."""
    return await svc.catalogue.proxy(who, name)


@router.delete("/{name}")
async def delete_proxy(name: Name, who: Admin, svc: Svc) -> JSON:
    """Delete a proxy (admin); 404 when the pool has none of that name."""
    return await svc.catalogue.delete_proxy(who, name)
