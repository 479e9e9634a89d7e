"""Capture on leave: an exact copy of the localStorage of every origin the browser has left.

The premise (HTML Web Storage §11.2): an origin's localStorage can only change while a
document of that origin lives in the browser — workers have no localStorage. Two sources
feed this tracker while sitekeep's BiDi socket listens:

* **Which documents live**, from BiDi events, which the browser sends promptly and in order:
  ``browsingContext.navigationCommitted`` (a context now holds a new document, the one
  before it is gone), ``contextCreated`` (a frame's parent) and ``contextDestroyed``.
* **What a document left behind**, from a preload script (``scripts.PRELOAD``, installed
  once at browser start) that reports its origin's whole localStorage on the
  ``sitekeep.leave`` channel at ``beforeunload`` and ``pagehide``. Channel messages may
  arrive late (Chromium delivers a new document's only after its ``load``), so they
  carry content, never the timing.

So an origin whose documents are all gone, each having reported as it left, has as its copy
exactly what the last one saw. A document that went without reporting, a frame that may see
partitioned storage, a spare page a service worker answered, or a socket that closed and
may have missed events makes its origin's copy unsafe until the next report: a save reads
those origins through the spare tab instead. Live documents are always read directly.

A browser this process started is tracked from birth, so an origin it never saw is known to
be empty (or to hold what restore wrote). A browser reattached after a restart is not: its
first save reads every origin, then :meth:`resync` makes the copies exact again.

Known limit: on Chromium a message sent from ``pagehide`` is dropped, so a write a page
makes after its navigation away has begun (after ``beforeunload``) is not in its copy.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sitekeep.browser.scripts import CHANNEL, SPARE_PATH
from sitekeep.history import origin_of

__all__ = ["LeaveTracker"]

log = logging.getLogger(__name__)

_MAX_COPIES = 256


@dataclass
class _Doc:
    """The document a context holds now, as the events tell it."""

    origin: str | None
    trusted: bool
    reported: bool = False


def _document_origin(url: str) -> str | None:
    """The origin a committed URL's document has; spare pages and blank ones count as none."""
    try:
        if urlsplit(url).path == SPARE_PATH:
            return None
    except ValueError:
        return None
    return origin_of(url)


