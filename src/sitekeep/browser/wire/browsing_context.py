"""The ``browsingContext`` module (W3C WebDriver BiDi §7.3): tabs, frames, navigation."""

from __future__ import annotations

from typing import Any, Final, Literal, TypedDict

from sitekeep.browser.wire.base import Command, Empty, Event, given

__all__ = [
    "BROWSING_CONTEXT_CAPTURE_SCREENSHOT",
    "BROWSING_CONTEXT_CLOSE",
    "BROWSING_CONTEXT_CONTEXT_CREATED",
    "BROWSING_CONTEXT_CONTEXT_DESTROYED",
    "BROWSING_CONTEXT_CREATE",
    "BROWSING_CONTEXT_GET_TREE",
    "BROWSING_CONTEXT_LOAD",
    "BROWSING_CONTEXT_LOCATE_NODES",
    "BROWSING_CONTEXT_NAVIGATE",
    "BROWSING_CONTEXT_NAVIGATION_COMMITTED",
    "BROWSING_CONTEXT_NAVIGATION_STARTED",
    "BROWSING_CONTEXT_RELOAD",
    "BROWSING_CONTEXT_SET_VIEWPORT",
    "BROWSING_CONTEXT_TRAVERSE_HISTORY",
    "CaptureScreenshotResult",
    "ContextInfo",
    "CreateResult",
    "GetTreeResult",
    "ImageFormat",
    "LocateNodesResult",
    "Locator",
    "NavigateResult",
    "NavigationInfo",
    "ReadinessState",
    "browsing_context_capture_screenshot",
    "browsing_context_close",
    "browsing_context_create",
    "browsing_context_get_tree",
    "browsing_context_locate_nodes",
    "browsing_context_navigate",
    "browsing_context_reload",
    "browsing_context_set_viewport",
    "browsing_context_traverse_history",
    "css_locator",
]

BROWSING_CONTEXT_CAPTURE_SCREENSHOT: Final = "browsingContext.captureScreenshot"
BROWSING_CONTEXT_CLOSE: Final = "browsingContext.close"
BROWSING_CONTEXT_CREATE: Final = "browsingContext.create"
BROWSING_CONTEXT_GET_TREE: Final = "browsingContext.getTree"
BROWSING_CONTEXT_LOCATE_NODES: Final = "browsingContext.locateNodes"
BROWSING_CONTEXT_NAVIGATE: Final = "browsingContext.navigate"
BROWSING_CONTEXT_RELOAD: Final = "browsingContext.reload"
BROWSING_CONTEXT_SET_VIEWPORT: Final = "browsingContext.setViewport"
BROWSING_CONTEXT_TRAVERSE_HISTORY: Final = "browsingContext.traverseHistory"

ReadinessState = Literal["none", "interactive", "complete"]


class ContextInfo(TypedDict, total=False):
    """``browsingContext.Info``: a tab or frame, and its children (``None`` past
    ``maxDepth``)."""

    context: str
    url: str
    parent: str | None
    children: list[ContextInfo] | None
    userContext: str
    originalOpener: str | None


class NavigationInfo(TypedDict, total=False):
    """``browsingContext.NavigationInfo``: the params of the navigation events."""

    context: str
    navigation: str | None
    timestamp: int
    url: str


BROWSING_CONTEXT_CONTEXT_CREATED: Final[Event[ContextInfo]] = Event(
    "browsingContext.contextCreated"
)
BROWSING_CONTEXT_CONTEXT_DESTROYED: Final[Event[ContextInfo]] = Event(
    "browsingContext.contextDestroyed"
)
BROWSING_CONTEXT_NAVIGATION_STARTED: Final[Event[NavigationInfo]] = Event(
    "browsingContext.navigationStarted"
)
BROWSING_CONTEXT_NAVIGATION_COMMITTED: Final[Event[NavigationInfo]] = Event(
    "browsingContext.navigationCommitted"
)
BROWSING_CONTEXT_LOAD: Final[Event[NavigationInfo]] = Event("browsingContext.load")


