"""Replicas, proved (SPEC §2, §13; issue #10 item 7): two real ``sitekeep serve`` processes
on one Redis (sessions, locks), one PostgreSQL (tokens, secrets, ledger) and the suite's
Selenium Grid (browsers), each with a data dir of its own — nothing shared but those three.

One session is driven alternately through both; parallel opens of one key split across both
make one browser; a replica killed mid-flow leaves the session to the other, and a browser a
killed replica started but never recorded is reaped off the Grid.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import HOST_RULES
from fixtures.databases import REDIS_URL, clear_redis_prefix, fresh_postgres_database, redis_prefix
from fixtures.grid import Grid
from fixtures.serve import Serve, sitekeep_env
from fixtures.sites import Sites
from sitekeep.config import Settings
from support import make_token

from .conftest import FIREFOX_PREFS

pytestmark = pytest.mark.e2e

LEASE = 3.0
"""Seconds a killed replica's session lock outlives it (SITEKEEP_LOCK_TTL)."""


class Cluster:
    """Two replicas, A and B, and an admin token good on both."""

    def __init__(self, env: dict[str, str], tmp: Path, token: str) -> None:
        self.env, self.tmp, self.token = env, tmp, token
        # Launched together, then waited for: one start's time instead of two.
        self.a, self.b = self._serve("a").launch(), self._serve("b").launch()
        try:
            self.a.ready()
            self.b.ready()
        except BaseException:
            self.stop()
            raise

    def _serve(self, name: str) -> Serve:
        return Serve({**self.env, "SITEKEEP_DATA_DIR": str(self.tmp / name)})

    def replica(self, name: str) -> Serve:
        return self._serve(name).start()

    def stop(self) -> None:
        for replica in (self.a, self.b):
            replica.stop()

    def http(self, replica: Serve) -> httpx.Client:
        return replica.client(self.token)

    def call(self, replica: Serve, method: str, path: str, body: Any = None) -> Any:
        with self.http(replica) as http:
            reply = http.request(method, path, json=body)
        assert reply.status_code == 200, reply.text
        return reply.json()


@pytest.fixture
def cluster(grid: Grid, tmp_path: Path, cache_dir: Path, browser: str) -> Iterator[Cluster]:
    prefix = redis_prefix()
    with fresh_postgres_database() as database:
        env = sitekeep_env(
            SITEKEEP_SESSION_STORE=f"{REDIS_URL}?prefix={prefix}",
            SITEKEEP_DATABASE_URL=database,
            SITEKEEP_WEBDRIVER_URL=grid.url,
            SITEKEEP_MASTER_KEY=base64.b64encode(os.urandom(32)).decode(),
            SITEKEEP_CACHE_DIR=str(cache_dir),
            SITEKEEP_BROWSER_ARGS=HOST_RULES,
            SITEKEEP_BROWSER=browser,
            SITEKEEP_FIREFOX_PREFS=json.dumps(FIREFOX_PREFS),
            SITEKEEP_WARM_BROWSERS="0",
            SITEKEEP_LOCK_TTL=str(LEASE),
            SITEKEEP_REAP_INTERVAL="1",
        )
        settings = Settings(
            data_dir=tmp_path / "setup",
            database_url=database,
            session_store=env["SITEKEEP_SESSION_STORE"],
            master_key=env["SITEKEEP_MASTER_KEY"],
        )
        token = make_token(settings, role="admin")
        before = set(grid.session_ids())
        running = Cluster(env, tmp_path, token)
        try:
            yield running
        finally:
            running.stop()
            for session_id in set(grid.session_ids()) - before:  # whatever a failure left
                httpx.delete(f"{grid.url}/session/{session_id}", timeout=30)
            clear_redis_prefix(REDIS_URL, prefix)


