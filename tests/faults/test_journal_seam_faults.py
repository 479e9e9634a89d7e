"""The seam under real journal faults, with real Chromium (SPEC §8, §17).

- A begin that cannot be written (ENOSPC on a full tmpfs, EIO on a failing disk) is a 503
  ``journal_unavailable`` and the browser is not touched: the fixture server sees no
  request and the page stays where it was.
- A finish that cannot be written (the disk fills while the page loads) leaves the session
  unsettled: the result says so, a flow's next steps do not run, and the next call first
  inspects the browser and settles the open begins as ``unknown`` — the page is not asked
  for again.

The operations use URLs whose path is longer than a page of the file system, so the
record that must fail needs a new block whatever room the journal file's last block has.
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixtures.sites import Sites
from sitekeep.journal import JournalKey
from support import WHO, Api, ApiFactory

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

LONG_BEGIN = "/__fixture/slow/" + "b" * 4200
"""A navigate whose begin alone is longer than a 4 KiB block."""
LONG_FINISH = "/__fixture/slow/" + "f" * 2500
"""A navigate whose begin fits in a block and whose finish (the URL twice) does not."""


def fill(where: Path) -> Path:
    """Write a file into ``where`` until the file system refuses more; returns it."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
            os.fsync(fd)
    except OSError as exc:
        assert exc.errno in (errno.ENOSPC, errno.EIO, errno.EROFS), exc
    finally:
        os.close(fd)
    return filler


def fill_when_asked_for(sites: Sites, path: str, where: Path) -> threading.Thread:
    """Fill ``where`` the moment the fixture server is asked for ``path`` (the begin is
    durable by then: it precedes the browser's request); the page answers 3 s later."""

    def watch() -> None:
        deadline = time.monotonic() + 60
        while not any(p == path for _, p in sites.hits()) and time.monotonic() < deadline:
            time.sleep(0.002)
        fill(where)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


async def begin_is_refused(api: Api, sites: Sites, fill_disk: Callable[[], Any]) -> None:
    login = sites.url("form.example.test", "/login")
    await api.open(key="b", url=login)
    fill_disk()
    sites.reset_hits()
    target = sites.url("app.example.test", LONG_BEGIN + "?ms=1")
    reply = await api.http.post("/v1/sessions/b/navigate", json={"url": target})
    assert reply.status_code == 503, reply.text
    assert reply.json()["error"]["type"] == "journal_unavailable"
    assert sites.hits() == []  # not one request: the browser was not touched
    assert (await (await api.browser("b")).page_info()).url == login
    fresh = await api.http.post("/v1/sessions", json={"key": "c", "url": target})
    assert fresh.status_code == 503 and sites.hits() == []  # no browser started either
    assert (await api.http.get("/v1/sessions/c")).status_code == 404


