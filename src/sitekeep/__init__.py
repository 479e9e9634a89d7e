"""sitekeep: real browsers for AI agents that stay signed in, over W3C WebDriver BiDi."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
