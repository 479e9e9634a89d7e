"""Reading documents over BiDi: what each live page or spare frame holds.

Shared by save (``browser.save``) and restore (``browser.restore``). No value is logged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sitekeep.browser import wire
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.scripts import READ
from sitekeep.cookies import from_bidi, value_lost
from sitekeep.errors import BidiError, BidiTimeout
from sitekeep.history import origin_of
from sitekeep.model import Cookie

__all__ = ["TIMEOUT", "DocRead", "frames_by_origin", "live_reads", "read_cookies", "read_docs"]

TIMEOUT = "timeout"
"""``DocRead.error`` of a read that got no answer within the BiDi timeout."""


@dataclass(frozen=True, slots=True)
class DocRead:
    context: str
    origin: str | None
    trusted: bool
    spare: bool
    local: dict[str, str] | None
    session: dict[str, str] | None
    error: str | None
    url: str = ""
    top: bool = False
    user_agent: str | None = None
    idb: bool = False
    """Its origin holds IndexedDB databases."""
    title: str | None = None
    """``document.title`` of a tab read with its sessionStorage."""
    frames: int | None = None
    """How many child frames the document holds (``window.length``); None when unknown."""

    @classmethod
    def parse(cls, context: str, raw: Mapping[str, Any]) -> DocRead:
        origin = raw.get("origin")
        return cls(
            context=context,
            origin=origin if origin and origin != "null" else None,
            trusted=bool(raw.get("trusted")),
            spare=bool(raw.get("spare")),
            local=raw.get("local"),
            session=raw.get("session"),
            error=raw.get("error"),
            url=str(raw.get("url") or ""),
            top=bool(raw.get("top")),
            user_agent=raw.get("ua"),
            idb=bool(raw.get("idb")),
            title=raw.get("title"),
            frames=raw["frames"] if isinstance(raw.get("frames"), int) else None,
        )


async def read_cookies(browser: LiveBrowser, lost: list[Cookie] | None = None) -> list[Cookie]:
    """The whole jar, httpOnly included, every domain (``storage.getCookies``).

    Args:
        lost: when given, cookies whose value the browser reported without some of its
            bytes (``cookies.value_lost``) go here instead of into the result.
    """
    result = await wire.call(browser.conn, wire.storage_get_cookies())
    kind = browser.ref.kind
    jar: list[Cookie] = []
    for raw in result.get("cookies", []):
        cookie = from_bidi(raw, kind)
        if lost is not None and value_lost(raw, kind):
            lost.append(cookie)
        else:
            jar.append(cookie)
    return jar


def _contexts(tree: Iterable[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
    """(context, parent) of every context in a ``browsingContext.getTree`` result."""
    out: list[tuple[str, str | None]] = []
    stack: list[tuple[Mapping[str, Any], str | None]] = [(node, None) for node in tree]
    while stack:
        node, parent = stack.pop()
        out.append((str(node["context"]), parent))
        stack.extend((child, str(node["context"])) for child in node.get("children") or ())
    return out


async def read_docs(
    browser: LiveBrowser,
    contexts: Sequence[str],
    realms: Mapping[str, str] | None = None,
    tops: Sequence[str] = (),
) -> list[DocRead]:
    """READ in each context (through its window realm when ``realms`` names one),
    pipelined; each bounded by the BiDi timeout on its own (a timed-out one comes back
    with ``error="timeout"``; one that went away is left out). The main tab and ``tops``
    (other top-level tabs) also give their sessionStorage."""
    realms = realms or {}

    async def one(context: str) -> DocRead | None:
        with_session = context == browser.context or context in tops
        try:
            raw = await browser.evaluate_json(
                READ, with_session, context=context, realm=realms.get(context), await_promise=True
            )
        except BidiTimeout:
            return DocRead(context, None, False, False, None, None, TIMEOUT)
        except BidiError:
            return None  # a frame that went away, or a page that cannot run script
        return DocRead.parse(context, raw)

    reads = await asyncio.gather(*(one(c) for c in contexts))
    return [r for r in reads if r is not None]


async def live_reads(browser: LiveBrowser, spare_contexts: Sequence[str] = ()) -> list[DocRead]:
    """READ in every live document: each tab (popups and ``target=_blank`` tabs too, with
    their sessionStorage) and frame, through its window realm.

    The main tab is read at once, beside ``getTree``/``getRealms``: with no other
    document (the common case) a save waits on one round trip, not two (issue #15).
    When the leave tracker has seen every context event since the browser's birth and
    knows of no context but the main tab, ``getTree``/``getRealms`` are not sent at all:
    the main tab's READ says how many frames it holds, and the events that would name
    another tab arrive before that READ's reply (one socket, in order). Only when either
    finds another document do ``getTree``/``getRealms`` follow, as a second round trip.
    """
    if not spare_contexts and browser.tracker.alone(browser.context):
        main = await read_docs(browser, [browser.context])
        if main and main[0].frames == 0 and browser.tracker.alone(browser.context):
            return main
        return [*main, *await _other_reads(browser, spare_contexts)]
    first = asyncio.ensure_future(read_docs(browser, [browser.context]))
    try:
        others = await _other_reads(browser, spare_contexts)
    except BaseException:
        first.cancel()
        raise
    return [*await first, *others]


async def _other_reads(browser: LiveBrowser, spare_contexts: Sequence[str]) -> list[DocRead]:
    """READ in every live document but the main tab's."""
    tree, found = await asyncio.gather(
        wire.call(browser.conn, wire.browsing_context_get_tree()),
        wire.call(browser.conn, wire.script_get_realms(kind="window")),
    )
    realms: dict[str, str] = {}
    for realm in found.get("realms", []):
        if not realm.get("sandbox") and isinstance(realm.get("context"), str):
            realms.setdefault(realm["context"], str(realm["realm"]))
    pairs = [
        (c, p)
        for c, p in _contexts(tree.get("contexts", []))
        if c not in spare_contexts and c != browser.context
    ]
    tops = [c for c, parent in pairs if parent is None]
    return await read_docs(browser, [c for c, _ in pairs], realms, tops)


async def frames_by_origin(
    browser: LiveBrowser, tab: str, members: Sequence[str]
) -> dict[str, str]:
    """origin → context of a spare page on ``members[0]`` with frames on the rest."""
    tree = await wire.call(browser.conn, wire.browsing_context_get_tree(root=tab))
    by_origin: dict[str, str] = {}
    for node in tree.get("contexts", []):
        by_origin[members[0]] = str(node["context"])
        for child in node.get("children") or ():
            child_origin = origin_of(str(child.get("url", "")))
            if child_origin is not None:
                by_origin.setdefault(child_origin, str(child["context"]))
    return by_origin
