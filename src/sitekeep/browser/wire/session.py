"""The ``session`` module (W3C WebDriver BiDi §7.1): subscriptions to events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypedDict

from sitekeep.browser.wire.base import Command, Empty, given, listed

__all__ = [
    "SESSION_END",
    "SESSION_NEW",
    "SESSION_SUBSCRIBE",
    "SESSION_UNSUBSCRIBE",
    "SubscribeResult",
    "session_subscribe",
    "session_unsubscribe",
]

SESSION_NEW: Final = "session.new"
SESSION_END: Final = "session.end"
SESSION_SUBSCRIBE: Final = "session.subscribe"
SESSION_UNSUBSCRIBE: Final = "session.unsubscribe"


class SubscribeResult(TypedDict):
    subscription: str


def session_subscribe(
    events: Sequence[str], contexts: Sequence[str] | None = None
) -> Command[SubscribeResult]:
    """``session.subscribe`` to ``events`` (names, or whole modules), scoped to the
    top-level ``contexts`` when given (else every context)."""
    # No contexts (an empty list included) is every context: the parameter is left off.
    scoped = listed(contexts) if contexts else None
    return Command(SESSION_SUBSCRIBE, given(events=list(events), contexts=scoped))


def session_unsubscribe(subscriptions: Sequence[str]) -> Command[Empty]:
    """``session.unsubscribe`` by subscription ids (the form both engines accept)."""
    return Command(SESSION_UNSUBSCRIBE, {"subscriptions": list(subscriptions)})
