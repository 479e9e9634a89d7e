"""The endpoints a WebDriver handover hands out (SPEC §21; :mod:`sitekeep.service.handover`).

Routes (no bearer token: the grant in the path is the credential)::

    GET|POST|DELETE  /v1/webdriver/{grant}/…                    W3C WebDriver classic
    WS               /v1/webdriver/{grant}/session/{id}/bidi    WebDriver BiDi

Answers are the WebDriver protocols' own, errors included (W3C ``{"value": {"error",
"message", "stacktrace"}}``; BiDi ``{"type": "error", "id", "error", "message"}``), since
WebDriver clients read them. A request or WebSocket upgrade another site's page made
(``Origin``, ``Sec-Fetch-Site``) is refused: W3C ``unknown error`` 403, or the upgrade
403. A socket whose grant does not stand gets one error message (``invalid session id``,
naming why) and closes with code 4401; a socket whose handover ends while open likewise
(within half a second); one whose browser's socket cannot be opened, 1011; one past
``handover.SOCKETS_PER_SESSION`` open sockets of its session, 1013.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

from sitekeep.api.deps import Svc
from sitekeep.api.ui.guard import check_origin
from sitekeep.errors import BrowserUnavailable, CapacityExceeded, Forbidden
from sitekeep.service import Service
from sitekeep.service.handover import BidiRefusal, Ended, Refusal

__all__ = ["router"]

_METHODS = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]
_ENDED = 4401
_GONE = 1011
_LATER = 1013
"""Try again later (RFC 6455 §7.4.1, IANA registry)."""

router = APIRouter(tags=["webdriver"], include_in_schema=False)


@router.api_route("/v1/webdriver/{grant}", methods=_METHODS)
@router.api_route("/v1/webdriver/{grant}/{rest:path}", methods=_METHODS)
async def classic(request: Request, svc: Svc) -> JSONResponse:
    """One W3C WebDriver classic command of a handover (``browser.handover_classic``)."""
    try:
        check_origin(request)
    except Forbidden as exc:
        refused = Refusal("unknown error", exc.message)
        return JSONResponse(refused.json(), status_code=403)
    status, answer = await svc.handovers.classic(
        request.method,
        request.scope.get("raw_path") or request.url.path.encode(),
        request.scope.get("query_string", b""),
        await request.body(),
    )
    return JSONResponse(answer, status_code=status, headers={"Cache-Control": "no-store"})


@router.websocket("/v1/webdriver/{grant}/session/{session_id}/bidi")
async def bidi(ws: WebSocket, grant: str, session_id: str) -> None:
    """A handover's BiDi socket (``browser.handover_bidi``)."""
    try:
        check_origin(ws)
    except Forbidden:
        await ws.close(1008)  # before accept: the upgrade itself is refused, 403
        return
    svc: Service = ws.app.state.service
    admitted = await svc.handovers.admit(grant, session_id)
    await ws.accept()
    if isinstance(admitted, Ended):
        await _close(ws, admitted.message, _ENDED)
        return

    async def receive() -> str:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        text = message.get("text")
        return text if isinstance(text, str) else ""  # a binary frame is no command

    try:
        ended = await svc.handovers.bidi(admitted, send=ws.send_text, receive=receive)
    except BrowserUnavailable as exc:
        await _close(ws, f"the browser cannot be reached: {exc.message}", _GONE, "unknown error")
        return
    except CapacityExceeded as exc:
        await _close(ws, exc.message, _LATER, "unknown error")
        return
    if ended is not None:
        await _close(ws, ended, _ENDED)


async def _close(ws: WebSocket, message: str, code: int, error: str = "invalid session id") -> None:
    """One BiDi ``error`` message naming why, then close with ``code`` (a client gone is
    fine)."""
    try:
        await ws.send_text(BidiRefusal(None, error, message).text())
        await ws.close(code)
    except (WebSocketDisconnect, RuntimeError):
        return
