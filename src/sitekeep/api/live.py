"""HTTP and WebSocket routes of live sessions (SPEC §10); ``service.live`` has the rules.

Routes::

    POST   /v1/live-sessions               {key?, browser?, url?, profile?, country?} →
                                           {id, key, socket, ticket, ticket_expires_at,
                                           expires_at, created_at, url, title}
    POST   /v1/live-sessions/{id}/ticket   a fresh ticket for the caller's live session
    DELETE /v1/live-sessions/{id}          end it (the session and its browser stay)
    WS     /v1/live-sessions/{id}/socket   first message {"ticket": …}; then frames out
                                           (binary JPEG), JSON messages both ways

An upgrade whose ``Origin`` is another site's (the admin UI's rule,
:func:`sitekeep.api.ui.guard.check_origin`: a page elsewhere cannot drive or watch the
browser with a ticket it got hold of) is refused with HTTP 403; a client that sends no
``Origin`` (an agent's WebSocket library) is let through to the ticket check.
A socket refused (no ticket within 10 s, unknown/spent ticket, another live session's, or
one whose token or UI sign-in has since ended) gets one ``error`` message and closes with
code 4401; a live session whose browser is gone, 4404. An open socket whose token is
revoked, or whose UI sign-in ends, gets ``{"type": "closed", "reason": "revoked" |
"signed_out"}`` and closes (``sitekeep.service.live``).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from sitekeep.api.deps import Ident, Svc, Who
from sitekeep.api.ui.guard import check_origin
from sitekeep.args import SessionChoice
from sitekeep.errors import Forbidden, NotFound, SitekeepError, Unauthorized, error_json, quoted
from sitekeep.service import Service
from sitekeep.service.relay import Relay

__all__ = ["router", "serve_socket"]

FIRST_MESSAGE_WAIT = 10.0
"""Seconds a socket has to send its ticket."""
_POLICY = 1008
"""WebSocket close code: policy violation (RFC 6455 §7.4.1)."""

router = APIRouter(prefix="/v1/live-sessions", tags=["live"])


LiveBody = SessionChoice
"""``{key?, browser?, url?, profile?, country?}``, strict and bounded as an open's."""


@router.post("")
async def create_live_session(who: Who, svc: Svc, body: LiveBody | None = None) -> dict[str, Any]:
    """Open (or return to) a session as the caller's one live session, and a one-shot
    ticket (single use, 30 s) for its WebSocket; a live session the caller had ends."""
    return await svc.live.create(who, body or LiveBody())


@router.post("/{id_}/ticket")
async def live_ticket(id_: Ident, who: Who, svc: Svc) -> dict[str, Any]:
    """A fresh one-shot ticket for the caller's live session ``id`` (404 otherwise)."""
    return await svc.live.ticket(who, id_)


@router.delete("/{id_}")
async def end_live_session(id_: Ident, who: Who, svc: Svc) -> dict[str, Any]:
    """End the caller's live session: its sockets close; the session stays."""
    return await svc.live.end(who, id_)


def _refusal(exc: SitekeepError) -> str:
    """The socket's ``error`` message: the one error shape (``errors.error_json``)."""
    return json.dumps({"type": "error", "error": error_json(exc)})


async def serve_socket(ws: WebSocket, svc: Service, id_: str) -> None:
    """Refuse another site's page, authorise one socket by its first message's ticket,
    then relay it."""
    try:
        check_origin(ws)
    except Forbidden:
        await ws.close(_POLICY)  # before accept: the upgrade itself is refused, 403
        return
    await ws.accept()
    try:
        with anyio.fail_after(FIRST_MESSAGE_WAIT):
            try:
                first = await ws.receive_text()
            except KeyError:  # a binary message (Starlette has no "text"): no ticket
                first = ""
        try:
            ticket = json.loads(first).get("ticket")
        except (ValueError, AttributeError):
            ticket = None
        who, live, grant = await svc.live.redeem(ticket, id_)
    except TimeoutError:
        await ws.send_text(_refusal(Unauthorized("no ticket came")))
        await ws.close(4401)
        return
    except Unauthorized as exc:
        await ws.send_text(_refusal(exc))
        await ws.close(4401)
        return
    browser = await svc.live.browser(who, live.key)
    if browser is None:
        gone = f"session {quoted(live.key)} has no live browser: open it again"
        await ws.send_text(_refusal(NotFound("browser", live.key, message=gone)))
        await ws.close(4404)
        return
    relay = Relay(
        svc.live,
        who,
        live,
        browser,
        send=ws.send_text,
        send_bytes=ws.send_bytes,
        receive=ws.receive_text,
        grant=grant,
    )
    try:
        await relay.run()
        await ws.close(1000)
    except (WebSocketDisconnect, RuntimeError):  # the client left first
        return


@router.websocket("/{id_}/socket")
async def live_socket(ws: WebSocket, id_: str) -> None:
    """The live view's socket (see the module's docstring)."""
    try:
        await serve_socket(ws, ws.app.state.service, id_)
    except WebSocketDisconnect:
        return
