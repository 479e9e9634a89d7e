"""The HTTP API's request dependencies (FastAPI's "Bigger Applications" layout): the
service, who calls, the admin gate, and the bounded path parameters the routers share.

Every router (``api/*.py``) and the admin UI (``sitekeep.api.ui``) import them from here;
:mod:`sitekeep.api.app` imports the routers, and nothing imports it back.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Request

from sitekeep.args import KEY_PATTERN, MAX_KEY, MAX_NAME, MAX_SITE
from sitekeep.model import Principal
from sitekeep.service import Service, require_admin

__all__ = [
    "JSON",
    "KEY_PATTERN",
    "Admin",
    "Ident",
    "Key",
    "Name",
    "Site",
    "Svc",
    "Who",
    "get_admin",
    "get_principal",
    "get_service",
    "service_of",
]

JSON = dict[str, Any]
"""A route's JSON answer, as the service returns it."""

Key = Annotated[
    str, Path(description="The session's key.", pattern=KEY_PATTERN, max_length=MAX_KEY)
]
Name = Annotated[str, Path(description="A name in the tenant's catalogue.", max_length=MAX_NAME)]
Site = Annotated[str, Path(description="A host or origin.", max_length=MAX_SITE)]
Ident = Annotated[
    str,
    Path(
        description="An id sitekeep made (a profile's, a live session's, a token's).",
        max_length=MAX_NAME,
    ),
]


def service_of(request: Request) -> Service:
    """The service the app opened in its lifespan (``app.state.service``)."""
    service: Service = request.app.state.service
    return service


async def get_service(request: Request) -> Service:
    """:data:`Svc`'s dependency."""
    # async: FastAPI runs a plain def dependency in a worker thread, a hop per request.
    return service_of(request)


async def get_principal(request: Request) -> Principal:
    """:data:`Who`'s dependency: the caller of ``Authorization: Bearer <token>``.

    Raises:
        Unauthorized: no token, or an unknown one. StoreUnavailable: the token store.
    """
    # The service parses the header. No HTTPBearer sub-dependency: it parsed the header
    # a second time and was a tenth of a read's FastAPI cost; the OpenAPI document names
    # the scheme all the same (api.openapi).
    return await service_of(request).catalogue.authenticate(request.headers.get("authorization"))


Who = Annotated[Principal, Depends(get_principal)]
Svc = Annotated[Service, Depends(get_service)]


async def get_admin(request: Request, who: Who) -> Principal:
    """:data:`Admin`'s dependency: the caller, who must hold the admin role.

    Raises:
        Forbidden: a member's token.
    """
    # A dependency, so a member is refused before its body or query is even read.
    return require_admin(who, f"{request.method} {request.url.path}")


Admin = Annotated[Principal, Depends(get_admin)]
