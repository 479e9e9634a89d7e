"""The sitekeep command: token create, doctor, stop (no browser started)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sitekeep.cli import app
from sitekeep.config import Settings
from sitekeep.model import RECORD_JSON, SessionRecord, SignIn
from support import on_service


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("SITEKEEP_WEBDRIVER_URL", raising=False)
    return tmp_path


def test_token_create_prints_a_token_once_and_stores_only_its_hash(env: Path) -> None:
    result = CliRunner().invoke(app, ["token", "create", "--tenant", "t1", "--subject", "me"])
    assert result.exit_code == 0, result.output
    token = result.output.strip()
    assert token.startswith("sk_")
    principal = on_service(Settings(data_dir=env), lambda svc: svc.parts.auth.resolve(token))
    assert principal is not None and (principal.tenant, principal.role) == ("t1", "member")
    assert token.encode() not in (env / "sitekeep.db").read_bytes()


def test_a_new_data_dir_is_readable_by_its_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "new" / "sitekeep"
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(data_dir))
    result = CliRunner().invoke(app, ["token", "create", "--tenant", "t1", "--subject", "me"])
    assert result.exit_code == 0, result.output
    assert (data_dir / "sitekeep.db").exists()
    assert data_dir.stat().st_mode & 0o777 == 0o700  # the databases in it, too


def test_token_create_refuses_a_bad_tenant_with_the_field_named(env: Path) -> None:
    result = CliRunner().invoke(app, ["token", "create", "--tenant", "a b", "--subject", "me"])
    assert result.exit_code == 2
    assert "tenant" in result.output


def test_doctor_reports_each_check_and_a_missing_browser_fails_it(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok = CliRunner().invoke(app, ["doctor"])
    assert "chromium" in ok.output and "master key" in ok.output
    monkeypatch.setenv("SITEKEEP_CHROMIUM", str(env / "no-such-chromium"))
    broken = CliRunner().invoke(app, ["doctor"])
    assert broken.exit_code == 1
    assert "missing: apt-get install chromium" in broken.output


def test_doctor_runs_a_browser_for_its_version_without_sitekeeps_settings(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SITEKEEP_* variables hold the master key, tokens and store passwords: no program
    sitekeep starts gets them, the short ``--version`` of ``doctor`` included."""
    fake = env.parent / "fake-chromium"
    fake.write_text("#!/bin/sh\necho fake-chromium-$(env | grep -ic '^SITEKEEP_')\n")
    fake.chmod(0o700)
    monkeypatch.setenv("SITEKEEP_CHROMIUM", str(fake))
    monkeypatch.setenv("SITEKEEP_SCRAPE_TOKEN", "dummy-scrape-token")
    monkeypatch.setenv("SiteKeep_Database_Url", f"sqlite:///{env / 'x.db'}")  # read so too
    result = CliRunner().invoke(app, ["doctor"])
    assert "fake-chromium-0" in result.output, result.output


def test_doctor_fails_a_data_dir_other_users_can_write_and_names_the_fix(env: Path) -> None:
    env.chmod(0o777)  # made by hand or by an older release: others could replace the db
    try:
        result = CliRunner().invoke(app, ["doctor"])
        after = oct(env.stat().st_mode & 0o777)
    finally:
        env.chmod(0o700)
    assert result.exit_code == 1
    assert f"can be written by other users: chmod 700 {env}" in result.output
    assert after == "0o777"  # named, not made: the directory is the user's choice


def test_doctor_changes_nothing_on_a_fresh_data_dir(env: Path) -> None:
    result = CliRunner().invoke(app, ["doctor"])
    assert "generated at first start" in result.output
    assert list(env.iterdir()) == []


def test_doctor_checks_the_session_store_and_fails_on_an_unreadable_one(env: Path) -> None:
    fresh = CliRunner().invoke(app, ["doctor"])
    assert f"session store: {env / 'sessions.db'} (created at first start)" in fresh.output
    (env / "sessions.db").write_bytes(b"not a database, dummy bytes " * 10)
    broken = CliRunner().invoke(app, ["doctor"])
    assert broken.exit_code == 1
    assert "session store" in broken.output and "cannot be read" in broken.output


def test_stop_with_nothing_running_says_so(env: Path) -> None:
    result = CliRunner().invoke(app, ["stop"])
    assert result.exit_code == 0, result.output
    assert "no session browser was running" in result.output


def test_secret_set_without_a_host_names_the_flag(env: Path) -> None:
    done = CliRunner().invoke(
        app, ["secret", "set", "login", "--tenant", "t1"], input="password=dummy-pw\n"
    )
    assert done.exit_code == 2
    assert done.output.startswith("error: --host: hosts must be a list")


