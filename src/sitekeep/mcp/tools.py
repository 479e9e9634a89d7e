"""sitekeep's agent operations as MCP tools (SPEC §5): each parses its arguments, calls the
service it reaches through the lifespan context (:mod:`.calls`) and returns the service's
JSON dict (structured content, and the same JSON as text so a model reads ``url`` and
``title``).

Each tool is a function of this module, recorded with its name, annotations and
description by :func:`_tool`; :func:`sitekeep.mcp.server.build_server` registers them all.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Image
from mcp.types import TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from sitekeep.args import (
    MAX_NAME,
    MAX_URL,
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
    VersionChoice,
    unchecked,
)
from sitekeep.mcp.calls import JSON, Ctx, backing, guarded

__all__ = ["TOOLS", "Tool"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


@dataclass(frozen=True, slots=True)
class Tool:
    """One MCP tool: its function (errors guarded) and what ``tools/list`` says of it."""

    fn: Callable[..., Awaitable[Any]]
    name: str
    annotations: ToolAnnotations
    description: str


TOOLS: list[Tool] = []
"""Every tool, in the order ``tools/list`` names them."""


def _tool(name: str, annotations: ToolAnnotations, description: str) -> Callable[[F], F]:
    def record(fn: F) -> F:
        TOOLS.append(Tool(guarded()(fn), name, annotations, description))
        return fn

    return record


def _doc(model: type[BaseModel], field: str) -> str:
    """A field's description from ``sitekeep.args``, so every facade documents it alike."""
    return model.model_fields[field].description or ""


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
_OPENS = _ACTS  # restore_site_data=false deletes the saved site data
_LISTS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_RESTORES = ToolAnnotations(  # replaces the saved data, keeping it as a version
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)


async def _act(ctx: Ctx, key: str | None, op: str, **args: Any) -> JSON:
    """Run the page operation ``op`` in the call's session."""
    found, who = backing(ctx)
    return await found.service.sessions.act(who, found.session_of(ctx, key), op, **args)


# -- sessions -------------------------------------------------------------------------------


@_tool(
    "open_session",
    _OPENS,
    "Open this session's browser, or return to the one already open. A new browser "
    "gets the session's saved site data restored (cookies, localStorage, "
    "sessionStorage), then lands on `url` or the last page, so a signed-in session "
    "comes back signed in. fresh=true: close the open browser and start a new one "
    "(saved data is restored). insecure=true: accept bad TLS certificates; then "
    "nothing is restored and nothing deleted. restore_site_data=false: open without "
    "the saved data AND delete it (why this tool is marked destructive). "
    "profile=ID (from list_profiles): start a new browser signed in from that "
    "profile. country=CODE: run the browser through the workspace's proxy of that "
    "country. autosave=false: this session never saves by itself (by default it saves "
    "when its browser closes and every few minutes while in use, never trading a "
    "signed-in site for a signed-out one). Returns {key, url, title, site_data?}.",
)
async def open_session(
    ctx: Ctx,
    key: Key = None,
    url: Annotated[
        str | None, Field(description="Where to land: an http(s) URL.", max_length=MAX_URL)
    ] = None,
    browser: Annotated[str | None, Field(description="chromium (the default).")] = None,
    restore_site_data: Annotated[
        bool, Field(description="false: open without saved site data and delete it.")
    ] = True,
    fresh: Annotated[
        bool, Field(description="Close the open browser and start a new one.")
    ] = False,
    insecure: Annotated[
        bool, Field(description="Accept bad certificates; restores and deletes nothing.")
    ] = False,
    keep_user_agent: Annotated[
        bool | None,
        Field(
            description="true: run under the User-Agent the site data was saved under "
            "(for sites that bind a sign-in to it); kept for this session."
        ),
    ] = None,
    profile: Annotated[
        str | None,
        Field(description="A profile's id (list_profiles) to sign in from.", max_length=MAX_NAME),
    ] = None,
    country: Annotated[
        str | None,
        Field(description="Two-letter country code of the proxy to use.", max_length=MAX_NAME),
    ] = None,
    autosave: Annotated[bool | None, Field(description=_doc(OpenBody, "autosave"))] = None,
) -> JSON:
    found, who = backing(ctx)
    options = unchecked(
        OpenBody,
        key=found.session_of(ctx, key),
        url=url,
        browser=browser,
        restore_site_data=restore_site_data,
        fresh=fresh,
        insecure=insecure,
        keep_user_agent=keep_user_agent,
        profile=profile,
        country=country,
        autosave=autosave,
    )
    return await found.service.sessions.open(who, options)


