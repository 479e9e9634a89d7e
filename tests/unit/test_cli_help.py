"""The CLI that helps (issue #14 item 5): a light import for a fast ``--help``, flags shown
as flags, help text without raw backticks and rewrapped, errors naming the flag, token
list/revoke and sessions list."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from sitekeep import interop
from sitekeep.cli import app
from sitekeep.cli.interop import FORMATS

WIDE = {"COLUMNS": "200"}
HEAVY = (
    "pydantic",
    "pydantic_settings",
    "anyio",
    "httpx",
    "selenium",
    "fastapi",
    "sqlalchemy",
    "sitekeep.config",
    "sitekeep.model",
    "sitekeep.service",
    "sitekeep.interop",
)


def test_importing_the_command_loads_none_of_the_heavy_modules() -> None:
    probe = f"import sys, sitekeep.cli; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert loaded == []


SERVER = ("anyio", "mcp", "sitekeep.mcp", "sitekeep.service", "selenium", "sqlalchemy")
"""What serving MCP loads: ``sitekeep mcp`` without a token needs none of it to say so."""


def test_mcp_without_a_token_says_so_before_loading_the_server(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from sitekeep.cli import main\n"
        "sys.argv = ['sitekeep', 'mcp']\n"
        "try:\n    main()\n"
        "except SystemExit as exit:\n"
        f"    loaded = [m for m in {SERVER!r} if m in sys.modules]\n"
        "    print(exit.code, *loaded)"
    )
    env = {"PATH": "/usr/bin:/bin", "SITEKEEP_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert "set SITEKEEP_TOKEN" in " ".join(done.stderr.split())
    assert done.stdout.split() == ["2"]


def test_the_help_knows_the_converters_formats() -> None:
    assert FORMATS == interop.FORMATS


def _every_command() -> list[list[str]]:
    found: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


@pytest.mark.parametrize("path", _every_command(), ids=lambda p: " ".join(p) or "sitekeep")
def test_every_help_shows_flags_as_flags_and_no_raw_backticks(path: list[str]) -> None:
    shown = CliRunner().invoke(app, [*path, "--help"], env=WIDE)
    assert shown.exit_code == 0, shown.output
    assert "<bool>" not in shown.output
    assert "`" not in shown.output


def test_help_paragraphs_are_rewrapped_not_broken_mid_sentence() -> None:
    shown = CliRunner().invoke(app, ["stop", "--help"], env=WIDE).output
    sentence = "Browsers outlive sitekeep serve on purpose (a restart continues them); this"
    assert f"{sentence} is how to end them." in shown
