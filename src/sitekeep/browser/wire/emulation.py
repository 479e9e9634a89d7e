"""The ``emulation`` module (W3C WebDriver BiDi §7.9)."""

from __future__ import annotations

from typing import Final

from sitekeep.browser.wire.base import Command, Empty

__all__ = ["EMULATION_SET_USER_AGENT_OVERRIDE", "emulation_set_user_agent_override"]

EMULATION_SET_USER_AGENT_OVERRIDE: Final = "emulation.setUserAgentOverride"


def emulation_set_user_agent_override(user_agent: str) -> Command[Empty]:
    """``emulation.setUserAgentOverride`` for the whole browser (every tab and frame)."""
    return Command(EMULATION_SET_USER_AGENT_OVERRIDE, {"userAgent": user_agent})