@_tool(
    "save_site_data",
    _KEEPS,
    "Save the browser's cookies, localStorage and sessionStorage of every site this "
    "session visited, replacing the last save. Call it once, right after signing in "
    "(again only after something else worth keeping); a later open_session restores "
    "it, even after the browser closed. profile=ID also writes it into that profile "
    "(its creator, or an admin for a shared one). Returns counts and sites, never "
    "values, and signed_out: the sites this save turned from signed in to signed out "
    "(a save replaces: that is what comes back).",
)
async def save_site_data(
    ctx: Ctx,
    key: Key = None,
    indexed_db: Annotated[
        bool,
        Field(
            description="Also carry IndexedDB (sites that keep their sign-in there, "
            "such as Firebase Auth)."
        ),
    ] = False,
    profile: Annotated[
        str | None,
        Field(
            description="A profile's id to write the saved site data into.",
            max_length=MAX_NAME,
        ),
    ] = None,
) -> JSON:
    found, who = backing(ctx)
    options = unchecked(SaveBody, indexed_db=indexed_db, profile=profile)
    return await found.service.sessions.save_site_data(who, found.session_of(ctx, key), options)


@_tool(
    "list_profiles",
    _LISTS,
    "The profiles this caller may open sessions from: its own and the workspace's "
    "shared ones, each {id, name, visibility, country, cookie_domains, expires_at, "
    "status: empty|fresh|expires_soon|expired, sign_in: {host: {state: signed_in|"
    "signed_out|unknown, evidence, at}}}. Never values.",
)
async def list_profiles(ctx: Ctx) -> JSON:
    found, who = backing(ctx)
    return await found.service.profiles.list(who)


@_tool(
    "list_site_data_versions",
    _LISTS,
    "The session's earlier saved site data, newest first: every save keeps the one it "
    "replaced (the last few). Each {id, kept_at, saved_at, bytes, hosts: [{site, "
    "cookies, local, session, …_bytes}], sign_in}. Never values. To undo a save that "
    "signed a site out, restore_site_data_version the one before it. Returns {key, "
    "versions}.",
)
async def list_site_data_versions(ctx: Ctx, key: Key = None) -> JSON:
    found, who = backing(ctx)
    return await found.service.versions.of_session(who, found.session_of(ctx, key))


@_tool(
    "restore_site_data_version",
    _RESTORES,
    "Make an earlier version (its id from list_site_data_versions) the session's saved "
    "site data; the one it replaces is kept as a version, so this can be undone. The "
    "open browser keeps what it has: open_session(fresh=true) afterwards to get a "
    "browser with it. Returns {key, restored: {id, saved_at, hosts}, hint?}.",
)
async def restore_site_data_version(
    ctx: Ctx,
    version: Annotated[str, Field(description=_doc(VersionChoice, "version"), max_length=MAX_NAME)],
    key: Key = None,
) -> JSON:
    found, who = backing(ctx)
    choice = unchecked(VersionChoice, version=version)
    return await found.service.versions.restore_session_version(
        who, found.session_of(ctx, key), choice
    )


@_tool(
    "close_session",
    _KEEPS,
    "Close this session's browser. The session, its history and its saved site data "
    "stay: open_session brings it back. The session saves by itself first (unless "
    "opened with autosave=false), keeping the last save's data of a site that was "
    "signed in and is not now (named in autosave.guarded); autosave=false closes "
    "without it. Returns {key, closed, autosave?}.",
)
async def close_session(
    ctx: Ctx,
    key: Key = None,
    autosave: Annotated[
        bool, Field(description="false: close without the automatic save (this close only).")
    ] = True,
) -> JSON:
    found, who = backing(ctx)
    return await found.service.sessions.close(who, found.session_of(ctx, key), autosave=autosave)


@_tool(
    "run_flow",
    _ACTS,
    "Run several steps in one call. A step is {op, ...its arguments, on_error?}; op is "
    f"one of {', '.join(OPERATIONS)} (wait_for takes text or selector and timeout; "
    "assert_text takes text). A failed step stops the flow unless on_error is "
    "continue. Returns {ok, url, title, steps: [{step, op, status, url, title, "
    "error?, ...}]}.",
)
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
    found, who = backing(ctx)
    flow = unchecked(FlowBody, steps=steps, on_error=on_error)
    return await found.service.flows.run(who, found.session_of(ctx, key), flow)


# -- pages ----------------------------------------------------------------------------------


@_tool(
    "navigate",
    _GOES_TO,
    "Go to a URL and wait for the page to load. Returns {url, title}.",
)
async def navigate(
    ctx: Ctx,
    url: Annotated[str, Field(description=_doc(NavigateArgs, "url"))],
    key: Key = None,
) -> JSON:
    return await _act(ctx, key, "navigate", url=url)


