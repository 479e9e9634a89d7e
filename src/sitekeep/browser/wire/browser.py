"""The ``browser`` module (W3C WebDriver BiDi §7.2): the browser and its user contexts."""

from __future__ import annotations

from typing import Final, TypedDict

from sitekeep.browser.wire.base import Command

__all__ = [
    "BROWSER_CLOSE",
    "BROWSER_CREATE_USER_CONTEXT",
    "BROWSER_GET_USER_CONTEXTS",
    "BROWSER_SET_DOWNLOAD_BEHAVIOR",
    "GetUserContextsResult",
    "UserContextInfo",
    "browser_get_user_contexts",
]

BROWSER_CLOSE: Final = "browser.close"
BROWSER_CREATE_USER_CONTEXT: Final = "browser.createUserContext"
BROWSER_GET_USER_CONTEXTS: Final = "browser.getUserContexts"
BROWSER_SET_DOWNLOAD_BEHAVIOR: Final = "browser.setDownloadBehavior"


class UserContextInfo(TypedDict):
    userContext: str


class GetUserContextsResult(TypedDict):
    userContexts: list[UserContextInfo]


def browser_get_user_contexts() -> Command[GetUserContextsResult]:
    """``browser.getUserContexts``: ``default`` and every one made since (Firefox's
    containers too)."""
    return Command(BROWSER_GET_USER_CONTEXTS, {})
