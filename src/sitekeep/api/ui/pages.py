"""The admin UI's routes: server-rendered pages and the htmx partials they swap in.

Every page but sign-in needs a sign-in (the ``sitekeep_admin`` cookie, :mod:`.guard`);
every write also passes :func:`~sitekeep.api.ui.guard.check_write`. Handlers call
``service.admin`` — the same use cases as the admin API — and render templates
(``ui/templates``, autoescaped: a hostile page's URL, storage key or cookie name shows as
text). Errors become pages, or plain text for htmx requests.

Routes::

    GET  /admin                                  the sessions
    GET  /admin/sign-in ; POST /admin/sign-in    token in, sign-in cookie out
    POST /admin/sign-out
    GET  /admin/ui/sessions/{key}?tab=…          Site data and History tabs
    GET  /admin/ui/sessions/{key}/row            the revisions the page polls (JSON)
    GET|DELETE /admin/ui/sessions/{key}/panes/history            the pane; Clear
    GET|DELETE /admin/ui/sessions/{key}/panes/site-data          the pane; Clear
    GET|DELETE /admin/ui/sessions/{key}/panes/site-data/{site}   one host open; Forget
    GET  /admin/ui/sessions/{key}/panes/versions                 earlier saves (issue #26)
    POST /admin/ui/sessions/{key}/panes/versions/{id}/restore    restore one
    GET  /admin/ui/sessions/{key}/panes/journal?after=           the timeline, a page
    GET  /admin/ui/secrets ; POST /admin/ui/secrets ; POST /admin/ui/secrets/{name}/delete
    GET  /admin/ui/tokens ; POST /admin/ui/tokens/{id}/revoke
    GET|POST /admin/ui/live                      open a live browser (SPEC §10)
    GET  /admin/ui/live/{id}                     its canvas (static/live.js)
    POST /admin/ui/live/{id}/ticket ; POST /admin/ui/live/{id}/end
    GET  /admin/static/{name}                    htmx, admin.js, admin.css (shipped here)
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse

from sitekeep.api.deps import Svc
from sitekeep.api.ui.guard import (
    check_origin,
    clear_sign_in_cookie,
    read_form,
    set_sign_in_cookie,
    sign_in_ids,
)
from sitekeep.api.ui.render import (
    Signed,
    UiRoute,
    Writer,
    form_page,
    kept,
    live_view,
    now,
    open_live,
    render,
    see_other,
    sign_in_of,
    static_file,
)
from sitekeep.args import SecretBody, VersionChoice, unchecked
from sitekeep.errors import InvalidInput, NotFound
from sitekeep.model import Principal
from sitekeep.service import Service, panes
from sitekeep.service.signins import SignIn

__all__ = ["SESSION_TABS", "router"]

SESSION_TABS = (
    ("site-data", "Site data"),
    ("versions", "Versions"),
    ("history", "History"),
    ("journal", "Journal"),
)
_STATIC = {
    "htmx.min.js": "text/javascript; charset=utf-8",
    "admin.js": "text/javascript; charset=utf-8",
    "live.js": "text/javascript; charset=utf-8",
    "wizard.js": "text/javascript; charset=utf-8",
    "admin.css": "text/css; charset=utf-8",
}

router = APIRouter(route_class=UiRoute, include_in_schema=False)


# -- sign-in ------------------------------------------------------------------------------


@router.get("/admin/sign-in")
async def sign_in_page(request: Request) -> HTMLResponse:
    return render("sign_in.html", error=None, signed_out="out" in request.query_params)


async def _resolve_token(svc: Service, token: str) -> Principal | None:
    # The service's one authenticator; a sign-in asks it once and keeps no token. Fresh
    # from the store: a sign-in lasts hours, so no memory of a since-revoked token may
    # make one.
    return await svc.sign_ins.resolve(token)


@router.post("/admin/sign-in")
async def sign_in(request: Request, svc: Svc) -> Response:
    """Trade an admin token for a sign-in: a fresh id in an httpOnly, SameSite=Strict
    cookie (never the token), after ending any sign-in the browser had."""
    check_origin(request)  # no other site signs this browser in to its own account
    token = (await read_form(request)).get("token", "").strip()
    who = await _resolve_token(svc, token) if token else None
    if who is None:
        return render("sign_in.html", 401, error="That is not a token of this server.")
    if who.role != "admin":
        error = "That is a member's token: the admin UI needs an admin's."
        return render("sign_in.html", 403, error=error)
    for old in sign_in_ids(request):  # a new id every time: nothing planted is kept
        await svc.sign_ins.sign_out(old)
    sid, _ = await svc.sign_ins.sign_in_with(who, token)
    # Asked again once the sign-in is written: a revocation that ran since the check
    # above swept the sign-ins before this one existed, so it would last hours. One that
    # runs after this look sweeps it (its delete comes before its sweep).
    if await _resolve_token(svc, token) is None:
        await svc.sign_ins.sign_out(sid)
        return render("sign_in.html", 401, error="That is not a token of this server.")
    response = see_other("/admin")
    set_sign_in_cookie(request, response, sid)
    return response


@router.post("/admin/sign-out")
async def sign_out(request: Request, signed: Writer, svc: Svc) -> Response:
    await svc.sign_ins.sign_out(request.state.sid)
    response = see_other("/admin/sign-in?out")
    clear_sign_in_cookie(response)
    return response


# -- sessions -----------------------------------------------------------------------------


@router.get("/admin")
async def sessions_page(signed: Signed, svc: Svc) -> HTMLResponse:
    rows = await svc.admin.sessions(signed.principal)
    return render("sessions.html", signed=signed, section="sessions", rows=rows, now=now(svc))


def _base(key: str) -> str:
    return f"/admin/ui/sessions/{key}"


@router.get("/admin/ui/sessions/{key}")
async def session_page(key: str, signed: Signed, svc: Svc, tab: str = "site-data") -> Response:
    """A session's tabs; each pane opens its top row once, then the reader decides."""
    who = signed.principal
    row = await svc.admin.session(who, key)
    history = await svc.admin.history(who, key)
    top = [history.rows[0].host] if history.rows else []
    site_data = await svc.admin.site_data(who, key, first=True)
    versions = (await svc.versions.of_session(who, key))["versions"]
    counts = {
        "site-data": len(site_data.rows),
        "versions": len(versions),
        "history": len(history.rows),
        "journal": "",
    }
    tabs = [{"id": t, "label": label, "count": counts[t]} for t, label in SESSION_TABS]
    return render(
        "session.html",
        signed=signed,
        section="sessions",
        key=key,
        base=_base(key),
        row=row,
        now=now(svc),
        tabs=tabs,
        current=tab if tab in counts else "site-data",
        history=history,
        history_rev=panes.rev_token(history.rev),
        history_open=top,
        site_data=site_data,
        site_data_rev=panes.rev_token(site_data.rev),
        versions=versions,
        versions_rev=panes.rev_token([v["id"] for v in versions]),
    )


