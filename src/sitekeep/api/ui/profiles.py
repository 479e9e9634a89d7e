"""The admin UI's Profiles and Proxies tabs and the sign-in wizard (SPEC §9, §10, §14).

They call the service's profile, interop and catalogue rooms (``svc.profiles``,
``svc.interop.state_preview``, ``svc.catalogue``'s proxies — issue #12) and answer
through :mod:`.render`, as :mod:`.pages` does.

The wizard: name + country → a live browser (``service.live``) on a new session →
sign in to any number of sites → a polled state preview with the auth cookies the
heuristic picks pre-selected (``static/wizard.js`` keeps a person's own choices over
every later poll) → "Save profile" (create + capture of the selected cookies + the
session deleted) or "Close without saving" (the session deleted, nothing kept).
"Sign in again" opens the live browser on a new session restored from the profile,
landing on its first site (``profiles.landing``).

Routes::

    GET  /admin/ui/profiles                           the list
    POST /admin/ui/profiles/{id}/share|private|rename|delete|sign-in-again
    GET  /admin/ui/profiles/new ; POST /admin/ui/profiles/new     the wizard's first step
    GET  /admin/ui/wizard/{live}                      the live browser and the preview
    GET  /admin/ui/wizard/{live}/preview              the state preview (JSON, polled)
    POST /admin/ui/wizard/{live}/save ; POST /admin/ui/wizard/{live}/discard
    GET  /admin/ui/proxies ; POST /admin/ui/proxies ; POST /admin/ui/proxies/{name}/delete
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from sitekeep.api.deps import Svc
from sitekeep.api.ui.render import (
    Signed,
    UiRoute,
    Writer,
    form_page,
    kept,
    live_view,
    now,
    open_live,
    own_live,
    render,
    see_other,
    sign_in_of,
)
from sitekeep.args import (
    CaptureBody,
    CreateBody,
    ProxyBody,
    SelectedCookie,
    SessionChoice,
    unchecked,
)
from sitekeep.errors import InvalidInput
from sitekeep.model import Principal
from sitekeep.service import Service
from sitekeep.service.signins import SignIn

__all__ = ["expiry_chip", "router"]

router = APIRouter(route_class=UiRoute, include_in_schema=False)


# -- the list -------------------------------------------------------------------------------


def expiry_chip(profile: Mapping[str, Any]) -> str:
    """The list's chip: ``not captured``, ``fresh``, ``expires in N days``, ``expired``."""
    status = profile.get("status")
    if status == "expires_soon":
        days = int(profile.get("expires_in_days", 0))
        return "expires today" if days == 0 else f"expires in {days} day{'s' * (days != 1)}"
    return {"empty": "not captured", "expired": "expired"}.get(str(status), "fresh")


@router.get("/admin/ui/profiles")
async def profiles_page(request: Request, signed: Signed, svc: Svc) -> HTMLResponse:
    listed = await svc.profiles.list(signed.principal)
    return render(
        "profiles.html",
        signed=signed,
        section="profiles",
        profiles=listed["profiles"],
        now=listed.get("now", now(svc)),
        chip=expiry_chip,
        done=request.query_params.get("done"),
    )


def _back(done: str) -> RedirectResponse:
    return see_other(f"/admin/ui/profiles?done={quote(done)}")


@router.post("/admin/ui/profiles/{ident}/share")
async def share_profile(ident: str, signed: Writer, svc: Svc) -> Response:
    changed = await svc.profiles.update(signed.principal, ident, {"visibility": "workspace"})
    return _back(f"{changed['name']} is shared with the workspace.")


@router.post("/admin/ui/profiles/{ident}/private")
async def private_profile(ident: str, signed: Writer, svc: Svc) -> Response:
    changed = await svc.profiles.update(signed.principal, ident, {"visibility": "private"})
    return _back(f"{changed['name']} is private.")