def wait_until(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(0.1)


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
def test_one_session_alternates_between_replicas(cluster: Cluster, sites: Sites) -> None:
    a, b = cluster.a, cluster.b
    opened = cluster.call(
        a, "POST", "/v1/sessions", {"key": "k", "url": sites.url("app.example.test")}
    )
    assert opened["title"] == "App — signed out"
    signed = cluster.call(
        b, "POST", "/v1/sessions/k/navigate", {"url": sites.url("app.example.test", "/login")}
    )
    assert signed["title"] == "App — signed in as alice"
    saved = cluster.call(b, "POST", "/v1/sessions/k/save-site-data")
    assert saved["saved"]["cookies"] >= 1
    assert cluster.call(a, "GET", "/v1/sessions/k")["browser"]["live"] is True
    assert cluster.call(b, "DELETE", "/v1/sessions/k/browser")["closed"] is True
    back = cluster.call(
        a, "POST", "/v1/sessions", {"key": "k", "url": sites.url("app.example.test")}
    )
    assert back["title"] == "App — signed in as alice"
    assert back["site_data"]["restored"]
    cluster.call(b, "DELETE", "/v1/sessions/k")


@pytest.mark.parametrize("browser", ["chromium"])
def test_parallel_opens_of_one_key_split_across_replicas_make_one_browser(
    cluster: Cluster, sites: Sites, grid: Grid
) -> None:
    before = set(grid.session_ids())
    url = sites.url("app.example.test")

    def open_on(replica: Serve) -> str:
        return str(cluster.call(replica, "POST", "/v1/sessions", {"key": "p", "url": url})["title"])

    with ThreadPoolExecutor(10) as pool:
        titles = list(pool.map(open_on, [cluster.a, cluster.b] * 5))
    assert set(titles) == {"App — signed out"}
    assert len(set(grid.session_ids()) - before) == 1
    runs = cluster.call(cluster.b, "GET", "/admin/runs")["runs"]
    assert [r["session"] for r in runs] == ["p"]
    cluster.call(cluster.a, "DELETE", "/v1/sessions/p")
    wait_until(lambda: set(grid.session_ids()) == before, "the browser ended")


@pytest.mark.parametrize("browser", ["chromium"])
def test_a_replica_killed_mid_flow_leaves_the_session_to_the_other(
    cluster: Cluster, sites: Sites, grid: Grid
) -> None:
    a, b = cluster.a, cluster.b
    before = set(grid.session_ids())
    cluster.call(
        a, "POST", "/v1/sessions", {"key": "k", "url": sites.url("app.example.test", "/login")}
    )
    cluster.call(a, "POST", "/v1/sessions/k/save-site-data")
    [browser_id] = set(grid.session_ids()) - before

    # A runs a flow that holds the session (waiting for a text that never comes); kill -9 A.
    steps = [
        {"op": "navigate", "url": sites.url("tabs.example.test")},
        {"op": "wait_for", "text": "dummy text that never appears", "timeout": 60},
    ]
    flow = threading.Thread(
        target=lambda: _swallow(
            lambda: cluster.call(a, "POST", "/v1/sessions/k/flows", {"steps": steps})
        ),
        daemon=True,
    )
    seen = len(sites.hits("tabs.example.test"))
    flow.start()
    wait_until(lambda: len(sites.hits("tabs.example.test")) > seen, "A's flow navigated")
    a.kill()
    flow.join(30)

    # B finishes the session once A's lease runs out: the same browser, the snapshot whole.
    page = cluster.call(
        b, "POST", "/v1/sessions/k/navigate", {"url": sites.url("app.example.test")}
    )
    assert page["title"] == "App — signed in as alice"
    assert set(grid.session_ids()) - before == {browser_id}
    cluster.call(b, "POST", "/v1/sessions/k/save-site-data")
    fresh = cluster.call(
        b, "POST", "/v1/sessions", {"key": "k", "fresh": True, "url": sites.url("app.example.test")}
    )
    assert fresh["title"] == "App — signed in as alice"
    [current] = set(grid.session_ids()) - before
    assert current != browser_id

    # A second A is killed while opening a new browser (its page loads slowly): the browser
    # it started is on the Grid, and no session owns it, until B's reaper passes.
    again = cluster.replica("a2")
    slow = sites.url("app.example.test", "/__fixture/slow?ms=20000")
    opening = threading.Thread(
        target=lambda: _swallow(
            lambda: cluster.call(
                again, "POST", "/v1/sessions", {"key": "k", "fresh": True, "url": slow}
            )
        ),
        daemon=True,
    )
    slow_seen = len(sites.hits())
    opening.start()
    wait_until(
        lambda: any(path == "/__fixture/slow" for _, path in sites.hits()[slow_seen:]),
        "A2 started a new browser and began loading the slow page in it",
    )
    again.kill()
    opening.join(30)
    orphan = set(grid.session_ids()) - before
    assert len(orphan) == 1 and current not in orphan  # fresh closed the old one first
    wait_until(lambda: set(grid.session_ids()) == before, "the reaper ended the orphan", timeout=90)
    closed = {r["closed_reason"] for r in cluster.call(b, "GET", "/admin/runs?open=false")["runs"]}
    assert "reaped" in closed
    # The session itself is whole: its next call opens a browser with the snapshot restored.
    back = cluster.call(
        b, "POST", "/v1/sessions", {"key": "k", "url": sites.url("app.example.test")}
    )
    assert back["title"] == "App — signed in as alice"
    cluster.call(b, "DELETE", "/v1/sessions/k")


def _swallow(call: Callable[[], object]) -> None:
    with contextlib.suppress(httpx.HTTPError, AssertionError):  # its replica was killed
        call()
