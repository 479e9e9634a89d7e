"""The pytest plugin (issue #14 item 3): a test suite of a user's gets a signed-in browser
from the ``sitekeep_session`` fixture in one line — run here as a separate ``pytest``
process against a live ``sitekeep serve``, the plugin found through its entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixtures.sites import Sites
from sitekeep import Client

from .conftest import Served

SIGNED_IN = "App — signed in as alice"

USERS_TESTS = """
import pytest

@pytest.mark.sitekeep(session="plugin-saved", url="{home}")
def test_by_marker(sitekeep_session):
    assert sitekeep_session.current()["title"] == "{signed_in}"

def test_by_option(sitekeep_session):
    assert "{signed_in}" in sitekeep_session.read()["text"]

@pytest.mark.sitekeep(session="never-saved")
def test_unknown_session(sitekeep_session):
    pass
"""


def test_sitekeep_session_opens_a_saved_session_signed_in(
    served: Served, sites: Sites, tmp_path: Path
) -> None:
    with Client(served.url, served.token) as client:
        saved = client.session("plugin-saved")
        saved.open(url=sites.url("app.example.test", "/login"))
        saved.save_site_data()
        saved.close_browser()
        saved_at = saved.current()["site_data"]["saved_at"]
    home = sites.url("app.example.test", "/")
    (tmp_path / "test_users.py").write_text(
        USERS_TESTS.format(home=home, signed_in=SIGNED_IN), encoding="utf-8"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    options = ["--sitekeep-session", "plugin-saved", "--sitekeep-url", served.url]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rE", *options],
        cwd=tmp_path,
        env={**served.env, "SITEKEEP_TOKEN": served.token, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "2 passed, 1 error" in run.stdout, run.stdout + run.stderr
    assert "no session named 'never-saved'" in run.stdout
    with Client(served.url, served.token) as client:
        keys = {row["key"]: row for row in client.sessions()["sessions"]}
    assert "never-saved" not in keys
    assert keys["plugin-saved"]["browser"]["live"] is False  # closed at teardown
    with Client(served.url, served.token) as client:  # … without its automatic save
        assert client.session("plugin-saved").current()["site_data"]["saved_at"] == saved_at
