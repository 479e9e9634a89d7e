"""Every route of the app, flat: those of included routers too.

FastAPI 0.16x keeps an included router as one lazy entry of ``app.routes``
(``fastapi.routing.iter_route_contexts`` opens it); older releases copy its routes in.
Both the ``Allow`` header of a 405 and the OpenAPI statuses need the flat list.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from starlette.routing import BaseRoute, Route

__all__ = ["flat_routes"]


def flat_routes(routes: Sequence[BaseRoute]) -> Iterator[BaseRoute]:
    """Each route in ``routes``, with included routers opened."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # FastAPI before 0.16x: included routes are already flat
        yield from routes
        return
    for context in iter_route_contexts(routes):
        route = context.original_route
        if isinstance(route, Route) or not hasattr(route, "routes"):
            yield route