class GetTreeResult(TypedDict):
    contexts: list[ContextInfo]


class CreateResult(TypedDict):
    context: str


class NavigateResult(TypedDict, total=False):
    navigation: str | None
    url: str


class LocateNodesResult(TypedDict):
    nodes: list[dict[str, Any]]
    """``script.NodeRemoteValue``s, each with its ``sharedId``."""


class CaptureScreenshotResult(TypedDict):
    data: str
    """The image, base64."""


class Locator(TypedDict):
    type: Literal["css", "xpath", "innerText", "accessibility", "context"]
    value: str


class ImageFormat(TypedDict, total=False):
    type: str
    quality: float


def css_locator(selector: str) -> Locator:
    """A ``browsingContext.CssLocator``."""
    return {"type": "css", "value": selector}


def browsing_context_get_tree(
    *, max_depth: int | None = None, root: str | None = None
) -> Command[GetTreeResult]:
    """``browsingContext.getTree``: every top-level context and its frames, or the tree
    under ``root``; ``max_depth`` 0 for the top level alone."""
    return Command(BROWSING_CONTEXT_GET_TREE, given(maxDepth=max_depth, root=root))


def browsing_context_create(
    kind: Literal["tab", "window"] = "tab", *, background: bool | None = None
) -> Command[CreateResult]:
    """``browsingContext.create`` of a new top-level ``kind`` (``background``: not
    brought to the front)."""
    return Command(BROWSING_CONTEXT_CREATE, given(type=kind, background=background))


def browsing_context_close(context: str) -> Command[Empty]:
    """``browsingContext.close`` of a top-level ``context``."""
    return Command(BROWSING_CONTEXT_CLOSE, {"context": context})


def browsing_context_navigate(
    context: str, url: str, *, wait: ReadinessState
) -> Command[NavigateResult]:
    """``browsingContext.navigate`` of ``context`` to ``url``, answered once the new
    document reaches ``wait``."""
    return Command(BROWSING_CONTEXT_NAVIGATE, {"context": context, "url": url, "wait": wait})


def browsing_context_reload(
    context: str, *, ignore_cache: bool | None = None, wait: ReadinessState | None = None
) -> Command[NavigateResult]:
    """``browsingContext.reload`` of ``context`` (Firefox refuses ``ignore_cache``)."""
    params = given(context=context, ignoreCache=ignore_cache, wait=wait)
    return Command(BROWSING_CONTEXT_RELOAD, params)


def browsing_context_traverse_history(context: str, delta: int) -> Command[Empty]:
    """``browsingContext.traverseHistory`` of ``context`` by ``delta`` entries."""
    return Command(BROWSING_CONTEXT_TRAVERSE_HISTORY, {"context": context, "delta": delta})


def browsing_context_locate_nodes(
    context: str, locator: Locator, *, max_node_count: int | None = None
) -> Command[LocateNodesResult]:
    """``browsingContext.locateNodes`` matching ``locator`` in ``context``."""
    params = given(context=context, locator=locator, maxNodeCount=max_node_count)
    return Command(BROWSING_CONTEXT_LOCATE_NODES, params)


def browsing_context_capture_screenshot(
    context: str, *, image_format: ImageFormat | None = None
) -> Command[CaptureScreenshotResult]:
    """``browsingContext.captureScreenshot`` of ``context``'s viewport, PNG unless
    ``image_format`` says otherwise."""
    params = given(context=context, format=image_format, origin="viewport")
    return Command(BROWSING_CONTEXT_CAPTURE_SCREENSHOT, params)


def browsing_context_set_viewport(
    context: str, width: int, height: int, *, device_pixel_ratio: float | None = None
) -> Command[Empty]:
    """``browsingContext.setViewport`` of ``context`` to ``width``×``height`` CSS px."""
    viewport = {"width": width, "height": height}
    params = given(context=context, viewport=viewport, devicePixelRatio=device_pixel_ratio)
    return Command(BROWSING_CONTEXT_SET_VIEWPORT, params)
