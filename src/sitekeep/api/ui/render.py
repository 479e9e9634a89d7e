"""What every admin UI page shares (SPEC §11): the templates, the sign-in a page needs, and
how a page answers — rendered, redirected, or an error page.

- **Templates** (``ui/templates``, Jinja2, autoescaped: a hostile page's URL, storage key
  or cookie name shows as text) with the helpers they call (``ago``, ``plural``,
  ``static``…) and the navigation.
- **Sign-in**: :data:`Signed` (a live sign-in behind the ``sitekeep_admin`` cookie,
  :mod:`.guard`) and :data:`Writer` (that, plus this origin and the sign-in's CSRF token,
  for every write); a request without one is sent to the sign-in page.
- **Answers**: :func:`render` a template, :func:`form_page` a page with a form kept as
  typed, :func:`see_other` after a write; :class:`UiRoute` turns a
  :class:`~sitekeep.errors.SitekeepError` into an error page (plain text for htmx).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Coroutine, Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined

from sitekeep.api.deps import Svc
from sitekeep.api.errors import status_of
from sitekeep.api.ui.guard import check_csrf, check_origin, read_form, sign_in_ids
from sitekeep.args import SessionChoice, unchecked
from sitekeep.errors import NotFound, SitekeepError
from sitekeep.service import Service, panes
from sitekeep.service.live import LiveSession
from sitekeep.service.signins import SignIn, sign_in_ref

__all__ = [
    "NAV",
    "Signed",
    "UiRoute",
    "Writer",
    "form_page",
    "kept",
    "now",
    "own_live",
    "render",
    "see_other",
    "sign_in_of",
    "static_file",
]

NAV = (
    {"id": "sessions", "label": "Sessions", "href": "/admin"},
    {"id": "secrets", "label": "Secrets", "href": "/admin/ui/secrets"},
    {"id": "profiles", "label": "Profiles", "href": "/admin/ui/profiles"},
    {"id": "proxies", "label": "Proxies", "href": "/admin/ui/proxies"},
    {"id": "tokens", "label": "Tokens", "href": "/admin/ui/tokens"},
    {"id": "live", "label": "Live browser", "href": "/admin/ui/live"},
)
_HEADINGS = {401: "Sign in again", 403: "Not allowed", 404: "Not found"}


# -- templates ------------------------------------------------------------------------------


@cache
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("sitekeep.api.ui", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        ago=panes.ago,
        plural=panes.plural,
        static=_static_url,
        cookie_flags=_cookie_flags,
        when=_when,
        nav=NAV,
    )
    return env


def _when(expiry: float) -> str:
    return datetime.fromtimestamp(expiry, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _cookie_flags(cookie: Mapping[str, Any]) -> str:
    flags = ["httpOnly" if cookie["http_only"] else "", "Secure" if cookie["secure"] else ""]
    flags.append(f"SameSite={cookie['same_site']}")
    return " · ".join(f for f in flags if f)


@cache
def static_file(name: str) -> bytes:
    """One of the UI's own scripts or styles (``ui/static``), shipped in the package."""
    return (resources.files("sitekeep.api.ui") / "static" / name).read_bytes()


def _static_url(name: str) -> str:
    return f"/admin/static/{name}?v={hashlib.sha256(static_file(name)).hexdigest()[:12]}"


