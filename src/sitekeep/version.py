"""sitekeep's version, in a module of its own: what reports it (``/healthz``, the MCP
server, ``sitekeep doctor``, the files ``sitekeep export`` writes) imports it from here, so
no module inside the package imports the package's ``__init__`` (``sitekeep.__version__``
re-exports it; docs/architecture.md)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
