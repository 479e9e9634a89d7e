"""The use cases: one room per kind, and the :class:`Service` that wires them.

HTTP, MCP, the CLI and the admin UI call these rooms and nothing below them. Every call
that affects a browser passes through one seam (``sitekeep.seam``): it locks the session,
journals each operation through one operation context (begin durable → work → mask →
apply → finish, SPEC §8), reattaches to (or silently reopens) its browser, records where
the browser landed in the history and writes the record back.

Rooms, each a module taking the service's :class:`~sitekeep.service.parts.Parts`::

    sessions    open, act (navigate, back, forward…), save, close, delete   SPEC §3, §5
    flows       run_flow                                                    SPEC §6
    views       current page, the sessions list, site data by host          SPEC §5
    profiles    create, list, read, change, delete, capture                 SPEC §9
    interop     storage-state import/export, the state preview              SPEC §9, §15
    catalogue   tokens, secrets, proxies behind the one admin gate          SPEC §1, §7, §14
    admin       the admin panes: sessions, history, journal, site data      SPEC §11
    signins     the admin UI's sign-ins                                     SPEC §11
    live        live sessions and tickets; relay: the socket                SPEC §10
    handover    WebDriver handovers                                         SPEC §21
    reaper      warm-up, the reaper, sitekeep stop, /metrics                SPEC §2, §13
    keys        the master key ring, rotation                               SPEC §12
    versions    the versions of saved site data: list, view, restore        issue #26
    checks      per-site sign-in checks of sessions and profiles, run now   SPEC §18
    autosave    automatic saves: close, reaper, stop, shutdown, checkpoints SPEC §18

``wiring`` wires them into :class:`Service`; ``parts`` is what they share, ``gates`` the
admin gate and who may take values out, ``panes`` the admin panes' views. Three rooms serve
the CLI without an open service, loading no more of the house than they use: ``doctor``
(the installation's health), ``journal`` (the journal read from a shell, SPEC §8) and
``files`` (the file side of import and export, SPEC §15).

Results are plain JSON-able dicts in the shapes of SPEC §5; none holds a value except the
owner's per-host view (``Views.site_data_host``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitekeep.lazy import lazy_names

__all__ = ["Service", "require_admin", "store_health"]

# Imported on first use (PEP 562, as the package ``sitekeep`` does): a room that needs no
# open service — ``doctor``, ``journal``, the file side of ``interop`` — loads without the
# whole house (``sitekeep journal replay`` stays a light process).
_LAZY = {
    "Service": "sitekeep.service.wiring",
    "require_admin": "sitekeep.service.gates",
    "store_health": "sitekeep.service.doctor",
}

if TYPE_CHECKING:
    from sitekeep.service.doctor import store_health
    from sitekeep.service.gates import require_admin
    from sitekeep.service.wiring import Service

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
