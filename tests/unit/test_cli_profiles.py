"""``sitekeep profile …`` and ``sitekeep import|export --profile|--session`` (SPEC §9, §15)
on a real data dir: the gate applies to the CLI as to every caller, and no command prints
a value."""

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
from sitekeep.model import Principal, SessionRecord
from sitekeep.service import Service
from support import cli_data_dir, on_service

SID = "dummy-cli-sid-9d0b"
STATE = {
    "cookies": [
        {
            "name": "sessionid",
            "value": SID,
            "domain": "app.example.test",
            "path": "/",
            "expires": int(time.time()) + 86_400 * 30,
            "httpOnly": True,
            "secure": False,
            "sameSite": "lax",
        }
    ],
    "origins": [],
}


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path: Path = cli_data_dir(monkeypatch, tmp_path / "data")
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert SID not in result.stdout and SID not in result.stderr
    return result.exit_code, result.stdout, result.stderr


def test_a_profile_made_filled_listed_exported_and_deleted_from_the_shell(
    data_dir: Path, tmp_path: Path
) -> None:
    code, out, _ = run("profile", "create", "staging", "--tenant", "t1", "--as", "ada")
    assert code == 0
    ident = re.search(r"created profile (\w+)", out).group(1)  # type: ignore[union-attr]
    source = tmp_path / "state.json"
    source.write_text(json.dumps(STATE), encoding="utf-8")
    code, out, err = run(
        "import", "--from", str(source), "--profile", ident, "--tenant", "t1", "--as", "ada"
    )
    assert code == 0, err
    receipt = json.loads(Path(f"{source}.{ident}.receipt.json").read_text(encoding="utf-8"))
    assert receipt["output"] == {"profile": ident} and receipt["carried"]["cookies"] == 1
    assert SID not in json.dumps(receipt)

    code, out, _ = run("profile", "list", "--tenant", "t1", "--as", "ada")
    assert code == 0 and "staging" in out and "app.example.test" in out
    # Private: another subject of the tenant, admin or not, finds nothing.
    code, out, _ = run("profile", "list", "--tenant", "t1", "--as", "bob")
    assert code == 0 and "no profiles" in out
    code, _, err = run("profile", "show", ident, "--tenant", "t1", "--as", "bob")
    assert code == 2 and f"no profile named {ident!r}" in err

    out_file = tmp_path / "out.txt"
    code, _, err = run(
        "export", "--profile", ident, "--to", str(out_file), "--tenant", "t1", "--as", "ada"
    )
    assert code == 0, err
    assert SID in out_file.read_text(encoding="utf-8")
    assert (out_file.stat().st_mode & 0o777) == 0o600
    code, _, err = run(
        "export", "--profile", ident, "--to", str(out_file), "--tenant", "t1", "--as", "ada"
    )
    assert code == 2 and "exists" in err

    code, out, _ = run(
        "profile", "update", ident, "--tenant", "t1", "--as", "ada", "--visibility", "workspace"
    )
    assert code == 0 and "workspace" in out
    code, _, err = run("profile", "delete", ident, "--tenant", "t1", "--as", "bob", "--member")
    assert code == 2 and "only its creator or an admin" in err
    code, out, _ = run("profile", "delete", ident, "--tenant", "t1", "--as", "boss")
    assert code == 0
    code, out, _ = run("profile", "list", "--tenant", "t1", "--as", "ada")
    assert "no profiles" in out


def test_a_sessions_snapshot_is_imported_and_exported_from_the_shell(
    data_dir: Path, tmp_path: Path
) -> None:
    settings = Settings()

    async def seed(svc: Service) -> None:
        now = time.time()
        record = SessionRecord("t1", "s1", "ada", "chromium", now, now)
        who = Principal("t1", "ada", "admin")

        async def body() -> dict[str, Any]:
            await svc.parts.seam.records.load("t1", "s1")
            await svc.parts.seam.records.put(record)
            return {}

        await svc.parts.seam.call(who, "s1", lambda _: body(), inspect=False)

    on_service(settings, seed)
    source = tmp_path / "state.json"
    source.write_text(json.dumps(STATE), encoding="utf-8")
    code, _, err = run("import", "--from", str(source), "--session", "s1", "--tenant", "t1")
    assert code == 0, err
    receipt = json.loads(Path(f"{source}.s1.receipt.json").read_text(encoding="utf-8"))
    assert receipt["output"] == {"session": "s1"}
    out_file = tmp_path / "back.json"
    code, _, err = run("export", "--session", "s1", "--to", str(out_file), "--tenant", "t1")
    assert code == 0, err
    back = json.loads(out_file.read_text(encoding="utf-8"))
    assert [(c["name"], c["value"]) for c in back["cookies"]] == [("sessionid", SID)]
    elsewhere = tmp_path / "theirs.json"
    code, _, err = run("export", "--session", "s1", "--to", str(elsewhere), "--tenant", "t2")
    assert code == 2 and "no session named 's1'" in err and not elsewhere.exists()