@router.get("/admin/ui/sessions/{key}/row")
async def session_row(key: str, signed: Signed, svc: Svc) -> JSONResponse:
    """The session's row (as ``GET /admin/sessions`` has it) and each pane's revision
    token, for the page to repaint only the pane whose revision moved."""
    row = await svc.admin.session(signed.principal, key)
    revs = {
        "history": panes.rev_token(row["history_rev"]),
        "site-data": panes.rev_token(row["site_data_rev"]),
        "versions": panes.rev_token(await svc.versions.session_version_ids(signed.principal, key)),
    }
    return JSONResponse({"row": row, "revs": revs})


def _open(request: Request) -> list[str]:
    return [h for h in request.query_params.get("open", "").split(",") if h]


def _first(request: Request) -> bool:
    return request.query_params.get("first") == "1"


async def _history_pane(request: Request, key: str, signed: SignIn, svc: Service) -> Response:
    pane = await svc.admin.history(signed.principal, key)
    open_hosts = _open(request)
    first = _first(request) and bool(pane.rows)
    if first:
        open_hosts.append(pane.rows[0].host)
    return render(
        "_history.html",
        pane=pane,
        rev=panes.rev_token(pane.rev),
        open_hosts=open_hosts,
        opened_top=first,
        now=now(svc),
        base=_base(key),
    )


async def _site_data_pane(request: Request, key: str, signed: SignIn, svc: Service) -> Response:
    first = _first(request)
    pane = await svc.admin.site_data(signed.principal, key, expand=_open(request), first=first)
    return render(
        "_site_data.html",
        pane=pane,
        rev=panes.rev_token(pane.rev),
        opened_top=first and bool(pane.rows),
        now=now(svc),
        base=_base(key),
    )


