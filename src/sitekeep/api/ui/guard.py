"""What keeps the admin UI's pages safe to use in a browser (SPEC §12).

- **Headers** on every ``/admin`` response: a Content-Security-Policy that allows scripts,
  styles and requests from this origin only and no framing (``frame-ancestors 'none'``,
  with ``X-Frame-Options: DENY`` for older browsers: clickjacking), ``nosniff``, no
  referrer to other sites, and ``no-store`` (pages show site data).
- **The sign-in cookie** holds only a random id (the server keeps the rest), is httpOnly
  (no script reads it), ``SameSite=Strict`` (no other site's page, link or form makes the
  browser send it) and ``Path=/admin``; ``Secure`` whenever the page came over HTTPS.
- **Writes** (every POST and DELETE) must come from this origin — ``Origin``, or failing
  that ``Sec-Fetch-Site``, names it — and carry the sign-in's CSRF token (the
  ``X-CSRF-Token`` header htmx sends, or a form's ``csrf`` field).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from urllib.parse import parse_qsl

from fastapi import Request, Response
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sitekeep.errors import Forbidden, InvalidInput
from sitekeep.service.signins import SIGN_IN_TTL, SignIn

__all__ = [
    "COOKIE",
    "MAX_FORM_BYTES",
    "SecurityHeaders",
    "check_csrf",
    "check_origin",
    "clear_sign_in_cookie",
    "read_form",
    "set_sign_in_cookie",
    "sign_in_ids",
]

COOKIE = "sitekeep_admin"
MAX_FORM_BYTES = 64 * 1024
"""The largest form body the UI reads (a secret's values fit many times over)."""

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    # Not no-referrer: under it a browser sends "Origin: null" with the pages' own forms.
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


_PAGE_SCHEME = {"ws": "http", "wss": "https"}
"""A WebSocket's URL scheme → the scheme of the page origins it is same-origin with."""


def _is_admin_path(path: str) -> bool:
    return path == "/admin" or path.startswith("/admin/")


class SecurityHeaders:
    """ASGI middleware: the headers above on every response under ``/admin`` (a header
    the handler set itself, such as a static file's ``cache-control``, is kept)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_admin_path(scope["path"]):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend(h for h in _HEADERS if h[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def set_sign_in_cookie(request: Request, response: Response, sid: str) -> None:
    """Give the browser its sign-in id: httpOnly, SameSite=Strict, Path=/admin, and
    Secure over HTTPS."""
    response.set_cookie(
        COOKIE,
        sid,
        max_age=int(SIGN_IN_TTL),
        path="/admin",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def clear_sign_in_cookie(response: Response) -> None:
    """Tell the browser to drop its sign-in id."""
    response.delete_cookie(COOKIE, path="/admin", httponly=True, samesite="strict")


def sign_in_ids(request: Request) -> list[str]:
    """Every ``sitekeep_admin`` value the browser sent, in its order (at most 4).

    A page of a related host can plant a second cookie of the same name (another path, or
    ``Domain=`` of a parent): a parser that keeps one value per name would let the planted
    one shadow the real sign-in. Each value is tried; only a live sign-in id counts.
    """
    ids = []
    for part in request.headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            ids.append(value.strip('"'))
    return ids[:4]


def check_origin(request: HTTPConnection) -> None:
    """Refuse a request — or a WebSocket upgrade — another origin's page made.

    ``Origin`` must be this server's own (scheme, host and port; a WebSocket's ``ws`` and
    ``wss`` are its ``http`` and ``https``); without it, ``Sec-Fetch-Site`` must not say
    another site or origin sent it. A client that sends neither (curl, an agent's
    WebSocket library) passes here and still needs the CSRF token or ticket.

    Raises:
        Forbidden: a cross-origin request.
    """
    scheme = _PAGE_SCHEME.get(request.url.scheme, request.url.scheme)
    own = f"{scheme}://{request.headers.get('host', '')}"
    origin = request.headers.get("origin")
    if origin is not None and origin != own:
        raise Forbidden("refused: this request came from another site's page")
    fetch_site = request.headers.get("sec-fetch-site")
    if origin is None and fetch_site not in (None, "same-origin", "none"):
        raise Forbidden("refused: this request came from another site's page")


async def read_form(request: Request) -> dict[str, str]:
    """The URL-encoded form in the body (at most :data:`MAX_FORM_BYTES`); the first value
    of each field.

    Raises:
        InvalidInput: a body over the limit, or not a URL-encoded form.
    """
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise InvalidInput("send a URL-encoded form", field="content-type")
    declared = request.headers.get("content-length", "0")
    if not declared.isdigit() or int(declared) > MAX_FORM_BYTES:
        raise InvalidInput(f"a form is at most {MAX_FORM_BYTES} bytes", field="content-length")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise InvalidInput(f"a form is at most {MAX_FORM_BYTES} bytes", field="content-length")
    form: dict[str, str] = {}
    for name, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        form.setdefault(name, value)
    return form


def check_csrf(request: Request, signed: SignIn, form: Mapping[str, str]) -> None:
    """Refuse a write without the sign-in's CSRF token (header or form field).

    Raises:
        Forbidden: a missing or wrong token.
    """
    token = request.headers.get("x-csrf-token") or form.get("csrf", "")
    if not hmac.compare_digest(token.encode(), signed.csrf.encode()):
        raise Forbidden("refused: this page is out of date or the request was forged (CSRF)")
