"""Names a package imports on first use (PEP 562), so importing the package stays light.

``sitekeep`` (``import sitekeep`` and the CLI's ``--help``) and ``sitekeep.service`` (a
room that needs no open service loads without the whole house) use it::

    __getattr__, __dir__ = lazy_names(__name__, {"Client": "sitekeep.client"}, globals())
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` for the names in ``homes`` (name → the
    module that defines it): a name is imported on first use and kept in ``namespace``
    (the package's ``globals()``), so the next use is a plain lookup.

    The ``__getattr__`` raises ``AttributeError`` for a name ``homes`` does not hold.
    """

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return getattr_, dir_
