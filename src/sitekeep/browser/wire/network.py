"""The ``network`` module (W3C WebDriver BiDi §7.4): intercepts, and the requests they
block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, NotRequired, TypedDict

from sitekeep.browser.wire.base import Command, Empty, Event, given, listed

__all__ = [
    "NETWORK_ADD_INTERCEPT",
    "NETWORK_AUTH_REQUIRED",
    "NETWORK_BEFORE_REQUEST_SENT",
    "NETWORK_CONTINUE_REQUEST",
    "NETWORK_CONTINUE_RESPONSE",
    "NETWORK_CONTINUE_WITH_AUTH",
    "NETWORK_FAIL_REQUEST",
    "NETWORK_FETCH_ERROR",
    "NETWORK_PROVIDE_RESPONSE",
    "NETWORK_REMOVE_INTERCEPT",
    "NETWORK_RESPONSE_COMPLETED",
    "NETWORK_RESPONSE_STARTED",
    "AddInterceptResult",
    "AuthAction",
    "Header",
    "InterceptPhase",
    "RequestParams",
    "UrlPattern",
    "header",
    "network_add_intercept",
    "network_continue_request",
    "network_continue_with_auth",
    "network_fail_request",
    "network_provide_response",
    "network_remove_intercept",
]

NETWORK_ADD_INTERCEPT: Final = "network.addIntercept"
NETWORK_CONTINUE_REQUEST: Final = "network.continueRequest"
NETWORK_CONTINUE_RESPONSE: Final = "network.continueResponse"
NETWORK_CONTINUE_WITH_AUTH: Final = "network.continueWithAuth"
NETWORK_FAIL_REQUEST: Final = "network.failRequest"
NETWORK_PROVIDE_RESPONSE: Final = "network.provideResponse"
NETWORK_REMOVE_INTERCEPT: Final = "network.removeIntercept"

InterceptPhase = Literal["beforeRequestSent", "responseStarted", "authRequired"]


class UrlPattern(TypedDict, total=False):
    """``network.UrlPatternPattern``: the parts given must match (strings, as the spec
    types them: a port is ``"8700"``)."""

    type: Literal["pattern"]
    protocol: str
    hostname: str
    port: str
    pathname: str
    search: str


class Header(TypedDict):
    """``network.Header`` with a string ``network.BytesValue``."""

    name: str
    value: dict[str, str]


class RequestParams(TypedDict, total=False):
    """The params of the network events (``network.BaseParameters`` and what each event
    adds): ``request`` holds the request's id (``request``), ``url`` and ``headers``."""

    context: str | None
    isBlocked: bool
    intercepts: list[str]
    navigation: str | None
    redirectCount: int
    request: dict[str, Any]
    response: dict[str, Any]
    errorText: str
    timestamp: int


NETWORK_AUTH_REQUIRED: Final[Event[RequestParams]] = Event("network.authRequired")
NETWORK_BEFORE_REQUEST_SENT: Final[Event[RequestParams]] = Event("network.beforeRequestSent")
NETWORK_FETCH_ERROR: Final[Event[RequestParams]] = Event("network.fetchError")
NETWORK_RESPONSE_COMPLETED: Final[Event[RequestParams]] = Event("network.responseCompleted")
NETWORK_RESPONSE_STARTED: Final[Event[RequestParams]] = Event("network.responseStarted")


class AddInterceptResult(TypedDict):
    intercept: str


class AuthAction(TypedDict):
    """How ``network.continueWithAuth`` answers a challenge: ``cancel``, ``default``,
    or ``provideCredentials`` with its ``credentials``
    (``{"type": "password", "username", "password"}``)."""

    action: Literal["default", "cancel", "provideCredentials"]
    credentials: NotRequired[dict[str, Any]]


def header(name: str, value: str) -> Header:
    """A ``network.Header`` carrying ``value`` as a string."""
    return {"name": name, "value": {"type": "string", "value": value}}


def network_add_intercept(
    phases: Sequence[InterceptPhase],
    *,
    contexts: Sequence[str] | None = None,
    url_patterns: Sequence[UrlPattern] | None = None,
) -> Command[AddInterceptResult]:
    """``network.addIntercept``: block the requests matching ``url_patterns`` (every
    request when None) in ``phases``, in the top-level ``contexts`` when given."""
    params = given(phases=list(phases), contexts=listed(contexts), urlPatterns=listed(url_patterns))
    return Command(NETWORK_ADD_INTERCEPT, params)


def network_remove_intercept(intercept: str) -> Command[Empty]:
    """``network.removeIntercept`` by the id :func:`network_add_intercept` gave."""
    return Command(NETWORK_REMOVE_INTERCEPT, {"intercept": intercept})


def network_continue_request(request: str) -> Command[Empty]:
    """``network.continueRequest``: a blocked request goes on unchanged."""
    return Command(NETWORK_CONTINUE_REQUEST, {"request": request})


def network_fail_request(request: str) -> Command[Empty]:
    """``network.failRequest``: a blocked request fails (the page sees a network error)."""
    return Command(NETWORK_FAIL_REQUEST, {"request": request})


def network_continue_with_auth(request: str, action: AuthAction) -> Command[Empty]:
    """``network.continueWithAuth``: answer a blocked ``network.authRequired``."""
    return Command(NETWORK_CONTINUE_WITH_AUTH, {"request": request, **action})


def network_provide_response(
    request: str,
    *,
    status_code: int,
    reason_phrase: str,
    headers: Sequence[Header],
    body: str,
) -> Command[Empty]:
    """``network.provideResponse``: answer a blocked request with this response (a
    string ``body``)."""
    return Command(
        NETWORK_PROVIDE_RESPONSE,
        {
            "request": request,
            "statusCode": status_code,
            "reasonPhrase": reason_phrase,
            "headers": list(headers),
            "body": {"type": "string", "value": body},
        },
    )
