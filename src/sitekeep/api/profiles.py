"""HTTP routes of profiles: ``/v1/profiles`` (SPEC §9, §15).

Every route calls the service; the one gate (``sitekeep.profiles.gate``) decides in the
service, never here. Each profile answers as ``profiles.profile_json``: metadata, its
freshness and ``can_manage`` — never its site data, which only the storage-state export
carries, and only to those who may manage the profile.

Routes::

    POST   /v1/profiles                     {name, visibility?, country?}       -> profile
    GET    /v1/profiles                     -> {profiles: [...], now}
    GET    /v1/profiles/{id}                -> profile (+ sites: per-host counts)
    PATCH  /v1/profiles/{id}                {name?, visibility?, country?}      -> profile
    DELETE /v1/profiles/{id}                -> {id, deleted: true}
    POST   /v1/profiles/{id}/capture        {session, cookies?: [{domain, name}]} -> profile
    PUT    /v1/profiles/{id}/storage-state  storage state JSON or cookies.txt  -> {profile, report}
    GET    /v1/profiles/{id}/storage-state  ?format=storage-state|cookies-txt -> the file
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from sitekeep.api.deps import JSON, Ident, Key, Svc, Who
from sitekeep.args import MAX_NAME, CaptureBody, CreateBody, PatchBody

__all__ = ["router", "sessions_router"]


FormatQuery = Annotated[str, Query(alias="format", max_length=MAX_NAME)]
_FILE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "text/plain": {"schema": {"type": "string"}},
        },
    }
}
"""A storage state JSON or a cookies.txt file, as the body of a PUT …/storage-state."""

router = APIRouter(prefix="/v1/profiles", tags=["profiles"])


@router.post("")
async def create_profile(body: CreateBody, who: Who, svc: Svc) -> JSON:
    """Create an empty profile (private unless ``visibility: workspace``)."""
    return await svc.profiles.create(who, body)


@router.get("")
async def list_profiles(who: Who, svc: Svc) -> JSON:
    """The caller's profiles and the workspace's shared ones, with the server's ``now``."""
    return await svc.profiles.list(who)


@router.get("/{ident}")
async def get_profile(ident: Ident, who: Who, svc: Svc) -> JSON:
    """One profile and its per-host counts (never values); 404 when not visible."""
    return await svc.profiles.get(who, ident)


@router.patch("/{ident}")
async def update_profile(ident: Ident, body: PatchBody, who: Who, svc: Svc) -> JSON:
    """Rename, share (``visibility``) or set the country (creator, or an admin when shared)."""
    return await svc.profiles.update(who, ident, body.model_dump(exclude_unset=True))


@router.delete("/{ident}")
async def delete_profile(ident: Ident, who: Who, svc: Svc) -> JSON:
    """Delete a profile and its site data (creator, or an admin when shared)."""
    return await svc.profiles.delete(who, ident)


@router.post("/{ident}/capture")
async def capture_profile(ident: Ident, body: CaptureBody, who: Who, svc: Svc) -> JSON:
    """Capture the session's site data into the profile; a selection matching nothing is 400."""
    return await svc.profiles.capture(who, ident, body)


@router.put("/{ident}/storage-state", openapi_extra=_FILE_BODY)
async def import_profile_state(
    ident: Ident, request: Request, who: Who, svc: Svc, fmt: FormatQuery | None = None
) -> JSON:
    """Replace the profile's site data with a storage state JSON or cookies.txt body;
    answers the profile and the import report (what was changed or dropped, and why)."""
    return await svc.interop.import_profile_state(who, ident, await request.body(), fmt)


@router.get("/{ident}/storage-state")
async def export_profile_state(
    ident: Ident, who: Who, svc: Svc, fmt: FormatQuery = "storage-state"
) -> Response:
    """The profile's site data as a file (values: only for who may manage it)."""
    data, media = await svc.interop.export_profile_state(who, ident, fmt)
    return Response(data, media_type=media)


sessions_router = APIRouter(prefix="/v1/sessions", tags=["site data"])


@sessions_router.get("/{key}/state-preview")
async def state_preview(key: Key, who: Who, svc: Svc) -> JSON:
    """Per domain, the session's cookie names, expiry, flags and default selection, and
    the server's ``now`` — never a value (SPEC §9)."""
    return await svc.interop.state_preview(who, key)


@sessions_router.put("/{key}/storage-state", openapi_extra=_FILE_BODY)
async def import_session_state(
    key: Key, request: Request, who: Who, svc: Svc, fmt: FormatQuery | None = None
) -> JSON:
    """Replace the session's snapshot with a storage state JSON or cookies.txt body."""
    return await svc.interop.import_session_state(who, key, await request.body(), fmt)


@sessions_router.get("/{key}/storage-state")
async def export_session_state(
    key: Key, who: Who, svc: Svc, fmt: FormatQuery = "storage-state"
) -> Response:
    """The session's saved site data as a storage state JSON (or cookies.txt) file."""
    data, media = await svc.interop.export_session_state(who, key, fmt)
    return Response(data, media_type=media)