@router.get("/admin/ui/sessions/{key}/panes/history")
async def history_pane(request: Request, key: str, signed: Signed, svc: Svc) -> Response:
    return await _history_pane(request, key, signed, svc)


@router.delete("/admin/ui/sessions/{key}/panes/history")
async def clear_history(request: Request, key: str, signed: Writer, svc: Svc) -> Response:
    await svc.admin.clear_history(signed.principal, key)
    return await _history_pane(request, key, signed, svc)


@router.get("/admin/ui/sessions/{key}/panes/site-data")
async def site_data_pane(request: Request, key: str, signed: Signed, svc: Svc) -> Response:
    return await _site_data_pane(request, key, signed, svc)


@router.delete("/admin/ui/sessions/{key}/panes/site-data")
async def clear_site_data(request: Request, key: str, signed: Writer, svc: Svc) -> Response:
    await svc.admin.clear_site_data(signed.principal, key)
    return await _site_data_pane(request, key, signed, svc)


@router.get("/admin/ui/sessions/{key}/panes/site-data/{site}")
async def site_data_host(key: str, site: str, signed: Signed, svc: Svc) -> Response:
    view = await svc.admin.site_data_host(signed.principal, key, site)
    return render("_host.html", view=view)


@router.delete("/admin/ui/sessions/{key}/panes/site-data/{site}")
async def forget(request: Request, key: str, site: str, signed: Writer, svc: Svc) -> Response:
    await svc.admin.forget(signed.principal, key, site)
    return await _site_data_pane(request, key, signed, svc)


async def _versions_pane(key: str, signed: SignIn, svc: Service) -> Response:
    versions = (await svc.versions.of_session(signed.principal, key))["versions"]
    return render(
        "_versions.html",
        versions=versions,
        rev=panes.rev_token([v["id"] for v in versions]),
        now=now(svc),
        base=_base(key),
    )


@router.get("/admin/ui/sessions/{key}/panes/versions")
async def versions_pane(key: str, signed: Signed, svc: Svc) -> Response:
    """Earlier saves, newest first: per host, counts, sizes and sign-in (issue #26)."""
    return await _versions_pane(key, signed, svc)


@router.post("/admin/ui/sessions/{key}/panes/versions/{version}/restore")
async def restore_version(key: str, version: str, signed: Writer, svc: Svc) -> Response:
    """Make a version the saved site data; the one it replaces joins the versions."""
    choice = unchecked(VersionChoice, version=version)
    await svc.versions.restore_session_version(signed.principal, key, choice)
    return await _versions_pane(key, signed, svc)


JOURNAL_PAGE = 50
"""Timeline rows the Journal pane shows per page."""


@router.get("/admin/ui/sessions/{key}/panes/journal")
async def journal_pane(request: Request, key: str, signed: Signed, svc: Svc) -> Response:
    """A page of the session's journal timeline (``Admin.journal``, issue #11), oldest
    first; "More" fetches the next page after it."""
    after = request.query_params.get("after") or None
    page = await svc.admin.journal(signed.principal, key, after=after, limit=JOURNAL_PAGE)
    return render(
        "_journal.html",
        rows=page["rows"],
        after=after,
        next=page.get("next"),
        base=_base(key),
        now=now(svc),
    )


# -- secrets ------------------------------------------------------------------------------

_SECRET_FORM = {"name": "", "description": "", "hosts": ""}


async def _secrets_page(
    signed: SignIn, svc: Service, status: int = 200, **context: Any
) -> HTMLResponse:
    return form_page(
        "secrets.html",
        signed,
        "secrets",
        _SECRET_FORM,
        status,
        secrets=await svc.catalogue.secrets(signed.principal),
        now=now(svc),
        **{"saved": None, "deleted": None, **context},
    )


@router.get("/admin/ui/secrets")
async def secrets_page(request: Request, signed: Signed, svc: Svc) -> Response:
    query = request.query_params
    return await _secrets_page(signed, svc, saved=query.get("saved"), deleted=query.get("deleted"))


