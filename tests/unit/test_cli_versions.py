"""``sitekeep sessions versions …`` and ``sitekeep profile versions …`` (issue #26) on a
real data dir: list (a table, or ``--json``), show by host, restore — never a value; a bad
id is one line naming its argument, exit 2, and nothing changes."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sitekeep.cli import app
from sitekeep.config import Settings
from sitekeep.model import Cookie, Principal, SessionRecord, SiteData
from sitekeep.service import Service
from support import cli_data_dir, on_service

ADA = Principal("t1", "ada", "admin")


def saved(n: int) -> SiteData:
    cookie = Cookie("sid", f"dummy-cli-{n}", "app.example.test", http_only=True)
    return SiteData(cookies=(cookie,), saved_at=1_700_000_000.0 + n)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    cli_data_dir(monkeypatch, tmp_path / "data")
    return Settings()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert "dummy-cli" not in result.stdout + result.stderr
    return result.exit_code, result.stdout, result.stderr


async def seed_session(svc: Service) -> None:
    now = time.time()
    records = svc.parts.seam.records

    async def body() -> dict[str, Any]:
        await records.load("t1", "s1")
        await records.put(SessionRecord("t1", "s1", "ada", "chromium", now, now))
        for n in (1, 2, 3):
            await records.put_snapshot("t1", "s1", saved(n))
        return {}

    await svc.parts.seam.call(ADA, "s1", lambda _: body(), inspect=False)


def test_a_sessions_versions_are_listed_shown_and_restored_from_the_shell(
    settings: Settings,
) -> None:
    on_service(settings, seed_session)
    code, out, _ = run("sessions", "versions", "list", "s1", "--tenant", "t1", "--json")
    assert code == 0
    listed = json.loads(out)
    assert [v["saved_at"] for v in listed] == [1_700_000_002.0, 1_700_000_001.0]
    older = listed[1]["id"]
    code, out, _ = run("sessions", "versions", "list", "s1", "--tenant", "t1")
    assert code == 0 and older in out and "app.example.test" in out
    code, out, _ = run("sessions", "versions", "show", "s1", older, "--tenant", "t1")
    assert code == 0 and "app.example.test" in out and "cookies" in out
    code, out, _ = run("sessions", "versions", "show", "s1", older, "--tenant", "t1", "--json")
    assert json.loads(out)["id"] == older
    code, out, _ = run("sessions", "versions", "restore", "s1", older, "--tenant", "t1")
    assert code == 0 and f"restored version {older} of session s1" in out
    current = on_service(settings, lambda svc: svc.parts.seam.records.load_snapshot("t1", "s1"))
    assert current == saved(1)
    code, out, _ = run("sessions", "versions", "list", "s1", "--tenant", "t2")
    assert code == 2


@pytest.mark.parametrize(
    ("bad", "said"),
    [("v0000000000001-0000", "no version named"), ("nope", "a version id is")],
)
def test_a_bad_version_is_one_line_naming_its_argument_and_changes_nothing(
    settings: Settings, bad: str, said: str
) -> None:
    on_service(settings, seed_session)
    for command in ("show", "restore"):
        code, _, err = run("sessions", "versions", command, "s1", bad, "--tenant", "t1")
        assert code == 2 and err.startswith("error: VERSION: ") and said in err, err
    current = on_service(settings, lambda svc: svc.parts.seam.records.load_snapshot("t1", "s1"))
    assert current == saved(3)
    code, _, err = run("sessions", "versions", "list", "nope", "--tenant", "t1")
    assert code == 2 and err.startswith("error: KEY: no session named 'nope'")


def test_a_profiles_versions_from_the_shell_and_a_member_may_not_restore(
    settings: Settings,
) -> None:
    async def seed(svc: Service) -> str:
        row = await svc.parts.profiles.create(ADA, "staging", visibility="workspace")
        for n in (1, 2):
            await svc.parts.profiles.write(ADA, row.id, saved(n))
        return row.id

    ident = on_service(settings, seed)
    code, out, _ = run(
        "profile", "versions", "list", ident, "--tenant", "t1", "--as", "bob", "--member"
    )
    assert code == 0
    [version] = re.findall(r"v\d{13}-[0-9a-f]{4}", out)
    member = ("--tenant", "t1", "--as", "bob", "--member")
    code, _, err = run("profile", "versions", "restore", ident, version, *member)
    assert code == 2 and "only its creator or an admin" in err
    code, out, _ = run("profile", "versions", "show", ident, version, *member, "--json")
    assert code == 0 and json.loads(out)["profile"] == ident
    code, out, _ = run(
        "profile", "versions", "restore", ident, version, "--tenant", "t1", "--as", "ada"
    )
    assert code == 0 and f"restored version {version} of profile {ident}" in out
    loaded = on_service(settings, lambda svc: svc.parts.profiles.load(ADA, ident, "use"))
    assert loaded.site_data == saved(1)
