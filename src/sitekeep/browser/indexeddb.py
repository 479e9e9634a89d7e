"""IndexedDB, opt-in: every database of an origin, schema and records (SPEC §3 IndexedDB).

A save with ``indexed_db=true`` reads, per origin, each database (name, version), each
object store (name, key path, auto-increment, indexes with key path, ``unique`` and
``multiEntry``) and every record as a (key, value) pair. Values are structured-clone data
(HTML §Safe passing of structured data), so they are written in a tagged JSON that keeps
what JSON cannot: ``undefined``, ``-0``, ``NaN``/``±Infinity``, BigInt, Date, RegExp, Map,
Set, ArrayBuffer, every typed array and DataView (their bytes, base64), Blob and File
(type, name, lastModified and bytes), boxed primitives, Error, and shared or cyclic
references (``{"$": "ref"}``). Object entries are kept as a list, so any key — ``$`` or
``__proto__`` too — is an own property again. A restore writes them in a spare page on the
origin before the browser lands (it opens each database at its version, creates the
stores and indexes in ``upgradeneeded``, puts the records, and acknowledges once every
transaction completed). The scripts that do it (``CODEC``, ``READ_DATABASES``,
``WRITE_DATABASES``) live with every other page script in ``browser.scripts``.

Known limits: an auto-increment store's key generator comes back as one past the highest
numeric key written (IndexedDB offers no way to read or set it); values a structured clone
cannot hold never reach IndexedDB in the first place.

Without the opt-in, a save names every origin it knows holds IndexedDB (a live or spare
read found databases, or a page opened one — ``scripts.PRELOAD`` notes ``indexedDB.open``
calls) as not carried.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from sitekeep.browser import wire
from sitekeep.browser.docs import frames_by_origin
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.scripts import READ_DATABASES
from sitekeep.browser.spare import SpareResponder, background_spare
from sitekeep.errors import BidiError, BidiTimeout
from sitekeep.sites import group_by_site

__all__ = ["NOT_CARRIED", "read_databases"]

NOT_CARRIED = "its IndexedDB was not carried: save_site_data(indexed_db=true) carries it"


async def read_databases(
    browser: LiveBrowser, origins: Sequence[str], *, deadline: float
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Read every database of each origin in a background spare tab, a site per
    navigation (SPEC §3 IndexedDB). A read-only transaction reads beside the site's own
    pages, so live origins are read the same way.

    Args:
        deadline: seconds the whole loop may take; the rest are named as not attempted.

    Returns:
        origin → its databases (empty when it has none), and origin → why its databases
        could not be read (its last snapshot's stand).
    """
    read: dict[str, list[dict[str, Any]]] = {}
    failed: dict[str, str] = {}
    if not origins:
        return read, failed
    conn = browser.conn
    stop_at = time.monotonic() + deadline
    async with background_spare(conn) as (tab, spare):
        for members in group_by_site(origins).values():
            if time.monotonic() > stop_at:
                failed.update(dict.fromkeys(members, "not attempted: the save's deadline passed"))
                continue
            await _read_site(browser, spare, tab, members, read, failed)
    return read, failed


async def _read_site(
    browser: LiveBrowser,
    spare: SpareResponder,
    tab: str,
    members: Sequence[str],
    read: dict[str, list[dict[str, Any]]],
    failed: dict[str, str],
) -> None:
    try:
        url = spare.url(members[0], members[1:])
        await wire.call(browser.conn, wire.browsing_context_navigate(tab, url, wait="complete"))
        by_origin = await frames_by_origin(browser, tab, members)
    except BidiError as exc:
        failed.update(dict.fromkeys(members, f"IndexedDB could not be read: {exc.code}"))
        return

    async def one(origin: str) -> None:
        context = by_origin.get(origin)
        if context is None:
            failed[origin] = "IndexedDB could not be read: its frame did not load"
            return
        try:
            found = await browser.evaluate_json(READ_DATABASES, context=context, await_promise=True)
        except BidiTimeout:
            failed[origin] = "IndexedDB could not be read: timed out"
        except BidiError as exc:
            failed[origin] = f"IndexedDB could not be read: {exc.code}"
        else:
            read[origin] = list(found)

    await asyncio.gather(*(one(o) for o in members))
