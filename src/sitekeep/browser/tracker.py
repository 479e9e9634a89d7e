"""Capture on leave: an exact copy of the localStorage of every origin the browser has left.

The premise (HTML Web Storage §11.2): an origin's localStorage can only change while a
document of that origin lives in the browser — workers have no localStorage. A preload
script (``scripts.PRELOAD``, installed once at browser start with ``script.addPreloadScript``)
makes every document report on the ``sitekeep.leave`` channel when it is born and, on
``pagehide``, its origin's whole localStorage. So, while sitekeep's BiDi socket listens:

* an origin with no live document has, as its copy, exactly what its last document saw as
  it left — nothing can have changed it since;
* an origin with a live document is read directly at save time;
* an origin whose copy may be stale (a document whose ``left`` report never came, a frame
  that may see partitioned storage, a spare page a service worker answered, a socket that
  closed and missed reports) is read through the spare tab instead.

A browser this process started is tracked from birth, so an origin it never reported on is
known to be empty (or to hold what restore wrote). A browser reattached after a restart is
not: its first save reads every origin through the spare tab, then :meth:`resync` makes the
copies exact again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sitekeep.browser.scripts import CHANNEL

__all__ = ["LeaveTracker"]

log = logging.getLogger(__name__)

_MAX_COPIES = 256


@dataclass
class _Doc:
    origin: str
    trusted: bool
    context: str | None = None


@dataclass
class LeaveTracker:
    """The copies for one browser generation, fed by ``script.message`` events.

    Attributes:
        complete: True while every report since birth (or since the last resync) arrived.
        from_birth: True when tracking began before the browser loaded any page.
    """

    complete: bool = False
    from_birth: bool = False
    _copies: dict[str, dict[str, str]] = field(default_factory=dict)
    _live: dict[str, _Doc] = field(default_factory=dict)
    _by_context: dict[str, str] = field(default_factory=dict)
    _tainted: set[str] = field(default_factory=set)
    _changed: set[str] = field(default_factory=set)

    @classmethod
    def at_birth(cls) -> LeaveTracker:
        """A tracker for a browser that has loaded nothing yet."""
        return cls(complete=True, from_birth=True)

    def on_message(self, params: Mapping[str, Any]) -> None:
        """Feed one ``script.message`` event's params (other channels are ignored)."""
        if params.get("channel") != CHANNEL:
            return
        data = params.get("data") or {}
        try:
            report = json.loads(data.get("value", ""))
            origin = str(report["origin"])
            doc = str(report["doc"])
        except (ValueError, KeyError, TypeError):
            log.warning("dropped a malformed leave report")
            return
        self._changed.add(origin)
        trusted = bool(report.get("trusted"))
        context = (params.get("source") or {}).get("context")
        if report.get("t") == "born":
            if context is not None:
                self._died(self._by_context.get(context))  # a context holds one document
                self._by_context[context] = doc
            self._live[doc] = _Doc(origin, trusted, context)
            if not trusted:
                self._tainted.add(origin)
            return
        self._live.pop(doc, None)
        local = report.get("local")
        if trusted and isinstance(local, dict):
            self._store(origin, {str(k): str(v) for k, v in local.items()})
        else:
            self._tainted.add(origin)
            self._copies.pop(origin, None)

    def on_context_destroyed(self, params: Mapping[str, Any]) -> None:
        """Feed a ``browsingContext.contextDestroyed`` event: its documents are gone."""
        self._died(self._by_context.pop(str(params.get("context")), None))
        for child in params.get("children") or ():
            self.on_context_destroyed(child)

    def _died(self, doc: str | None) -> None:
        """``doc`` is gone; without its leave report its origin's copy is unsafe until the
        next trusted report (which, coming after the death, sees all it wrote)."""
        gone = self._live.pop(doc, None) if doc is not None else None
        if gone is not None:
            self._tainted.add(gone.origin)
            self._copies.pop(gone.origin, None)

    def _store(self, origin: str, local: dict[str, str]) -> None:
        self._copies.pop(origin, None)
        self._copies[origin] = local
        self._tainted.discard(origin)
        while len(self._copies) > _MAX_COPIES:
            evicted = next(iter(self._copies))
            del self._copies[evicted]
            self._tainted.add(evicted)

    def lost(self) -> None:
        """The socket closed: reports may have been missed, so no copy can be trusted."""
        self.complete = False
        self.from_birth = False
        self._copies.clear()
        self._live.clear()
        self._by_context.clear()

    def invalidate(self, origin: str) -> None:
        """Forget ``origin``'s copy (a service worker's page ran in the spare tab)."""
        self._copies.pop(origin, None)
        self._tainted.add(origin)

    def copy(self, origin: str, alive_docs: Iterable[str]) -> dict[str, str] | None:
        """The exact localStorage of ``origin``, or None when it must be read.

        Args:
            origin: a serialised origin.
            alive_docs: ids of the documents alive now; a document that was born, is not
                alive, and never reported leaving makes its origin's copy unsafe.
        """
        if not self.complete or origin in self._tainted:
            return None
        alive = set(alive_docs)
        if any(d.origin == origin and doc not in alive for doc, d in self._live.items()):
            return None  # a document of this origin died without a report
        if origin in self._copies:
            return dict(self._copies[origin])
        return {} if self.from_birth else None

    def begin(self) -> None:
        """Start noting which origins change, for :meth:`resync` / :meth:`wrote`."""
        self._changed.clear()

    def wrote(self, local_by_origin: Mapping[str, Mapping[str, str]]) -> None:
        """Restore wrote these stores (no document of theirs lived since)."""
        for origin, local in local_by_origin.items():
            if origin not in self._changed:
                self._store(origin, dict(local))

    def resync(
        self,
        read: Mapping[str, Mapping[str, str]],
        live_docs: Mapping[str, tuple[str, bool]],
    ) -> None:
        """After a full read: trust the copies read, except of origins reported on since
        :meth:`begin` (their copy may be newer than our read).

        Args:
            read: origin → localStorage, as read by the save.
            live_docs: doc id → (origin, trusted) of every document alive at the read.
        """
        self._live = {doc: _Doc(o, t) for doc, (o, t) in live_docs.items()}
        self._by_context.clear()
        self._tainted = set()
        for origin, local in read.items():
            if origin not in self._changed:
                self._store(origin, dict(local))
            else:
                self._tainted.add(origin)
        self._tainted |= {o for o, t in live_docs.values() if not t}
        self.complete = True
