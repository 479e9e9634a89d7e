"""The OpenAPI document: every status a route answers, each with the one error shape
(SPEC §5; issue #8 item 10).

FastAPI documents 200 and a 422 that sitekeep never sends (its validation errors are
400s). Here the 422 goes, and each operation lists the statuses it can answer, read from
what the route is: any authenticated route can answer 401 and 503 (a store down); 400
when it takes parameters or a body; 413 when it takes a body; 403 behind the admin gate,
when it drives the browser (a secret's host, the server's own address) or hands a
session's values out (its owner's or an admin's only); 404 and 409
when it names a resource; 429 and 502 when it may start or navigate a browser.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from sitekeep.api.routes import flat_routes

__all__ = ["BEARER", "ERROR_SCHEMA", "install_openapi", "statuses_of"]

BEARER = "HTTPBearer"
"""The OpenAPI name of the ``Authorization: Bearer <token>`` scheme."""

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {
        "error": {
            "type": "object",
            "required": ["type", "message"],
            "properties": {
                "type": {"type": "string", "description": "what went wrong, to branch on"},
                "message": {"type": "string", "description": "a sentence a person can act on"},
                "field": {"type": "string", "description": "the field to blame, dotted"},
            },
            "additionalProperties": True,
        }
    },
}
"""``{"error": {type, message, field?, ...}}``: further members are the error's own
structured fields (``code``, ``reason``, ``scope``, ``cap``, ``allow``…)."""

_WHY = {
    400: "Bad input; the field is named. Nothing was changed.",
    401: "No bearer token, or an unknown one.",
    403: "The token's role may not do this, or the target is refused to agents.",
    404: "No such session, secret, site or route in the caller's tenant.",
    409: "The session is busy or in a state that forbids the call.",
    413: "The request body is over its byte limit.",
    429: "A cap on live browsers is reached.",
    502: "The page could not be loaded.",
    503: "A store or the browser could not be reached; nothing was half-done.",
}


_DRIVING = ("/v1/sessions", "/v1/live-sessions")
"""Paths whose POSTs may start, reopen or navigate a browser (a profile's ``/capture``
reads a session's browser too, and its ``/check`` starts a throwaway one)."""


_OWNERS_ONLY = (
    "/storage-state",
    "/webdriver",
    "/site-data/{site}",
    "/versions/{version}/hosts/{site}",
    "/versions/{version}/restore",
)
"""A session's routes that hand its values out or replace them: its owner's or an
admin's only (``service.gates.values_gate``); a profile version's: its managers'."""

_OWNED = ("/v1/sessions/{key}/", "/v1/profiles/{ident}/versions/")
"""Where :data:`_OWNERS_ONLY` routes are."""

_STORED_ONLY = ("/versions/{version}/restore",)
"""POSTs under :data:`_DRIVING` that change only what is stored, never a browser."""


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def statuses_of(
    route: APIRoute, method: str, *, auth: Callable[..., Any], admin: Callable[..., Any]
) -> set[int]:
    """The error statuses ``method`` on ``route`` can answer (see the module docstring)."""
    calls = set(_calls(route.dependant))
    if auth not in calls:
        return set()
    statuses = {401, 503}
    has_body = route.body_field is not None or "requestBody" in (route.openapi_extra or {})
    params = route.dependant.path_params or route.dependant.query_params
    if params or has_body:
        statuses.add(400)
    if has_body:
        statuses.add(413)
    path = route.path_format
    drives = (
        method == "POST"
        and (path.startswith(_DRIVING) or path.endswith(("/capture", "/check")))
        and not path.endswith(_STORED_ONLY)
    )
    owners = path.startswith(_OWNED) and path.endswith(_OWNERS_ONLY)
    if admin in calls or drives or owners:
        statuses.add(403)
    if route.dependant.path_params or drives:
        statuses |= {404, 409}
    if drives:
        statuses |= {429, 502}
    return statuses


def install_openapi(app: FastAPI, *, auth: Callable[..., Any], admin: Callable[..., Any]) -> None:
    """Make ``app.openapi()`` list every error status per operation, without 422.

    Args:
        auth: the dependency that authenticates the bearer token.
        admin: the dependency that lets only admin tokens through.
    """

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, routes=app.routes, description=app.description
        )
        # The bearer scheme, named as FastAPI's HTTPBearer names it, on every operation
        # behind the token (the dependency parses the header itself).
        schema.setdefault("components", {})["securitySchemes"] = {
            BEARER: {"type": "http", "scheme": "bearer"}
        }
        components = schema["components"].setdefault("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        components["Error"] = ERROR_SCHEMA
        error = {
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        }
        for route in flat_routes(app.routes):
            if not isinstance(route, APIRoute) or not route.include_in_schema:
                continue
            for method in route.methods or ():
                operation = schema["paths"].get(route.path_format, {}).get(method.lower())
                if operation is None:
                    continue
                responses = operation.setdefault("responses", {})
                responses.pop("422", None)
                statuses = statuses_of(route, method, auth=auth, admin=admin)
                for status in sorted(statuses):
                    responses[str(status)] = {"description": _WHY[status], **error}
                if 401 in statuses:  # behind the token
                    operation["security"] = [{BEARER: []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
