"""The admin web UI, served by the same server at ``/admin`` (SPEC §11).

Server-rendered Jinja2 templates (``templates/``) with htmx for partial updates; htmx and
the UI's own script and styles ship inside the package (``static/``, see ``VENDORED``),
never fetched from a CDN. The pages call the same admin use cases as the admin API
(the service's rooms: ``admin``, ``catalogue``, ``sign_ins``, ``live``…); :mod:`.guard`
holds the sign-in cookie, CSRF and header rules.
"""

from __future__ import annotations

from fastapi import FastAPI

from sitekeep.api.ui.guard import SecurityHeaders
from sitekeep.api.ui.pages import router
from sitekeep.api.ui.profiles import router as profiles_router

__all__ = ["install"]


def install(app: FastAPI) -> None:
    """Serve the admin UI from ``app``, with its security headers on every ``/admin``
    response (the admin API's included)."""
    app.include_router(router)
    app.include_router(profiles_router)
    app.add_middleware(SecurityHeaders)