@router.post("/admin/ui/profiles/{ident}/rename")
async def rename_profile(request: Request, ident: str, signed: Writer, svc: Svc) -> Response:
    name = request.state.form.get("name", "")
    changed = await svc.profiles.update(signed.principal, ident, {"name": name})
    return _back(f"Renamed to {changed['name']}.")


@router.post("/admin/ui/profiles/{ident}/delete")
async def delete_profile(ident: str, signed: Writer, svc: Svc) -> Response:
    profile = await svc.profiles.get(signed.principal, ident)
    await svc.profiles.delete(signed.principal, ident)
    return _back(f"Deleted {profile['name']}.")


@router.post("/admin/ui/profiles/{ident}/sign-in-again")
async def sign_in_again(request: Request, ident: str, signed: Writer, svc: Svc) -> Response:
    """The wizard, warm: a new session restored from the profile, on its first site."""
    profile = await svc.profiles.get(signed.principal, ident)
    url = await svc.profiles.landing(signed.principal, ident)
    browser = request.state.form.get("browser") or None
    choice = unchecked(
        SessionChoice,
        key=_wizard_key(),
        browser=browser,
        url=url,
        profile=ident,
        country=profile.get("country"),
    )
    live = await svc.live.create(signed.principal, choice, sign_in=sign_in_of(request))
    query = f"name={quote(profile['name'])}&profile={quote(ident)}"
    return see_other(f"/admin/ui/wizard/{live['id']}?{query}")


# -- the wizard -----------------------------------------------------------------------------

_NEW_FORM = {"name": "", "country": "", "browser": "chromium"}


def _wizard_key() -> str:
    return "wizard-" + secrets.token_hex(5)


async def _countries(svc: Service, who: Principal) -> list[str]:
    listed = await svc.catalogue.proxies(who)
    return [str(c) for c in listed.get("countries", [])]


async def _new_page(
    signed: SignIn, svc: Service, status: int = 200, **context: Any
) -> HTMLResponse:
    countries = await _countries(svc, signed.principal)
    return form_page(
        "wizard_new.html", signed, "profiles", _NEW_FORM, status, countries=countries, **context
    )


@router.get("/admin/ui/profiles/new")
async def new_profile_page(signed: Signed, svc: Svc) -> HTMLResponse:
    return await _new_page(signed, svc)


@router.post("/admin/ui/profiles/new")
async def new_profile(request: Request, signed: Writer, svc: Svc) -> Response:
    """Name + country → a live browser on a new session (nothing is saved yet)."""
    typed = kept(request, _NEW_FORM)
    if not typed["name"]:
        return await _new_page(signed, svc, 400, error="Name the profile.", form=typed)
    try:
        live_id = await open_live(
            request,
            signed,
            svc,
            key=_wizard_key(),
            browser=typed["browser"],
            country=typed["country"],
        )
    except InvalidInput as exc:
        return await _new_page(signed, svc, 400, error=exc.message, form=typed)
    query = f"name={quote(typed['name'])}&country={quote(typed['country'])}"
    return see_other(f"/admin/ui/wizard/{live_id}?{query}")


@router.get("/admin/ui/wizard/{live_id}")
async def wizard_page(request: Request, live_id: str, signed: Signed, svc: Svc) -> HTMLResponse:
    query = request.query_params
    return render(
        "wizard.html",
        signed=signed,
        section="profiles",
        **await live_view(signed, svc, live_id),
        profile_name=query.get("name", ""),
        country=query.get("country", ""),
        profile=query.get("profile", ""),
    )


@router.get("/admin/ui/wizard/{live_id}/preview")
async def wizard_preview(live_id: str, signed: Signed, svc: Svc) -> JSONResponse:
    """The live browser's cookies by domain — names, expiry, flags, the default selection
    and the server's ``now``; never a value."""
    live = await own_live(signed, svc, live_id)
    return JSONResponse(await svc.interop.state_preview(signed.principal, live.key))