@_tool("back", _MOVES, "Go one page back in the tab's history. Returns {url, title}.")
async def back(ctx: Ctx, key: Key = None) -> JSON:
    return await _act(ctx, key, "back")


@_tool("forward", _MOVES, "Go one page forward in the tab's history. Returns {url, title}.")
async def forward(ctx: Ctx, key: Key = None) -> JSON:
    return await _act(ctx, key, "forward")


@_tool(
    "snapshot",
    _LOOKS,
    "The page's interactive elements and headings, each with a ref (e1, e2…), role, "
    "name and state. Pass a ref to click, type, type_secret or select. Refs go stale "
    "when the page changes: after a navigation, or a click that loads a page, call "
    "snapshot again. Returns {url, title, snapshot, elements}.",
)
async def snapshot(ctx: Ctx, key: Key = None) -> JSON:
    return await _act(ctx, key, "snapshot")


@_tool(
    "click",
    _ACTS,
    "Click an element, named by a ref from snapshot or a CSS selector; waits for a "
    "page it loads. Returns {url, title}.",
)
async def click(ctx: Ctx, ref: Ref = None, selector: Selector = None, key: Key = None) -> JSON:
    return await _act(ctx, key, "click", ref=ref, selector=selector)


@_tool(
    "type",
    _ACTS,
    "Type text into a field (ref from snapshot, or selector), replacing what it "
    "holds; submit=true presses Enter after. For passwords use type_secret. "
    "Returns {url, title}.",
)
async def type_text(
    ctx: Ctx,
    text: Annotated[str, Field(description=_doc(TypeArgs, "text"))],
    ref: Ref = None,
    selector: Selector = None,
    submit: Submit = False,
    key: Key = None,
) -> JSON:
    return await _act(ctx, key, "type", text=text, ref=ref, selector=selector, submit=submit)


@_tool(
    "type_secret",
    _ACTS,
    "Type one value of a stored secret (a credential the user saved in sitekeep) "
    "into a field, without you ever seeing it: `secret` is its name, `field` which "
    "value (username, password…). Refused, typing nothing, on a host the secret is "
    "not allowed on. Returns {url, title, typed}.",
)
async def type_secret(
    ctx: Ctx,
    secret: Annotated[str, Field(description=_doc(TypeSecretArgs, "secret"))],
    field: Annotated[str, Field(description=_doc(TypeSecretArgs, "field"))],
    ref: Ref = None,
    selector: Selector = None,
    submit: Submit = False,
    key: Key = None,
) -> JSON:
    target = {"ref": ref, "selector": selector, "submit": submit}
    return await _act(ctx, key, "type_secret", secret=secret, field=field, **target)


@_tool(
    "press",
    _ACTS,
    "Press keys on the focused element; waits for a page it loads. Returns {url, title}.",
)
async def press(
    ctx: Ctx,
    keys: Annotated[str, Field(description=_doc(PressArgs, "keys"))],
    key: Key = None,
) -> JSON:
    return await _act(ctx, key, "press", keys=keys)


@_tool(
    "select",
    _ACTS,
    "Choose an option of a drop-down (ref from snapshot, or selector). "
    "Returns {url, title, selected}.",
)
async def select(
    ctx: Ctx,
    value: Annotated[str, Field(description=_doc(SelectArgs, "value"))],
    ref: Ref = None,
    selector: Selector = None,
    key: Key = None,
) -> JSON:
    return await _act(ctx, key, "select", value=value, ref=ref, selector=selector)


@_tool(
    "read",
    _LOOKS,
    "The page's visible text, or one element's; cut at max_chars with a marker. "
    "Returns {url, title, text, length, truncated}.",
)
async def read(
    ctx: Ctx,
    selector: Annotated[str | None, Field(description=_doc(ReadArgs, "selector"))] = None,
    max_chars: Annotated[int, Field(description="1 to 200000.")] = 20_000,
    key: Key = None,
) -> JSON:
    return await _act(ctx, key, "read", selector=selector, max_chars=max_chars)


@_tool(
    "screenshot",
    _LOOKS,
    "A PNG screenshot of the visible page, and its url and title.",
)
async def screenshot(ctx: Ctx, key: Key = None) -> list[Image | TextContent]:
    shot = await _act(ctx, key, "screenshot")
    png = base64.b64decode(shot.pop("data"))
    shot.pop("mime_type", None)
    return [Image(data=png, format="png"), TextContent(type="text", text=json.dumps(shot))]
