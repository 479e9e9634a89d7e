"""The MCP facade: sitekeep's agent operations as MCP tools and resources (SPEC §5).

Each tool parses its arguments, calls ``sitekeep.service`` and returns the service's JSON
dict (structured content, and the same JSON as text so a model reads ``url`` and
``title``). A :class:`~sitekeep.errors.SitekeepError` becomes an MCP error result in one
place, :func:`_guarded`, carrying ``{"error": {type, message, field?}}`` — the HTTP
error shape.

The same server serves stdio (``sitekeep mcp``) and streamable HTTP (``/mcp``): the
caller supplies the service, who makes each call, and the connection's default session.
"""

from __future__ import annotations

import base64
import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Collection
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import (
    CallToolResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field, ValidationError

from sitekeep import __version__
from sitekeep.args import (
    OPERATIONS,
    FlowBody,
    NavigateArgs,
    OpenBody,
    PressArgs,
    ReadArgs,
    SaveBody,
    SelectArgs,
    TypeArgs,
    TypeSecretArgs,
    invalid_input,
    unchecked,
)
from sitekeep.errors import NotFound, SitekeepError, error_json
from sitekeep.model import Principal
from sitekeep.service import Service

__all__ = ["DEFAULT_SESSION", "SESSION_HEADER", "PrincipalOf", "ServiceOf", "build_server"]

Ctx = Context[Any, Any]
ServiceOf = Callable[[], Service]
"""The service every call goes to (opened by the transport's owner)."""
PrincipalOf = Callable[[Ctx], Principal]
"""Who makes a call: fixed for stdio, from the bearer token for HTTP."""

DEFAULT_SESSION = "default"
SESSION_HEADER = "x-sitekeep-session"
"""HTTP header naming the connection's default session (stdio: ``SITEKEEP_SESSION``)."""

JSON = dict[str, Any]
P = ParamSpec("P")
T = TypeVar("T")

INSTRUCTIONS = """\
sitekeep drives a real Chromium browser that stays signed in between sessions.
Typical use: open_session → navigate → snapshot (refs e1, e2…) → click / type by ref.
After signing in, call save_site_data once; a later open_session comes back signed in.
Use type_secret for passwords: it types a stored credential you never see.
Every page tool returns {url, title} of where the browser landed. Omit `key` to work in
this connection's session."""


def _doc(model: type[BaseModel], field: str) -> str:
    """A field's description from ``sitekeep.args``, so every facade documents it alike."""
    return model.model_fields[field].description or ""


def _with_fields_of(
    model: type[BaseModel], *, exclude: Collection[str] = ()
) -> Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[T]]]:
    """Give a tool ``(ctx, key, **options)`` the parameters of ``model``'s fields after
    ``ctx`` and ``key`` (but those in ``exclude``): their types, bounds, defaults and
    descriptions as ``sitekeep.args`` writes them once for every facade."""

    def give(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        own = inspect.signature(fn, eval_str=True)
        head = list(own.parameters.values())[:2]
        fields = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=field.default,
                annotation=Annotated[
                    field.annotation, *field.metadata, Field(description=field.description)
                ],
            )
            for name, field in model.model_fields.items()
            if name not in exclude and name != "key"
        ]
        signature = inspect.Signature([*head, *fields], return_annotation=own.return_annotation)
        fn.__signature__ = signature  # type: ignore[attr-defined]
        return fn

    return give


Key = Annotated[
    str | None,
    Field(description="The session key; omit it to use this connection's session."),
]
Ref = Annotated[str | None, Field(description=_doc(TypeArgs, "ref"))]
Selector = Annotated[str | None, Field(description=_doc(TypeArgs, "selector"))]
Submit = Annotated[bool, Field(description=_doc(TypeArgs, "submit"))]

# Hints for clients (MCP ToolAnnotations): what a tool may do to the world.
_LOOKS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_MOVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)
_GOES_TO = _MOVES.model_copy(update={"idempotent_hint": True})
_ACTS = ToolAnnotations(  # a click, key or submit may do anything the page does: buy, send, delete
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)
_KEEPS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def _mcp_error(exc: SitekeepError, *, resource: bool) -> Exception:
    """The one place a sitekeep error becomes an MCP error: a tool's error result, or a
    resource read's protocol error, with the HTTP error body as its message."""
    message = json.dumps({"error": error_json(exc)}, ensure_ascii=False)
    if not resource:
        return ToolError(message)
    return ResourceNotFoundError(message) if isinstance(exc, NotFound) else ResourceError(message)


