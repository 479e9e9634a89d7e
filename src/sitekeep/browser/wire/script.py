"""The ``script`` module (W3C WebDriver BiDi §7.5): running JavaScript in pages, and the
values that cross (``LocalValue`` in, ``RemoteValue`` out)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, TypedDict

from sitekeep.browser.wire.base import Command, Empty, Event, given, listed

__all__ = [
    "SCRIPT_ADD_PRELOAD_SCRIPT",
    "SCRIPT_CALL_FUNCTION",
    "SCRIPT_EVALUATE",
    "SCRIPT_GET_REALMS",
    "SCRIPT_MESSAGE",
    "SCRIPT_REMOVE_PRELOAD_SCRIPT",
    "AddPreloadScriptResult",
    "EvaluateResult",
    "GetRealmsResult",
    "LocalValue",
    "MessageParams",
    "RealmInfo",
    "RemoteValue",
    "ResultOwnership",
    "SerializationOptions",
    "Target",
    "channel_value",
    "context_target",
    "local_value",
    "realm_target",
    "script_add_preload_script",
    "script_call_function",
    "script_evaluate",
    "script_get_realms",
    "script_remove_preload_script",
    "shared_reference",
]

SCRIPT_ADD_PRELOAD_SCRIPT: Final = "script.addPreloadScript"
SCRIPT_CALL_FUNCTION: Final = "script.callFunction"
SCRIPT_EVALUATE: Final = "script.evaluate"
SCRIPT_GET_REALMS: Final = "script.getRealms"
SCRIPT_REMOVE_PRELOAD_SCRIPT: Final = "script.removePreloadScript"

ResultOwnership = Literal["root", "none"]
LocalValue = dict[str, Any]
"""A ``script.LocalValue`` (a primitive, a ``SharedReference``, a channel…)."""


class Target(TypedDict, total=False):
    """``script.Target``: a realm, or a context (and a sandbox in it)."""

    realm: str
    context: str
    sandbox: str


class SerializationOptions(TypedDict, total=False):
    maxDomDepth: int | None
    maxObjectDepth: int | None
    includeShadowTree: Literal["none", "open", "all"]


class RemoteValue(TypedDict, total=False):
    """``script.RemoteValue``: ``value`` as its ``type`` serialises it; a node also
    carries its ``sharedId``."""

    type: str
    value: Any
    sharedId: str
    handle: str


class EvaluateResult(TypedDict, total=False):
    """``script.EvaluateResult``: ``type`` ``success`` with ``result``, or ``exception``
    with ``exceptionDetails``."""

    type: Literal["success", "exception"]
    result: RemoteValue
    exceptionDetails: dict[str, Any]
    realm: str


class RealmInfo(TypedDict, total=False):
    realm: str
    origin: str
    type: str
    context: str
    sandbox: str


class GetRealmsResult(TypedDict):
    realms: list[RealmInfo]


class AddPreloadScriptResult(TypedDict):
    script: str


class MessageSource(TypedDict, total=False):
    realm: str
    context: str


class MessageParams(TypedDict, total=False):
    """``script.MessageParameters``: what a page sent on a channel."""

    channel: str
    data: RemoteValue
    source: MessageSource


SCRIPT_MESSAGE: Final[Event[MessageParams]] = Event("script.message")


def context_target(context: str, *, sandbox: str | None = None) -> Target:
    """A ``script.ContextTarget``: the context's window realm, or its ``sandbox``."""
    return {"context": context, "sandbox": sandbox} if sandbox else {"context": context}


def realm_target(realm: str) -> Target:
    """A ``script.RealmTarget``."""
    return {"realm": realm}


def local_value(value: Any) -> LocalValue:
    """A ``script.LocalValue`` for a primitive: a boolean, a string, a number, None.

    Raises:
        TypeError: anything else.
    """
    if isinstance(value, bool):
        return {"type": "boolean", "value": value}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    if isinstance(value, int | float):
        return {"type": "number", "value": value}
    if value is None:
        return {"type": "null"}
    raise TypeError(f"no BiDi local value for {type(value).__name__}")


def shared_reference(shared_id: str) -> LocalValue:
    """A ``script.SharedReference``: a node by the ``sharedId`` a result gave it."""
    return {"sharedId": shared_id}


def channel_value(channel: str) -> LocalValue:
    """A ``script.ChannelValue``: a function the page calls to send ``script.message``
    events on ``channel``."""
    return {"type": "channel", "value": {"channel": channel}}


def script_evaluate(
    expression: str,
    target: Target,
    *,
    await_promise: bool,
    result_ownership: ResultOwnership | None = "none",
) -> Command[EvaluateResult]:
    """``script.evaluate`` of ``expression`` in ``target``."""
    params = given(
        expression=expression,
        target=target,
        awaitPromise=await_promise,
        resultOwnership=result_ownership,
    )
    return Command(SCRIPT_EVALUATE, params)


def script_call_function(
    function_declaration: str,
    target: Target,
    *,
    await_promise: bool,
    arguments: Sequence[LocalValue] | None = None,
    result_ownership: ResultOwnership | None = "none",
    serialization_options: SerializationOptions | None = None,
) -> Command[EvaluateResult]:
    """``script.callFunction`` of ``function_declaration`` with ``arguments`` in
    ``target``."""
    params = given(
        functionDeclaration=function_declaration,
        arguments=listed(arguments),
        target=target,
        awaitPromise=await_promise,
        resultOwnership=result_ownership,
        serializationOptions=serialization_options,
    )
    return Command(SCRIPT_CALL_FUNCTION, params)


def script_get_realms(*, kind: str | None = None) -> Command[GetRealmsResult]:
    """``script.getRealms``, of one ``kind`` (``window``…) when given."""
    return Command(SCRIPT_GET_REALMS, given(type=kind))


def script_add_preload_script(
    function_declaration: str,
    *,
    arguments: Sequence[LocalValue] | None = None,
    contexts: Sequence[str] | None = None,
) -> Command[AddPreloadScriptResult]:
    """``script.addPreloadScript``: ``function_declaration`` runs in every new document
    (of the top-level ``contexts`` when given) before the page's own scripts."""
    params = given(
        functionDeclaration=function_declaration,
        arguments=listed(arguments),
        contexts=listed(contexts),
    )
    return Command(SCRIPT_ADD_PRELOAD_SCRIPT, params)


def script_remove_preload_script(script: str) -> Command[Empty]:
    """``script.removePreloadScript`` by the id :func:`script_add_preload_script` gave."""
    return Command(SCRIPT_REMOVE_PRELOAD_SCRIPT, {"script": script})
