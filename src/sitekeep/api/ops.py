"""HTTP routes for operators: ``/healthz``, ``/`` and ``/metrics`` (SPEC §13).

``/healthz`` and ``/`` need no token; ``/metrics`` needs the scrape token
(``SITEKEEP_METRICS_TOKEN``), not an API token.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from sitekeep.api.deps import JSON, Svc
from sitekeep.version import __version__

__all__ = ["router"]

_SCRAPE_ERRORS = {
    401: "No scrape token (SITEKEEP_METRICS_TOKEN) is set, or the header does not carry it.",
    503: "A store cannot be reached.",
}


def _error_response(why: str) -> dict[str, Any]:
    """An OpenAPI response of the one error shape (``api.openapi``'s ``Error``)."""
    schema = {"$ref": "#/components/schemas/Error"}
    return {"description": why, "content": {"application/json": {"schema": schema}}}


router = APIRouter(tags=["ops"])


@router.get("/healthz")
async def healthz() -> JSON:
    return {"ok": True, "version": __version__}


@router.get("/")
async def root() -> JSON:
    """The service's name and version, and where to go from here (no token needed)."""
    return {
        "name": "sitekeep",
        "version": __version__,
        "links": {
            "openapi": "/openapi.json",
            "docs": "/docs",
            "health": "/healthz",
            "metrics": "/metrics",
            "sessions": "/v1/sessions",
            "mcp": "/mcp",
            "admin": "/admin",
        },
    }


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={status: _error_response(why) for status, why in _SCRAPE_ERRORS.items()},
)
async def metrics(request: Request, svc: Svc) -> Response:
    """Prometheus text format, counts only (never a key or value) but of every tenant:
    it needs ``Authorization: Bearer <SITEKEEP_METRICS_TOKEN>`` (the scrape token, not
    an API token), and is closed (401) while that setting is unset."""
    authorization = request.headers.get("authorization")
    text, media = await svc.reaper.metrics_text(authorization)
    return Response(text, media_type=media)
