"""sitekeep's sessions as MCP resources (SPEC §5): each session's current page, the
sign-in state of each of its sites (SPEC §18), its saved site data by host (counts only)
and each host in full (httpOnly values as •••), as JSON.

The resource templates name the URIs; :func:`readable` lists the resources a caller can
read now, for ``resources/list``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mcp.types import Resource

from sitekeep.mcp.calls import JSON, Ctx, backing, guarded
from sitekeep.model import Principal
from sitekeep.service import Service

__all__ = ["TEMPLATES", "Template", "readable"]


@dataclass(frozen=True, slots=True)
class Template:
    """One resource template: its function (errors guarded) and what
    ``resources/templates/list`` says of it."""

    fn: Callable[..., Awaitable[str]]
    uri: str
    name: str
    description: str


def _dump(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False)


async def current(key: str, ctx: Ctx) -> str:
    found, who = backing(ctx)
    return _dump(await found.service.views.current(who, key))


async def sign_in(key: str, ctx: Ctx) -> str:
    found, who = backing(ctx)
    return _dump(await found.service.views.sign_in(who, key))


async def site_data(key: str, ctx: Ctx) -> str:
    found, who = backing(ctx)
    return _dump(await found.service.views.site_data(who, key))


async def site_data_host(key: str, site: str, ctx: Ctx) -> str:
    found, who = backing(ctx)
    return _dump(await found.service.views.site_data_host(who, key, site))


TEMPLATES = (
    Template(
        guarded(resource=True)(current),
        "sitekeep://sessions/{key}/current",
        "current-page",
        "The session's current page and a summary of its saved site data.",
    ),
    Template(
        guarded(resource=True)(sign_in),
        "sitekeep://sessions/{key}/sign-in",
        "sign-in",
        "Whether each site of the session is signed in: {key, autosave, sign_in: {host: "
        "{state: signed_in|signed_out|unknown, evidence, at}}}; evidence names cookies, "
        "never values.",
    ),
    Template(
        guarded(resource=True)(site_data),
        "sitekeep://sessions/{key}/site-data",
        "site-data",
        "The session's saved site data by host: counts only, never values.",
    ),
    Template(
        guarded(resource=True)(site_data_host),
        "sitekeep://sessions/{key}/site-data/{site}",
        "site-data-host",
        "One host's saved cookies and storage in full; httpOnly values as •••.",
    ),
)


async def readable(service: Service, who: Principal) -> list[Resource]:
    """The resources of each of ``who``'s tenant's sessions (URIs of :data:`TEMPLATES`)."""
    found = []
    for row in await service.views.sessions(who):
        key = row["key"]
        base = f"sitekeep://sessions/{key}"
        found.append(_json_resource(f"{base}/current", f"{key}: current page"))
        found.append(_json_resource(f"{base}/sign-in", f"{key}: sign-in state by site"))
        data = await service.views.site_data(who, key)
        found.append(_json_resource(f"{base}/site-data", f"{key}: site data by host"))
        for host in data["hosts"]:
            found.append(_json_resource(host["uri"], f"{key}: {host['site']}"))
    return found


def _json_resource(uri: str, name: str) -> Resource:
    return Resource(uri=uri, name=name, mime_type="application/json")
