"""The ``input`` module (W3C WebDriver BiDi §7.7): trusted keyboard and pointer input.

Only ``browser.inputs`` sends these: every input goes through its gate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from sitekeep.browser.wire.base import Command, Empty

__all__ = [
    "INPUT_PERFORM_ACTIONS",
    "INPUT_RELEASE_ACTIONS",
    "INPUT_SET_FILES",
    "input_perform_actions",
    "input_release_actions",
]

INPUT_PERFORM_ACTIONS: Final = "input.performActions"
INPUT_RELEASE_ACTIONS: Final = "input.releaseActions"
INPUT_SET_FILES: Final = "input.setFiles"


def input_perform_actions(context: str, actions: Sequence[Mapping[str, Any]]) -> Command[Empty]:
    """``input.performActions`` of input ``actions`` (one source each) in ``context``."""
    return Command(INPUT_PERFORM_ACTIONS, {"context": context, "actions": list(actions)})


def input_release_actions(context: str) -> Command[Empty]:
    """``input.releaseActions`` in ``context``: every key and button held goes up."""
    return Command(INPUT_RELEASE_ACTIONS, {"context": context})