def _guarded(
    *, resource: bool = False
) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """Wrap a tool or resource function so a ``SitekeepError`` reaches the client as an
    MCP error; the signature (and so the input schema) is the wrapped function's."""

    def wrap(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        @functools.wraps(fn)
        async def call(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return await fn(*args, **kwargs)
            except SitekeepError as exc:
                raise _mcp_error(exc, resource=resource) from exc

        return call

    return wrap


class _Server(MCPServer):
    """An ``MCPServer`` whose ``resources/list`` names what the caller can read now: each
    of its tenant's sessions' current page and saved site data, and each saved host (the
    resource templates alone name nothing a client can read)."""

    def __init__(
        self, service_of: ServiceOf, principal_of: PrincipalOf, *args: Any, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._service_of = service_of
        self._principal_of = principal_of

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Ctx | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The SDK's call, but arguments of the wrong shape come back as the HTTP API's
        ``invalid_input`` naming the field: the SDK's own message quotes pydantic's
        ``input_value`` — the text typed, say — and no error may echo a value."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            error = _mcp_error(invalid_input(exc.__cause__), resource=False)
            raise ToolError(f"Error executing tool {name}: {error}") from None

    async def _handle_list_resources(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        context: Ctx = Context(request_context=ctx, mcp_server=self)
        try:
            found = await _readable(self._service_of(), self._principal_of(context))
        except SitekeepError as exc:
            raise _mcp_error(exc, resource=True) from exc
        return ListResourcesResult(resources=[*await self.list_resources(), *found])


async def _readable(service: Service, who: Principal) -> list[Resource]:
    """The resources of each of ``who``'s tenant's sessions (URIs of ``_resources``)."""
    found = []
    for row in await service.views.sessions(who):
        key = row["key"]
        base = f"sitekeep://sessions/{key}"
        found.append(_json_resource(f"{base}/current", f"{key}: current page"))
        data = await service.views.site_data(who, key)
        found.append(_json_resource(f"{base}/site-data", f"{key}: site data by host"))
        for host in data["hosts"]:
            found.append(_json_resource(host["uri"], f"{key}: {host['site']}"))
    return found


def _json_resource(uri: str, name: str) -> Resource:
    return Resource(uri=uri, name=name, mime_type="application/json")


def build_server(
    service_of: ServiceOf,
    principal_of: PrincipalOf,
    *,
    default_session: str = DEFAULT_SESSION,
) -> MCPServer:
    """The MCP server over a service.

    Args:
        service_of: returns the :class:`Service` (looked up per call, so the server can be
            built before the service opens).
        principal_of: returns who makes a call, from its context.
        default_session: the session a call without ``key`` works in, unless the HTTP
            request names one in ``X-Sitekeep-Session``.
    """
    server = _Server(
        service_of, principal_of, "sitekeep", instructions=INSTRUCTIONS, version=__version__
    )

    def session_of(ctx: Ctx, key: str | None) -> str:
        if key is not None:
            return key
        headers = ctx.headers
        return (headers.get(SESSION_HEADER) if headers else None) or default_session

    async def act(ctx: Ctx, key: str | None, op: str, **args: Any) -> JSON:
        who, session = principal_of(ctx), session_of(ctx, key)
        return await service_of().sessions.act(who, session, op, **args)

    _session_tools(server, service_of, principal_of, session_of)
    _page_tools(server, act)
    _resources(server, service_of, principal_of)
    return server


def _session_tools(
    server: MCPServer,
    service_of: ServiceOf,
    principal_of: PrincipalOf,
    session_of: Callable[[Ctx, str | None], str],
) -> None:
    @server.tool(
        name="open_session",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
        ),
        description=(
            "Open this session's browser, or return to the one already open. A new browser "
            "gets the session's saved site data restored (cookies, localStorage, "
            "sessionStorage), then lands on `url` or the last page, so a signed-in session "
            "comes back signed in. fresh=true: close the open browser and start a new one "
            "(saved data is restored). insecure=true: accept bad TLS certificates; then "
            "nothing is restored and nothing deleted. restore_site_data=false: open without "
            "the saved data AND delete it (why this tool is marked destructive). "
            "profile=ID (from list_profiles): start a new browser signed in from that "
            "profile. country=CODE: run the browser through the workspace's proxy of that "
            "country. Returns {key, url, title, site_data?}."
        ),
    )
    @_guarded()
    @_with_fields_of(OpenBody)
    async def open_session(ctx: Ctx, key: Key = None, **options: Any) -> JSON:
        opening = unchecked(OpenBody, key=session_of(ctx, key), **options)
        return await service_of().sessions.open(principal_of(ctx), opening)

    @server.tool(
        name="save_site_data",
        annotations=_KEEPS,
        description=(
            "Save the browser's cookies, localStorage and sessionStorage of every site this "
            "session visited, replacing the last save. Call it once, right after signing in "
            "(again only after something else worth keeping); a later open_session restores "
            "it, even after the browser closed. profile=ID also writes it into that profile "
            "(its creator, or an admin for a shared one). Returns counts and sites, never "
            "values."
        ),
    )
    @_guarded()
    @_with_fields_of(SaveBody, exclude=("full",))
    async def save_site_data(ctx: Ctx, key: Key = None, **options: Any) -> JSON:
        saving = unchecked(SaveBody, **options)
        return await service_of().sessions.save_site_data(
            principal_of(ctx), session_of(ctx, key), saving
        )

    @server.tool(
        name="list_profiles",
        annotations=ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
        description=(
            "The profiles this caller may open sessions from: its own and the workspace's "
            "shared ones, each {id, name, visibility, country, cookie_domains, expires_at, "
            "status: empty|fresh|expires_soon|expired}. Never values."
        ),
    )
    @_guarded()
    async def list_profiles(ctx: Ctx) -> JSON:
        return await service_of().profiles.list(principal_of(ctx))

    @server.tool(
        name="close_session",
        annotations=_KEEPS,
        description=(
            "Close this session's browser. The session, its history and its saved site data "
            "stay: open_session brings it back. Unsaved sign-ins are lost, so call "
            "save_site_data first. Returns {key, closed}."
        ),
    )
    @_guarded()
    async def close_session(ctx: Ctx, key: Key = None) -> JSON:
        return await service_of().sessions.close(principal_of(ctx), session_of(ctx, key))

    @server.tool(
        name="run_flow",
        annotations=_ACTS,
        description=(
            "Run several steps in one call. A step is {op, ...its arguments, on_error?}; op is "
            f"one of {', '.join(OPERATIONS)} (wait_for takes text or selector and timeout; "
            "assert_text takes text). A failed step stops the flow unless on_error is "
            "continue. Returns {ok, url, title, steps: [{step, op, status, url, title, "
            "error?, ...}]}."
        ),
    )
    @_guarded()
    async def run_flow(
        ctx: Ctx,
        steps: Annotated[
            list[dict[str, Any]],
            Field(description='e.g. [{"op": "navigate", "url": "https://…"}, {"op": "snapshot"}]'),
        ],
        on_error: Annotated[
            Literal["stop", "continue"], Field(description="For steps that do not say.")
        ] = "stop",
        key: Key = None,
    ) -> JSON:
        flow = unchecked(FlowBody, steps=steps, on_error=on_error)
        return await service_of().flows.run(principal_of(ctx), session_of(ctx, key), flow)


def _page_tools(server: MCPServer, act: Callable[..., Awaitable[JSON]]) -> None:
    @server.tool(
        name="navigate",
        annotations=_GOES_TO,
        description="Go to a URL and wait for the page to load. Returns {url, title}.",
    )
    @_guarded()
    async def navigate(
        ctx: Ctx,
        url: Annotated[str, Field(description=_doc(NavigateArgs, "url"))],
        key: Key = None,
    ) -> JSON:
        return await act(ctx, key, "navigate", url=url)

    @server.tool(
        name="back",
        annotations=_MOVES,
        description="Go one page back in the tab's history. Returns {url, title}.",
    )
    @_guarded()
    async def back(ctx: Ctx, key: Key = None) -> JSON:
        return await act(ctx, key, "back")

    @server.tool(
        name="forward",
        annotations=_MOVES,
        description="Go one page forward in the tab's history. Returns {url, title}.",
    )
    @_guarded()
    async def forward(ctx: Ctx, key: Key = None) -> JSON:
        return await act(ctx, key, "forward")

    @server.tool(
        name="snapshot",
        annotations=_LOOKS,
        description=(
            "The page's interactive elements and headings, each with a ref (e1, e2…), role, "
            "name and state. Pass a ref to click, type, type_secret or select. Refs go stale "
            "when the page changes: after a navigation, or a click that loads a page, call "
            "snapshot again. Returns {url, title, snapshot, elements}."
        ),
    )
    @_guarded()
    async def snapshot(ctx: Ctx, key: Key = None) -> JSON:
        return await act(ctx, key, "snapshot")

    @server.tool(
        name="click",
        annotations=_ACTS,
        description=(
            "Click an element, named by a ref from snapshot or a CSS selector; waits for a "
            "page it loads. Returns {url, title}."
        ),
    )
    @_guarded()
    async def click(ctx: Ctx, ref: Ref = None, selector: Selector = None, key: Key = None) -> JSON:
        return await act(ctx, key, "click", ref=ref, selector=selector)

    @server.tool(
        name="type",
        annotations=_ACTS,
        description=(
            "Type text into a field (ref from snapshot, or selector), replacing what it "
            "holds; submit=true presses Enter after. For passwords use type_secret. "
            "Returns {url, title}."
        ),
    )
    @_guarded()
    async def type_text(
        ctx: Ctx,
        text: Annotated[str, Field(description=_doc(TypeArgs, "text"))],
        ref: Ref = None,
        selector: Selector = None,
        submit: Submit = False,
        key: Key = None,
    ) -> JSON:
        return await act(ctx, key, "type", text=text, ref=ref, selector=selector, submit=submit)

    @server.tool(
        name="type_secret",
        annotations=_ACTS,
        description=(
            "Type one value of a stored secret (a credential the user saved in sitekeep) "
            "into a field, without you ever seeing it: `secret` is its name, `field` which "
            "value (username, password…). Refused, typing nothing, on a host the secret is "
            "not allowed on. Returns {url, title, typed}."
        ),
    )
    @_guarded()
    async def type_secret(
        ctx: Ctx,
        secret: Annotated[str, Field(description=_doc(TypeSecretArgs, "secret"))],
        field: Annotated[str, Field(description=_doc(TypeSecretArgs, "field"))],
        ref: Ref = None,
        selector: Selector = None,
        submit: Submit = False,
        key: Key = None,
    ) -> JSON:
        return await act(
            ctx,
            key,
            "type_secret",
            secret=secret,
            field=field,
            ref=ref,
            selector=selector,
            submit=submit,
        )

    @server.tool(
        name="press",
        annotations=_ACTS,
        description=(
            "Press keys on the focused element; waits for a page it loads. Returns {url, title}."
        ),
    )
    @_guarded()
    async def press(
        ctx: Ctx,
        keys: Annotated[str, Field(description=_doc(PressArgs, "keys"))],
        key: Key = None,
    ) -> JSON:
        return await act(ctx, key, "press", keys=keys)

    @server.tool(
        name="select",
        annotations=_ACTS,
        description=(
            "Choose an option of a drop-down (ref from snapshot, or selector). "
            "Returns {url, title, selected}."
        ),
    )
    @_guarded()
    async def select(
        ctx: Ctx,
        value: Annotated[str, Field(description=_doc(SelectArgs, "value"))],
        ref: Ref = None,
        selector: Selector = None,
        key: Key = None,
    ) -> JSON:
        return await act(ctx, key, "select", value=value, ref=ref, selector=selector)

    @server.tool(
        name="read",
        annotations=_LOOKS,
        description=(
            "The page's visible text, or one element's; cut at max_chars with a marker. "
            "Returns {url, title, text, length, truncated}."
        ),
    )
    @_guarded()
    async def read(
        ctx: Ctx,
        selector: Annotated[str | None, Field(description=_doc(ReadArgs, "selector"))] = None,
        max_chars: Annotated[int, Field(description="1 to 200000.")] = 20_000,
        key: Key = None,
    ) -> JSON:
        return await act(ctx, key, "read", selector=selector, max_chars=max_chars)

    @server.tool(
        name="screenshot",
        annotations=_LOOKS,
        description="A PNG screenshot of the visible page, and its url and title.",
    )
    @_guarded()
    async def screenshot(ctx: Ctx, key: Key = None) -> list[Image | TextContent]:
        shot = await act(ctx, key, "screenshot")
        png = base64.b64decode(shot.pop("data"))
        shot.pop("mime_type", None)
        return [Image(data=png, format="png"), TextContent(type="text", text=json.dumps(shot))]


def _resources(server: MCPServer, service_of: ServiceOf, principal_of: PrincipalOf) -> None:
    def dump(value: JSON) -> str:
        return json.dumps(value, ensure_ascii=False)

    @server.resource(
        "sitekeep://sessions/{key}/current",
        name="current-page",
        description="The session's current page and a summary of its saved site data.",
        mime_type="application/json",
    )
    @_guarded(resource=True)
    async def current(key: str, ctx: Ctx) -> str:
        return dump(await service_of().views.current(principal_of(ctx), key))

    @server.resource(
        "sitekeep://sessions/{key}/site-data",
        name="site-data",
        description="The session's saved site data by host: counts only, never values.",
        mime_type="application/json",
    )
    @_guarded(resource=True)
    async def site_data(key: str, ctx: Ctx) -> str:
        return dump(await service_of().views.site_data(principal_of(ctx), key))

    @server.resource(
        "sitekeep://sessions/{key}/site-data/{site}",
        name="site-data-host",
        description="One host's saved cookies and storage in full; httpOnly values as •••.",
        mime_type="application/json",
    )
    @_guarded(resource=True)
    async def site_data_host(key: str, site: str, ctx: Ctx) -> str:
        return dump(await service_of().views.site_data_host(principal_of(ctx), key, site))
