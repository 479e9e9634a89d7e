"""One table from sitekeep's exceptions to HTTP responses (SPEC §5 error shape).

Every error body is ``{"error": {"type", "message", "field"?, ...}}``; ``type`` is the
exception's ``type_name``. Request validation errors name the offending field.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from sitekeep.errors import (
    BrowserUnavailable,
    CapacityExceeded,
    Conflict,
    Forbidden,
    InvalidInput,
    NavigationFailed,
    NotFound,
    SitekeepError,
    StoreUnavailable,
    Unauthorized,
    Unreachable,
    error_json,
)

__all__ = ["STATUS", "install_error_handlers", "status_of"]

log = logging.getLogger(__name__)

STATUS: dict[type[SitekeepError], int] = {
    InvalidInput: 400,
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
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
    service = getattr(request.app.state, "service", None)
    metrics = getattr(service, "metrics", None)
    if metrics is not None:
        metrics.error(type_name)


async def _sitekeep_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SitekeepError)
    _count(request, exc.type_name)
    status = status_of(exc)
    if status >= 500:
        log.warning("%s: %s", type(exc).__name__, exc.message)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": error_json(exc)}, status_code=status, headers=headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    _count(request, InvalidInput.type_name)
    first = exc.errors()[0] if exc.errors() else {}
    if first.get("type") == "json_invalid":
        where = first.get("ctx", {}).get("error", "")
        message = f"the request body is not valid JSON ({where})" if where else "not valid JSON"
        return JSONResponse({"error": {"type": InvalidInput.type_name, "message": message}}, 400)
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
    field = ".".join(loc) or None
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
