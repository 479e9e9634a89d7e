"""sitekeep: real browsers for AI agents that stay signed in, over W3C WebDriver BiDi.

The public names are imported on first use (PEP 562), so ``import sitekeep`` — and the
``sitekeep`` command's ``--help`` — stay fast: ``Client`` and ``AsyncClient`` (the HTTP
API's Python client, ``sitekeep.client``); ``restore_into``, ``save_from``,
``dump_snapshot`` and ``load_snapshot`` (your own Selenium WebDriver, ``sitekeep.attach``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitekeep.lazy import lazy_names
from sitekeep.version import __version__

__all__ = [
    "AsyncClient",
    "Client",
    "__version__",
    "dump_snapshot",
    "load_snapshot",
    "restore_into",
    "save_from",
]

_LAZY = {
    "AsyncClient": "sitekeep.client",
    "Client": "sitekeep.client",
    "dump_snapshot": "sitekeep.attach",
    "load_snapshot": "sitekeep.attach",
    "restore_into": "sitekeep.attach",
    "save_from": "sitekeep.attach",
}

if TYPE_CHECKING:
    from sitekeep.attach import dump_snapshot, load_snapshot, restore_into, save_from
    from sitekeep.client import AsyncClient, Client

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
