"""One table from sitekeep's exceptions to HTTP responses (SPEC §5 error shape).

Every error body is ``{"error": {"type", "message", "field"?, ...}}``; ``type`` is the
exception's ``type_name``. Request validation errors name the offending field. Starlette's
own errors (an unknown route, a method the route does not take, a body FastAPI could not
parse) are translated here too, so no response of the server has another shape; a 405
carries ``Allow`` with every method of every route at that path (RFC 9110 §15.5.6).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Route

from sitekeep.api.routes import flat_routes
from sitekeep.client_json import field_path
from sitekeep.errors import (
    BodyTooLarge,
    BrowserUnavailable,
    CapacityExceeded,
    Conflict,
    Forbidden,
    InvalidInput,
    MethodNotAllowed,
    NavigationFailed,
    NotFound,
    SitekeepError,
    StoreUnavailable,
    Unauthorized,
    Unreachable,
    error_json,
)

__all__ = ["STATUS", "error_response", "install_error_handlers", "status_of"]

log = logging.getLogger(__name__)

STATUS: dict[type[SitekeepError], int] = {
    InvalidInput: 400,
    BodyTooLarge: 413,
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    MethodNotAllowed: 405,
    Conflict: 409,
    CapacityExceeded: 429,
    NavigationFailed: 502,
    StoreUnavailable: 503,
    BrowserUnavailable: 503,
    Unreachable: 503,
}


def status_of(exc: SitekeepError) -> int:
    """The HTTP status of a sitekeep error: its class's, or its nearest base's."""
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def _count(request: Request, type_name: str) -> None:
    """One more ``sitekeep_errors_total{type}`` (``sitekeep.metrics``)."""
    service = getattr(request.app.state, "service", None)
    reaper = getattr(service, "reaper", None)
    if reaper is not None:
        reaper.count_error(type_name)


def error_response(exc: SitekeepError) -> JSONResponse:
    """The HTTP response of a sitekeep error: its status, ``{"error": {...}}``, and the
    headers its status calls for (``WWW-Authenticate`` on 401, ``Allow`` on 405)."""
    status = status_of(exc)
    if status >= 500:
        log.warning("%s: %s", type(exc).__name__, exc.message)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if isinstance(exc, MethodNotAllowed):
        headers = {"Allow": ", ".join(exc.allow)}
    return JSONResponse({"error": error_json(exc)}, status_code=status, headers=headers)


async def _sitekeep_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SitekeepError)
    _count(request, exc.type_name)
    return error_response(exc)


def _allowed(routes: list[BaseRoute], path: str) -> tuple[str, ...]:
    """Every method of every route whose path matches ``path`` (Starlette's own 405
    names only the first such route's)."""
    methods: set[str] = set()
    for route in flat_routes(routes):
        if isinstance(route, Route) and route.methods and route.path_regex.match(path):
            methods |= route.methods
    return tuple(sorted(methods))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    path = request.url.path
    error: SitekeepError
    if exc.status_code == 404:
        error = NotFound("route", f"{request.method} {path}")
    elif exc.status_code == 405:
        allow = _allowed(request.app.router.routes, path)
        error = MethodNotAllowed(request.method, path, allow)
    elif exc.status_code == 400:  # FastAPI: a body it could not decode (too deep, bad bytes)
        error = InvalidInput("the request body could not be parsed", field="body")
    else:
        body = {"type": "http_error", "message": str(exc.detail)}
        return JSONResponse({"error": body}, exc.status_code, headers=exc.headers)
    return error_response(error)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    _count(request, InvalidInput.type_name)
    first = exc.errors()[0] if exc.errors() else {}
    if first.get("type") == "json_invalid":
        where = first.get("ctx", {}).get("error", "")
        message = f"the request body is not valid JSON ({where})" if where else "not valid JSON"
        return error_response(InvalidInput(message, field="body"))
    loc = tuple(p for p in first.get("loc", ()) if p not in ("body", "query", "path"))
    whole_body = tuple(first.get("loc", ()))[:1] == ("body",)
    field = field_path(loc, "body") if loc else ("body" if whole_body else None)
    text = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    message = f"{field}: {text}" if field else f"the request body is invalid: {text}"
    error: dict[str, Any] = {"type": InvalidInput.type_name, "message": message}
    if field:
        error["field"] = field
    return JSONResponse({"error": error}, status_code=400)


def install_error_handlers(app: FastAPI) -> None:
    """Map every ``SitekeepError`` and request validation error to the SPEC §5 shape."""
    app.add_exception_handler(SitekeepError, _sitekeep_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
