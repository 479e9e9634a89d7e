"""The sitekeep command: token create, doctor, stop (no browser started)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sitekeep.cli import app
from sitekeep.stores.sql import TokenStore


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
    store = TokenStore(f"sqlite:///{env / 'sitekeep.db'}")
    principal = store.resolve_sync(token)
    store.close()
    assert principal is not None and (principal.tenant, principal.role) == ("t1", "member")
    assert token.encode() not in (env / "sitekeep.db").read_bytes()


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


def test_doctor_changes_nothing_on_a_fresh_data_dir(env: Path) -> None:
    result = CliRunner().invoke(app, ["doctor"])
    assert "generated at first start" in result.output
    assert list(env.iterdir()) == []


def test_stop_with_nothing_running_says_so(env: Path) -> None:
    result = CliRunner().invoke(app, ["stop"])
    assert result.exit_code == 0, result.output
    assert "no session browser was running" in result.output
