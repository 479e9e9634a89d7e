"""What every command and event of the wire is made of (W3C WebDriver BiDi §5 Protocol).

A :class:`Command` is a method and its params as they go on the socket (camelCase, as
the spec spells them), typed with the shape of its result; :func:`call` sends one over a
:class:`Channel` (``browser.bidi.BidiConnection``, or anything with its ``send``). An
:class:`Event` is an event's method name, typed with the shape of its params.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypedDict, TypeVar, cast

__all__ = ["Channel", "Command", "Empty", "Event", "call"]

R = TypeVar("R")
P = TypeVar("P")
T = TypeVar("T")


class Channel(Protocol):
    """Where commands go: a BiDi socket (``BidiConnection.send``)."""

    async def send(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Command(Generic[R]):
    """One BiDi command (§5 ``Command``, less its id, which the socket assigns).

    Attributes:
        method: the spec's name, e.g. ``storage.getCookies``.
        params: its parameters as on the wire (camelCase keys).
    """

    method: str
    params: Mapping[str, Any]


class Event(str, Generic[P]):
    """An event's method name (§5 ``Event``), e.g. ``browsingContext.load``, typed with
    the shape of its ``params`` (``P``). It is the name itself (a ``str``), so it keys
    listeners and subscriptions as the name would."""

    __slots__ = ()


class Empty(TypedDict):
    """The result of a command that returns nothing (``EmptyResult``, §5)."""


async def call(channel: Channel, command: Command[R], *, timeout: float | None = None) -> R:
    """Send ``command`` over ``channel`` and wait for its result.

    Args:
        timeout: seconds; the channel's default when None.

    Returns:
        The command's ``result`` object, in the shape ``R`` names.

    Raises:
        BidiError, BidiTimeout, BrowserUnavailable: as ``BidiConnection.send``.
    """
    return cast(R, await channel.send(command.method, command.params, timeout=timeout))


def given(**params: Any) -> dict[str, Any]:
    """``params`` (camelCase, in wire order) less those that are None: an optional
    parameter not given is left off the wire."""
    return {name: value for name, value in params.items() if value is not None}


def listed(values: Iterable[T] | None) -> list[T] | None:
    """``values`` as a JSON array, or None (left off the wire by :func:`given`)."""
    return None if values is None else list(values)
