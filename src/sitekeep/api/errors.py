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
    BidiError,
    BrowserUnavailable,
    CapacityExceeded,
    Conflict,
    Forbidden,
    InvalidInput,
    NavigationFailed,
    NotFound,
    SitekeepError,
    SnapshotTooLarge,
    StoreUnavailable,
    Unauthorized,
)

__all__ = ["STATUS", "install_error_handlers"]

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
}


def _status(exc: SitekeepError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def _body(exc: SitekeepError) -> dict[str, Any]:
    error: dict[str, Any] = {"type": exc.type_name, "message": exc.message}
    if isinstance(exc, InvalidInput) and exc.field is not None:
        error["field"] = exc.field
    if isinstance(exc, SnapshotTooLarge):
        error.update(size=exc.size, cap=exc.cap)
    if isinstance(exc, CapacityExceeded):
        error["scope"] = exc.scope
    if isinstance(exc, BidiError):
        error["code"] = exc.code
    if isinstance(exc, NavigationFailed):
        error["reason"] = exc.reason
    return {"error": error}


async def _sitekeep_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SitekeepError)
    status = _status(exc)
    if status >= 500:
        log.warning("%s: %s", type(exc).__name__, exc.message)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(_body(exc), status_code=status, headers=headers)


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
    field = ".".join(loc) or None
    message = f"{field}: {first.get('msg', 'invalid')}" if field else "the request body is invalid"
    error: dict[str, Any] = {"type": InvalidInput.type_name, "message": message}
    if field:
        error["field"] = field
    return JSONResponse({"error": error}, status_code=400)


def install_error_handlers(app: FastAPI) -> None:
    """Map every ``SitekeepError`` and request validation error to the SPEC §5 shape."""
    app.add_exception_handler(SitekeepError, _sitekeep_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
