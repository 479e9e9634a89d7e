"""Stateless reattach through the real server: kill `sitekeep serve`, start another, and the
next call continues in the same live browser (SPEC §2). Embedded defaults: its own
chromedriver, the SQLite store and key file in the data dir."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import HOST_RULES
from fixtures.sites import Sites
from sitekeep.journal import Journal, JournalKey
from sitekeep.journal.files import FileJournal
from sitekeep.journal.replay import Replayed

from .conftest import FIREFOX_PREFS

pytestmark = pytest.mark.e2e

SITEKEEP = str(Path(sys.executable).parent / "sitekeep")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`sitekeep serve` as a child process, and a client holding a token."""

    def __init__(self, data_dir: Path, cache_dir: Path, browser: str) -> None:
        self.port = free_port()
        self.env = {
            **os.environ,
            "SITEKEEP_DATA_DIR": str(data_dir),
            "SITEKEEP_CACHE_DIR": str(cache_dir),
            "SITEKEEP_BROWSER_ARGS": HOST_RULES,
            "SITEKEEP_BROWSER": browser,
            "SITEKEEP_FIREFOX_PREFS": json.dumps(FIREFOX_PREFS),
            "SITEKEEP_WARM_BROWSERS": "0",
        }
        self.env.pop("SITEKEEP_WEBDRIVER_URL", None)
        token = subprocess.run(
            [SITEKEEP, "token", "create", "--tenant", "t1", "--subject", "agent"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert token.startswith("sk_")
        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [SITEKEEP, "serve", "--port", str(self.port), "--log-level", "warning"],
            env=self.env,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.http.get("/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None, "sitekeep serve exited"
            assert time.monotonic() < deadline, "sitekeep serve did not answer"
            time.sleep(0.05)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def post(self, path: str, body: object = None) -> dict[str, object]:
        reply = self.http.post(path, json=body)
        assert reply.status_code == 200, reply.text
        result: dict[str, object] = reply.json()
        return result


@pytest.fixture
def server(tmp_path: Path, cache_dir: Path, browser: str) -> Iterator[Server]:
    running = Server(tmp_path / "data", cache_dir, browser)
    yield running
    if running.process is not None and running.process.poll() is None:
        running.kill()
    subprocess.run([SITEKEEP, "stop"], env=running.env, capture_output=True, timeout=120)
    running.http.close()


def test_killing_and_restarting_serve_continues_the_same_browser(
    server: Server, sites: Sites, browser: str
) -> None:
    server.start()
    server.post("/v1/sessions", {"key": "k", "url": sites.url("tabs.example.test", "/add")})
    page = server.post("/v1/sessions/k/navigate", {"url": sites.url("tabs.example.test", "/add")})
    assert page["title"] == "Tabs — cart 2"
    server.kill()  # no save: only the live browser holds this sessionStorage

    server.start()
    page = server.post("/v1/sessions/k/navigate", {"url": sites.url("tabs.example.test")})
    assert page["title"] == "Tabs — cart 2"
    assert "site_data" not in page  # continued, not reopened
    current = server.http.get("/v1/sessions/k").json()
    assert current["browser"] == {"kind": browser, "live": True}

    server.post("/v1/sessions/k/navigate", {"url": sites.url("app.example.test", "/login")})
    server.post("/v1/sessions/k/save-site-data")
    server.kill()
    server.start()
    assert server.http.delete("/v1/sessions/k/browser").json()["closed"] is True
    opened = server.post("/v1/sessions", {"key": "k", "url": sites.url("app.example.test")})
    assert opened["title"] == "App — signed in as alice"


def ref_of(snapshot: dict[str, Any], role: str, name: str) -> str:
    return next(
        str(e["ref"]) for e in snapshot["elements"] if (e["role"], e["name"]) == (role, name)
    )


def admin_token(server: Server) -> str:
    return subprocess.run(
        [SITEKEEP, "token", "create", "--tenant", "t1", "--subject", "boss", "--admin"],
        env=server.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def admin_row(server: Server, token: str, key: str) -> dict[str, Any]:
    """The admin's row of the session: its URL and every history entry (SPEC §11)."""
    rows = server.http.get("/admin/sessions", headers={"Authorization": f"Bearer {token}"}).json()[
        "sessions"
    ]
    row: dict[str, Any] = next(r for r in rows if r["key"] == key)
    return row


def journal_of(server: Server, key: str) -> Replayed:
    data_dir = Path(server.env["SITEKEEP_DATA_DIR"])
    return Journal(FileJournal(data_dir / "journal")).replay_sync(JournalKey("t1", key))


def kill_mid_call(server: Server, sites: Sites, key: str, slow: str) -> None:
    """kill -9 serve while it runs a navigate to the slow page ``slow``: its begin is
    durable (the page was asked for), its finish never comes."""
    slow_url = sites.url("app.example.test", slow)

    def navigate() -> None:
        with contextlib.suppress(httpx.TransportError):  # serve dies under it
            server.http.post(f"/v1/sessions/{key}/navigate", json={"url": slow_url})

    pending = threading.Thread(target=navigate, daemon=True)
    pending.start()
    deadline = time.monotonic() + 60
    while not any(p == slow for _, p in sites.hits()):
        assert time.monotonic() < deadline, "the page was never asked for"
        time.sleep(0.005)
    server.kill()
    pending.join()


@pytest.mark.parametrize("browser", ["chromium"])
def test_a_restart_keeps_url_history_and_refs_and_settles_a_call_killed_mid_append(
    server: Server, sites: Sites
) -> None:
    """Session r: URL, history and the refs of a snapshot are the same after a restart
    (rebuilt from the journal). Session m: serve is killed -9 in the middle of a call and
    of an append (a torn last line); the next serve ignores the torn tail, inspects, and
    repeats nothing."""
    token = admin_token(server)
    server.start()
    login = sites.url("form.example.test", "/login")
    server.post("/v1/sessions", {"key": "r", "url": sites.url("app.example.test")})
    server.post("/v1/sessions/r/navigate", {"url": login + "?next=%2Fhome"})
    snap = server.post("/v1/sessions/r/snapshot")
    before = (server.http.get("/v1/sessions/r").json(), admin_row(server, token, "r"))
    server.post("/v1/sessions", {"key": "m", "url": login})
    slow = "/__fixture/slow/killed"
    kill_mid_call(server, sites, "m", slow)
    path = FileJournal(Path(server.env["SITEKEEP_DATA_DIR"]) / "journal").path(
        JournalKey("t1", "m")
    )
    with path.open("ab") as file:  # what a kill in the middle of an append leaves
        file.write(b'{"type":"finish","v":1,"id":"')
    torn = journal_of(server, "m")
    assert torn.report.ok and torn.report.torn is not None
    assert [p.op for p in torn.state.unsettled] == ["navigate"]

    server.start()
    after = (server.http.get("/v1/sessions/r").json(), admin_row(server, token, "r"))
    assert after[0]["url"] == before[0]["url"] == login + "?next=%2Fhome"
    assert after[1]["history_rev"] == before[1]["history_rev"]
    assert [o for o, _ in after[1]["history_rev"]] == [
        sites.url("form.example.test").rstrip("/"),
        sites.url("app.example.test").rstrip("/"),
    ]
    # The refs of the snapshot taken before the restart, rebuilt from the journal.
    home = server.post("/v1/sessions/r/click", {"ref": ref_of(snap, "link", "Home")})
    assert home["title"] == "Form — signed out"
    assert journal_of(server, "r").report.ok

    sites.reset_hits()
    read: Any = server.post("/v1/sessions/m/read", {})
    inspected = [w for w in read["warnings"] if w["type"] == "journal_inspected"]
    assert inspected and inspected[0]["ops"] == ["navigate"]
    assert sites.hits() == []  # nothing repeated
    settled = journal_of(server, "m")
    assert settled.report.ok and settled.report.torn is None and settled.state.settled
    assert settled.state.url == sites.url("app.example.test", slow)