@dataclass
class LeaveTracker:
    """The copies for one browser generation.

    Attributes:
        complete: True while every event since birth (or the last resync) was seen.
        from_birth: True when tracking began before the browser loaded any page.
    """

    complete: bool = False
    from_birth: bool = False
    _copies: dict[str, dict[str, str]] = field(default_factory=dict)
    _tainted: set[str] = field(default_factory=set)
    _changed: set[str] = field(default_factory=set)
    _docs: dict[str, _Doc] = field(default_factory=dict)
    _parents: dict[str, str | None] = field(default_factory=dict)
    _visited: bool = False
    indexed_db: set[str] = field(default_factory=set)
    """Origins a document of which opened an IndexedDB database (from leave reports)."""

    @classmethod
    def at_birth(cls) -> LeaveTracker:
        """A tracker for a browser that has loaded nothing yet."""
        return cls(complete=True, from_birth=True)

    @property
    def pristine(self) -> bool:
        """Tracked from birth, no event missed, and no document of any origin ever lived:
        by the premise above, the browser holds no origin's storage (the warm pool's
        check, SPEC §13)."""
        return self.from_birth and self.complete and not self._visited

    # -- events ---------------------------------------------------------------------------

    def on_context_created(self, params: Mapping[str, Any]) -> None:
        """``browsingContext.contextCreated``: remember a frame's parent."""
        context = params.get("context")
        if isinstance(context, str):
            parent = params.get("parent")
            self._parents[context] = parent if isinstance(parent, str) else None

    def on_navigation_committed(self, params: Mapping[str, Any]) -> None:
        """``browsingContext.navigationCommitted``: the context holds a new document."""
        context = params.get("context")
        if isinstance(context, str):
            self._replace(context, _document_origin(str(params.get("url", ""))))

    def on_context_destroyed(self, params: Mapping[str, Any]) -> None:
        """``browsingContext.contextDestroyed``: its documents, and its frames', are gone."""
        context = str(params.get("context"))
        self._gone(self._docs.pop(context, None))
        self._parents.pop(context, None)
        for child in params.get("children") or ():
            self.on_context_destroyed(child)

    def on_message(self, params: Mapping[str, Any]) -> None:
        """``script.message`` on the leave channel: a document's localStorage as it left."""
        if params.get("channel") != CHANNEL:
            return
        try:
            report = json.loads((params.get("data") or {}).get("value", ""))
            origin = str(report["origin"])
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("dropped a malformed leave report")
            return
        self._changed.add(origin)
        self._visited = True
        if report.get("idb"):
            self.indexed_db.add(origin)
        doc = self._docs.get(str((params.get("source") or {}).get("context")))
        if doc is not None and doc.origin == origin:
            doc.reported = True
        local = report.get("local")
        if report.get("trusted") and isinstance(local, dict):
            self._store(origin, {str(k): str(v) for k, v in local.items()})
        else:
            self._taint(origin)

    def lost(self) -> None:
        """The socket closed: events may have been missed, so no copy can be trusted."""
        self.complete = False
        self.from_birth = False
        self._copies.clear()
        self._docs.clear()

    # -- state ----------------------------------------------------------------------------

    def _top(self, context: str) -> str:
        seen = {context}
        while (parent := self._parents.get(context)) is not None and parent not in seen:
            seen.add(parent)
            context = parent
        return context

    def _replace(self, context: str, origin: str | None) -> None:
        self._gone(self._docs.get(context))
        top = self._top(context)
        trusted = top == context or (
            origin is not None and self._docs.get(top, _Doc(None, True)).origin == origin
        )
        self._docs[context] = _Doc(origin, trusted)
        if origin is not None:
            self._visited = True
            self._changed.add(origin)
            if not trusted:
                self._taint(origin)

    def _gone(self, doc: _Doc | None) -> None:
        """A document is gone; unreported, its origin's copy is unsafe until the next
        report (which, coming after the death, holds all it wrote)."""
        if doc is not None and doc.origin is not None and not doc.reported:
            self._taint(doc.origin)

    def _taint(self, origin: str) -> None:
        self._tainted.add(origin)
        self._copies.pop(origin, None)

    def _store(self, origin: str, local: dict[str, str]) -> None:
        self._copies.pop(origin, None)
        self._copies[origin] = local
        self._tainted.discard(origin)
        while len(self._copies) > _MAX_COPIES:
            self._taint(next(iter(self._copies)))

    # -- what a save asks -----------------------------------------------------------------

    def reconcile(self, live: Mapping[str, str | None]) -> None:
        """Align with the contexts a save found alive (context → its document's origin):
        a document the events still held but that is gone or replaced counts as gone."""
        for context in [c for c in self._docs if c not in live]:
            self._gone(self._docs.pop(context))
        for context, origin in live.items():
            doc = self._docs.get(context)
            if doc is None or doc.origin != origin:
                self._replace(context, origin)

    def alone(self, context: str) -> bool:
        """True when every context event since the browser's birth was seen and none
        names a context but ``context`` (the main tab): no popup, tab or frame. A
        reattached browser is never alone: contexts made before it was tracked are not
        known here."""
        return (
            self.from_birth
            and self.complete
            and all(c == context for c in (*self._parents, *self._docs))
        )

    def invalidate(self, origin: str) -> None:
        """Forget ``origin``'s copy (a service worker's page ran in the spare tab)."""
        self._taint(origin)

    def copy(self, origin: str) -> dict[str, str] | None:
        """The exact localStorage of ``origin``, or None when it must be read."""
        if not self.complete or origin in self._tainted:
            return None
        if origin in self._copies:
            return dict(self._copies[origin])
        return {} if self.from_birth else None

    def begin(self) -> None:
        """Start noting which origins change, for :meth:`resync` / :meth:`wrote`."""
        self._changed.clear()

    def wrote(self, local_by_origin: Mapping[str, Mapping[str, str]]) -> None:
        """Restore wrote these stores; no document of theirs lived since :meth:`begin`."""
        for origin, local in local_by_origin.items():
            if origin not in self._changed:
                self._store(origin, dict(local))

    def resync(self, read: Mapping[str, Mapping[str, str]]) -> None:
        """After a full read (and :meth:`reconcile`): trust what was read, except origins
        that changed since :meth:`begin` — their copy may be newer than the read."""
        for origin, local in read.items():
            if origin in self._changed:
                self._taint(origin)
            else:
                self._store(origin, dict(local))
        for doc in self._docs.values():
            if doc.origin is not None and not doc.trusted:
                self._taint(doc.origin)
        self.complete = True
