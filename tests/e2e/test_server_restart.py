"""Stateless reattach through the real server: kill `sitekeep serve`, start another, and the
next call continues in the same live browser (SPEC §2). Embedded defaults: its own
chromedriver, the SQLite store and key file in the data dir."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import HOST_RULES
from fixtures.sites import Sites

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