def _selection(text: str) -> list[dict[str, str]]:
    try:
        chosen = json.loads(text or "[]")
    except ValueError:
        chosen = None
    if not isinstance(chosen, list) or not all(
        isinstance(c, dict) and isinstance(c.get("domain"), str) and isinstance(c.get("name"), str)
        for c in chosen
    ):
        raise InvalidInput("cookies must be a list of {domain, name}", field="cookies")
    if not chosen:
        raise InvalidInput("choose at least one cookie to keep", field="cookies")
    return [{"domain": c["domain"], "name": c["name"]} for c in chosen]


@router.post("/admin/ui/wizard/{live_id}/save")
async def wizard_save(request: Request, live_id: str, signed: Writer, svc: Svc) -> Response:
    """Save profile: create it (or, signing in again, keep it), capture the selected
    cookies from the live browser, then delete the wizard's session."""
    who = signed.principal
    live = await own_live(signed, svc, live_id)
    form: dict[str, str] = request.state.form
    cookies = _selection(form.get("cookies", ""))
    ident = form.get("profile", "")
    if not ident:
        name, country = form.get("name", "").strip(), form.get("country") or None
        made = unchecked(CreateBody, name=name, visibility="private", country=country)
        ident = (await svc.profiles.create(who, made))["id"]
    chosen = [unchecked(SelectedCookie, domain=c["domain"], name=c["name"]) for c in cookies]
    saved = await svc.profiles.capture(
        who, ident, unchecked(CaptureBody, session=live.key, cookies=chosen)
    )
    await svc.live.end(who, live.id)
    await svc.sessions.delete(who, live.key)
    name = saved.get("profile", {}).get("name") or form.get("name", "")
    return _back(f"Saved {name}.")


@router.post("/admin/ui/wizard/{live_id}/discard")
async def wizard_discard(live_id: str, signed: Writer, svc: Svc) -> Response:
    """Close without saving: the wizard's session goes, nothing is kept."""
    live = await own_live(signed, svc, live_id)
    await svc.live.end(signed.principal, live.id)
    await svc.sessions.delete(signed.principal, live.key)
    return see_other("/admin/ui/profiles")


# -- proxies --------------------------------------------------------------------------------

_PROXY_FORM = {"name": "", "country": "", "url": "", "auth_secret": ""}


async def _proxies_page(
    signed: SignIn, svc: Service, status: int = 200, **context: Any
) -> HTMLResponse:
    listed = await svc.catalogue.proxies(signed.principal)
    context.setdefault("done", None)
    return form_page(
        "proxies.html",
        signed,
        "proxies",
        _PROXY_FORM,
        status,
        proxies=listed["proxies"],
        now=now(svc),
        **context,
    )


@router.get("/admin/ui/proxies")
async def proxies_page(request: Request, signed: Signed, svc: Svc) -> HTMLResponse:
    return await _proxies_page(signed, svc, done=request.query_params.get("done"))


@router.post("/admin/ui/proxies")
async def save_proxy(request: Request, signed: Writer, svc: Svc) -> Response:
    """Add or replace a proxy; its credentials are a secret's name, never a value."""
    typed = kept(request, _PROXY_FORM)
    try:
        body = unchecked(
            ProxyBody,
            country=typed["country"],
            url=typed["url"],
            auth_secret=typed["auth_secret"] or None,
        )
        saved = await svc.catalogue.put_proxy(signed.principal, typed["name"], body)
    except InvalidInput as exc:
        return await _proxies_page(signed, svc, 400, error=exc.message, form=typed)
    done = quote(f"Saved {saved['name']}.")
    return see_other(f"/admin/ui/proxies?done={done}")


@router.post("/admin/ui/proxies/{name}/delete")
async def delete_proxy(name: str, signed: Writer, svc: Svc) -> Response:
    await svc.catalogue.delete_proxy(signed.principal, name)
    return see_other(f"/admin/ui/proxies?done={quote(f'Deleted {name}.')}")
