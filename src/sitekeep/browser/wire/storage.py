"""The ``storage`` module (W3C WebDriver BiDi §7.6): the cookie jar."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypedDict

from sitekeep.browser.wire.base import Command, Empty

__all__ = [
    "STORAGE_DELETE_COOKIES",
    "STORAGE_GET_COOKIES",
    "STORAGE_SET_COOKIE",
    "CookieFilter",
    "GetCookiesResult",
    "storage_delete_cookies",
    "storage_get_cookies",
    "storage_set_cookie",
]

STORAGE_DELETE_COOKIES: Final = "storage.deleteCookies"
STORAGE_GET_COOKIES: Final = "storage.getCookies"
STORAGE_SET_COOKIE: Final = "storage.setCookie"


class CookieFilter(TypedDict, total=False):
    """``storage.CookieFilter``: the cookies whose fields equal these."""

    name: str
    domain: str
    path: str


class GetCookiesResult(TypedDict, total=False):
    cookies: list[dict[str, Any]]
    """``network.Cookie``s (``sitekeep.cookies.from_bidi`` reads them)."""
    partitionKey: dict[str, Any]


def storage_get_cookies(*, user_context: str | None = None) -> Command[GetCookiesResult]:
    """``storage.getCookies``: the whole jar, or the one of ``user_context``'s storage
    key partition."""
    if user_context is None:
        return Command(STORAGE_GET_COOKIES, {})
    partition = {"type": "storageKey", "userContext": user_context}
    return Command(STORAGE_GET_COOKIES, {"partition": partition})


def storage_set_cookie(cookie: Mapping[str, Any]) -> Command[Empty]:
    """``storage.setCookie`` of a ``storage.PartialCookie`` (``sitekeep.cookies.to_bidi``)."""
    return Command(STORAGE_SET_COOKIE, {"cookie": cookie})


def storage_delete_cookies(cookie_filter: CookieFilter) -> Command[Empty]:
    """``storage.deleteCookies`` of every cookie ``cookie_filter`` matches."""
    return Command(STORAGE_DELETE_COOKIES, {"filter": cookie_filter})