# -- answers --------------------------------------------------------------------------------


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The template ``name`` rendered with ``context`` (a page outside the sign-in, or a
    partial, gets no ``signed``)."""
    context.setdefault("signed", None)
    context.setdefault("signed_out", False)
    return HTMLResponse(_env().get_template(name).render(**context), status_code=status)


def form_page(
    name: str,
    signed: SignIn,
    section: str,
    blank: Mapping[str, str],
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    """A page of the ``section`` tab holding a form: its fields as typed (``form``, else
    ``blank``) and the error to show (``error``, else none)."""
    context.setdefault("form", blank)
    context.setdefault("error", None)
    return render(name, status, signed=signed, section=section, **context)


def kept(request: Request, blank: Mapping[str, str], *, strip: bool = True) -> dict[str, str]:
    """The fields of ``blank`` from the form a :data:`Writer` read, to show again as typed
    when the write is refused (``strip``: without surrounding spaces)."""
    form: dict[str, str] = request.state.form
    return {k: form.get(k, "").strip() if strip else form.get(k, "") for k in blank}


def see_other(url: str) -> RedirectResponse:
    """After a write: go to ``url`` (303, so a reload does not post again)."""
    return RedirectResponse(url, status_code=303)


def _is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def _to_sign_in(request: Request) -> Response:
    if _is_htmx(request) or request.url.path.endswith("/row"):
        return PlainTextResponse(
            "Sign in again.", status_code=401, headers={"HX-Redirect": "/admin/sign-in"}
        )
    return see_other("/admin/sign-in")


def _error(request: Request, exc: SitekeepError) -> Response:
    status = status_of(exc)
    if _is_htmx(request):
        return PlainTextResponse(exc.message, status_code=status)
    heading = _HEADINGS.get(status, "Something went wrong")
    return render("error.html", status, heading=heading, message=exc.message, code=status)


class _SignInNeeded(Exception):
    """No live sign-in behind the request's cookie."""


class UiRoute(APIRoute):
    """Errors of the UI's routes become pages (or plain text for htmx), not JSON; a
    request without a sign-in goes to the sign-in page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except _SignInNeeded:
                return _to_sign_in(request)
            except SitekeepError as exc:
                return _error(request, exc)

        return guarded


# -- the sign-in ----------------------------------------------------------------------------


async def _signed(request: Request, svc: Svc) -> SignIn:
    for sid in sign_in_ids(request):
        signed = await svc.sign_ins.signed_in(sid)
        if signed is not None:
            request.state.sid = sid
            return signed
    raise _SignInNeeded


Signed = Annotated[SignIn, Depends(_signed)]


async def _writer(request: Request, signed: Signed) -> SignIn:
    """A write: signed in, from this origin (checked before the body is read), with the
    sign-in's CSRF token."""
    check_origin(request)
    form = await read_form(request) if request.method == "POST" else {}
    check_csrf(request, signed, form)
    request.state.form = form
    return signed


Writer = Annotated[SignIn, Depends(_writer)]


def sign_in_of(request: Request) -> str:
    """The reference (``signins.sign_in_ref``) of the sign-in a request passed
    :data:`Signed` or :data:`Writer` with."""
    return sign_in_ref(request.state.sid)


def now(svc: Service) -> float:
    """The service's clock: seconds since the epoch, as its records are stamped."""
    return svc.sign_ins.now()


async def own_live(signed: SignIn, svc: Service, id_: str) -> LiveSession:
    """The signed-in admin's live browser, if its id is ``id_``.

    Raises:
        NotFound: field ``id``; another's live session, or one that ended.
    """
    who = signed.principal
    live = await svc.live.current(who.tenant, who.subject)
    if live is None or live.id != id_:
        raise NotFound("live session", id_, field="id")
    return live


async def open_live(request: Request, signed: SignIn, svc: Service, **choice: str) -> str:
    """Open (or return to) the signed-in admin's live browser on the session ``choice``
    names (:class:`~sitekeep.args.SessionChoice`'s fields as a form typed them: an empty
    one is left unsaid), bound to this sign-in; its id.

    Raises:
        InvalidInput: a field the choice refuses, named.
    """
    picked = unchecked(SessionChoice, **{field: v or None for field, v in choice.items()})
    live = await svc.live.create(signed.principal, picked, sign_in=sign_in_of(request))
    return str(live["id"])


async def live_view(signed: SignIn, svc: Service, id_: str) -> dict[str, Any]:
    """What a page around the admin's live browser ``id_`` shows: the live session, and
    the URL its browser is on (``title`` is filled in by the page's socket).

    Raises:
        NotFound: field ``id``; another's live session, or one that ended.
    """
    live = await own_live(signed, svc, id_)
    record = await svc.views.record(signed.principal, live.key)
    return {"live": live.as_json(), "url": record.url or "", "title": ""}