async def test_enospc_at_begin_is_503_and_the_browser_is_untouched(
    small_tmpfs: Path, make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(journal_url=f"file://{small_tmpfs / 'journal'}")
    filler: list[Path] = []
    await begin_is_refused(api, sites, lambda: filler.append(fill(small_tmpfs)))

    filler[0].unlink()  # room again: the same call goes through
    target = sites.url("app.example.test", LONG_BEGIN + "?ms=1")
    assert (await api.go("b", target))["title"] == "Slow"
    assert [p for _, p in sites.hits()] == [LONG_BEGIN]


async def test_eio_at_begin_is_503_and_the_browser_is_untouched(
    failing_disk: tuple[Path, Callable[[], Path]], make_api: ApiFactory, sites: Sites
) -> None:
    mnt, _ = failing_disk
    api: Api = await make_api(journal_url=f"file://{mnt / 'journal'}")
    await begin_is_refused(api, sites, lambda: fill(mnt))


async def test_a_finish_that_cannot_be_written_leaves_the_session_unsettled_and_repeats_nothing(
    small_tmpfs: Path, make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(journal_url=f"file://{small_tmpfs / 'journal'}")
    login = sites.url("form.example.test", "/login")
    slow = sites.url("app.example.test", LONG_FINISH + "?ms=3000")
    await api.open(key="u", url=login)

    # One call: its effects happened, the journal could not say so.
    watcher = fill_when_asked_for(sites, LONG_FINISH, small_tmpfs)
    landed = await api.go("u", slow)
    watcher.join()
    assert landed["title"] == "Slow"
    assert [w["type"] for w in landed["warnings"]] == ["journal_unsettled"]
    (small_tmpfs / "filler").unlink()
    sites.reset_hits()
    read = await api.call("POST", "/v1/sessions/u/read", {})
    inspected = [w for w in read["warnings"] if w["type"] == "journal_inspected"]
    assert inspected and inspected[0]["ops"] == ["navigate"] and inspected[0]["tabs"] >= 1
    assert sites.hits() == []  # the slow page was not asked for again
    state = (await api.service.parts.journal.replay(JournalKey(WHO.tenant, "u"))).state
    assert state.settled and state.url == sites.url("app.example.test", LONG_FINISH)

    # A flow: the step after the unrecorded one does not run.
    sites.reset_hits()
    watcher = fill_when_asked_for(sites, LONG_FINISH, small_tmpfs)
    flow = await api.call(
        "POST",
        "/v1/sessions/u/flows",
        {"steps": [{"op": "navigate", "url": slow}, {"op": "navigate", "url": login}]},
    )
    watcher.join()
    assert [s["status"] for s in flow["steps"]] == ["ok", "not run"]
    assert [w["type"] for w in flow["warnings"]] == ["journal_unsettled"]
    assert [p for _, p in sites.hits()] == [LONG_FINISH]  # never the login page
    (small_tmpfs / "filler").unlink()
    sites.reset_hits()
    again = await api.call("POST", "/v1/sessions/u/read", {})
    inspected = [w for w in again["warnings"] if w["type"] == "journal_inspected"]
    assert inspected and sorted(inspected[0]["ops"]) == ["navigate", "run_flow"]
    assert sites.hits() == []
    assert (await api.service.parts.journal.replay(JournalKey(WHO.tenant, "u"))).state.settled


@pytest.mark.parametrize("full", [False, True])
async def test_a_save_whose_begin_cannot_be_written_is_503_and_stores_nothing(
    small_tmpfs: Path, make_api: ApiFactory, sites: Sites, full: bool
) -> None:
    """A save's begin is appended beside its first reads (issue #15, the lead's ruling on
    SPEC §8): refused, the save fails with 503 all the same; the snapshot, the session
    record and the journal (no begin, no finish) stay as they were, and no spare tab is
    opened. The disk goes read-only, as ext4 does on an error. Without a spare tab
    (``full`` false, every origin live or copied on leave) the reads are all done when the
    refusal comes back; with one, the refusal stops the save before the spare tab."""
    api: Api = await make_api(journal_url=f"file://{small_tmpfs / 'journal'}")
    first = sites.url("www.example.test", "/__fixture/ls?k=dummy-one")
    await api.open(key="s", url=first)
    await api.go("s", sites.url("shop.example.test", "/__fixture/ls?k=dummy-two"))
    before = await api.save("s")
    assert before["saved"]["cookies"] >= 0 and len(before["saved"]["sites"]) == 2
    snapshot = await api.service.parts.seam.records.load_snapshot(WHO.tenant, "s")
    key = JournalKey(WHO.tenant, "s")
    head = await api.service.parts.journal.backend.head(key)
    record = await api.service.parts.seam.records.load(WHO.tenant, "s")
    browser = await api.browser("s")
    await browser.conn.send(
        "script.evaluate",
        {
            "expression": "localStorage.setItem('k2', 'dummy-three')",
            "target": {"context": browser.context},
            "awaitPromise": False,
        },
    )

    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    try:
        reply = await api.http.post("/v1/sessions/s/save-site-data", json={"full": full})
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_tmpfs)], check=True)
    assert reply.status_code == 503, reply.text
    assert reply.json()["error"]["type"] == "journal_unavailable"
    assert (
        await api.service.parts.seam.records.load_snapshot(WHO.tenant, "s") == snapshot
    )  # nothing stored
    assert await api.service.parts.journal.backend.head(key) == head  # no begin, no finish
    assert (
        await api.service.parts.seam.records.load(WHO.tenant, "s") == record
    )  # the record unchanged
    tree = await browser.conn.send("browsingContext.getTree", {"maxDepth": 0})
    assert len(tree["contexts"]) == 1  # no spare tab was opened, none left behind

    after = await api.save("s", full=full)  # the disk writable again: the same save goes
    assert after["saved"]["sites"] == before["saved"]["sites"]
    saved = await api.service.parts.seam.records.load_snapshot(WHO.tenant, "s")
    assert saved is not None and saved != snapshot
    state = (await api.service.parts.journal.replay(key)).state
    assert state.settled and state.last_save is not None