def _values(text: str) -> dict[str, str]:
    """``key=value`` lines (blank lines skipped) as a mapping; a line is never echoed."""
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or key.strip() in values:
            raise InvalidInput(
                f"values: line {number} is not a new key=value", field=f"values[{number}]"
            )
        values[key.strip()] = value
    return values


@router.post("/admin/ui/secrets")
async def save_secret(request: Request, signed: Writer, svc: Svc) -> Response:
    """Create or replace a secret; values are never put back into the page."""
    typed = kept(request, _SECRET_FORM, strip=False)
    try:
        hosts = [h for h in re.split(r"[\s,]+", typed["hosts"]) if h]
        values = _values(request.state.form.get("values", ""))
        body = unchecked(SecretBody, description=typed["description"], hosts=hosts, values=values)
        info = await svc.catalogue.put_secret(signed.principal, typed["name"], body)
    except InvalidInput as exc:
        return await _secrets_page(signed, svc, 400, error=exc.message, form=typed)
    return see_other(f"/admin/ui/secrets?saved={info.name}")


@router.post("/admin/ui/secrets/{name}/delete")
async def delete_secret(name: str, signed: Writer, svc: Svc) -> Response:
    await svc.catalogue.delete_secret(signed.principal, name)
    return see_other(f"/admin/ui/secrets?deleted={name}")


# -- tokens -------------------------------------------------------------------------------


@router.get("/admin/ui/tokens")
async def tokens_page(request: Request, signed: Signed, svc: Svc) -> HTMLResponse:
    """The tenant's tokens by id; the one signed in with is marked (revoking it signs out)."""
    return render(
        "tokens.html",
        signed=signed,
        section="tokens",
        tokens=await svc.catalogue.tokens(signed.principal),
        now=now(svc),
        revoked=request.query_params.get("revoked"),
    )


@router.post("/admin/ui/tokens/{id_}/revoke")
async def revoke_token(id_: str, signed: Writer, svc: Svc) -> Response:
    info = await svc.catalogue.revoke_token(signed.principal, id_)
    return see_other(f"/admin/ui/tokens?revoked={info.id}")


# -- live browser -------------------------------------------------------------------------

_LIVE_FORM = {"key": "", "browser": "chromium", "url": ""}


async def _live_start(
    signed: SignIn, svc: Service, status: int = 200, **context: Any
) -> HTMLResponse:
    who = signed.principal
    current = await svc.live.current(who.tenant, who.subject)
    return form_page(
        "live_start.html", signed, "live", _LIVE_FORM, status, current=current, **context
    )


@router.get("/admin/ui/live")
async def live_start_page(signed: Signed, svc: Svc) -> HTMLResponse:
    return await _live_start(signed, svc)


@router.post("/admin/ui/live")
async def live_open(request: Request, signed: Writer, svc: Svc) -> Response:
    """Open (or return to) a session as the admin's live browser, then show it."""
    typed = kept(request, _LIVE_FORM)
    try:
        live_id = await open_live(request, signed, svc, **typed)
    except InvalidInput as exc:
        return await _live_start(signed, svc, 400, error=exc.message, form=typed)
    return see_other(f"/admin/ui/live/{live_id}")


@router.get("/admin/ui/live/{id_}")
async def live_page(id_: str, signed: Signed, svc: Svc) -> HTMLResponse:
    return render("live.html", signed=signed, section="live", **await live_view(signed, svc, id_))


@router.post("/admin/ui/live/{id_}/ticket")
async def live_ticket(request: Request, id_: str, signed: Writer, svc: Svc) -> JSONResponse:
    """A one-shot ticket for the page's socket (the page asks again to reconnect), bound
    to this sign-in: signing out closes the socket."""
    return JSONResponse(await svc.live.ticket(signed.principal, id_, sign_in_of(request)))


@router.post("/admin/ui/live/{id_}/end")
async def live_end(id_: str, signed: Writer, svc: Svc) -> Response:
    await svc.live.end(signed.principal, id_)
    return see_other("/admin/ui/live")


# -- static files -------------------------------------------------------------------------


@router.get("/admin/static/{name}")
async def static(name: str) -> Response:
    """The UI's own scripts and styles, shipped inside the package (never a CDN)."""
    if name not in _STATIC:
        raise NotFound("file", name, field="name")
    return Response(
        static_file(name),
        media_type=_STATIC[name],
        headers={"cache-control": "private, max-age=86400"},
    )