def test_token_list_shows_ids_and_revoke_ends_a_token(env: Path) -> None:
    runner = CliRunner()
    token = runner.invoke(app, ["token", "create", "--tenant", "t1", "--subject", "me"]).output
    listed = runner.invoke(app, ["token", "list", "--tenant", "t1"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and token.strip() not in listed.output
    (row,) = [line for line in listed.output.splitlines() if " me " in line]
    token_id = row.split("│")[1].strip()
    revoked = runner.invoke(app, ["token", "revoke", token_id])
    assert revoked.exit_code == 0 and f"revoked {token_id}" in revoked.output
    settings = Settings(data_dir=env)
    assert on_service(settings, lambda svc: svc.parts.auth.resolve(token.strip())) is None
    again = runner.invoke(app, ["token", "revoke", token_id])
    assert again.exit_code == 2 and again.output.startswith("error:")


def test_sessions_list_shows_the_tenants_sessions(env: Path) -> None:
    record = SessionRecord("t1", "demo", "agent", "chromium", created_at=1.0, last_used_at=2.0)
    settings = Settings(data_dir=env)
    on_service(
        settings,
        lambda svc: svc.parts.stores.sessions.set("session/t1/demo", RECORD_JSON.dump_json(record)),
    )
    shown = CliRunner().invoke(app, ["sessions", "list", "--tenant", "t1"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "demo" in shown.output and "agent" in shown.output
    other = CliRunner().invoke(app, ["sessions", "list", "--tenant", "t2"])
    assert other.output.strip() == "no sessions in tenant t2"


def test_sessions_list_and_get_show_each_sites_sign_in_and_json_for_scripts(env: Path) -> None:
    known = SignIn("signed_in", {"source": "heuristic", "auth_cookies": ["sid"],
                                 "summary": "sign-in cookie sid"}, 3.0)  # fmt: skip
    record = SessionRecord(
        "t1", "demo", "agent", "chromium", created_at=1.0, last_used_at=2.0,
        sign_in={"app.example.test": known},
    )  # fmt: skip
    settings = Settings(data_dir=env)
    on_service(
        settings,
        lambda svc: svc.parts.stores.sessions.set("session/t1/demo", RECORD_JSON.dump_json(record)),
    )
    runner, wide = CliRunner(), {"COLUMNS": "250"}
    shown = runner.invoke(app, ["sessions", "list", "--tenant", "t1"], env=wide)
    assert "app.example.test: signed in (sign-in cookie sid)" in shown.output
    listed = json.loads(runner.invoke(app, ["sessions", "list", "--tenant", "t1", "--json"]).output)
    (row,) = listed["sessions"]
    assert row["sign_in"]["app.example.test"] == known.as_json()
    one = runner.invoke(app, ["sessions", "get", "demo", "--tenant", "t1"], env=wide)
    assert one.exit_code == 0, one.output
    assert "saves by itself: yes" in one.output
    assert "app.example.test: signed in (sign-in cookie sid)" in one.output
    got = json.loads(
        runner.invoke(app, ["sessions", "get", "demo", "--tenant", "t1", "--json"]).output
    )
    assert (got["key"], got["autosave"], got["sign_in"]) == (
        "demo",
        True,
        listed["sessions"][0]["sign_in"],
    )
    missing = runner.invoke(app, ["sessions", "get", "nobody", "--tenant", "t1"])
    assert missing.exit_code == 2 and "nobody" in missing.output


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["token", "create", "--tenant", "t1", "--subject", "ad\udce9le"], "--subject"),
        (["token", "create", "--tenant=t\udcff", "--subject", "me"], "--tenant"),
        (["profile", "create", "caf\udce9", "--tenant", "t1"], "argument 3"),
        (["profile", "list", "--tenant", "t1", "--as", "\udcc3"], "--as"),
        (["journal", "tail", "--tenant", "t1", "--key", "k\ud800"], "--key"),
        (["import", "--from", "state-\udce9.json", "--to", "out.json"], "--from"),
        (["sessions", "list", "--tenant", "\udc80"], "--tenant"),
    ],
    ids=["subject", "tenant=", "profile-name", "as", "journal-key", "path", "sessions"],
)
def test_an_argument_that_is_no_utf8_text_is_refused_naming_it_and_nothing_changes(
    env: Path, args: list[str], named: str
) -> None:
    """Python reads argv bytes that are not UTF-8 as lone surrogates (issue #24): they
    crashed the store, a JSON writer or a receipt. Refused before any command runs."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert f"Invalid value for {named}: not UTF-8 text" in result.output
    assert not (env / "sitekeep.db").exists(), "no store was even opened"
