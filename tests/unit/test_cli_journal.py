"""``sitekeep journal check|replay|tail`` on real journal files (SPEC §8)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from journal_support import Chain
from sitekeep.cli import app
from sitekeep.journal import Journal, JournalKey, records
from sitekeep.journal.files import FileJournal

ONE = JournalKey("tenant-a", "shop")
TWO = JournalKey("tenant-b", "mail")
TYPED = "correct-horse-battery"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("SITEKEEP_JOURNAL_URL", raising=False)
    return tmp_path


def write(data_dir: Path, key: JournalKey, chain: Chain) -> Path:
    backend = FileJournal(data_dir / "journal")

    async def go() -> None:
        journal = Journal(backend)
        for record in chain.made:
            await journal.write(key, record)

    anyio.run(go)
    return backend.path(key)


def shop() -> Chain:
    chain = Chain()
    chain.op("navigate", page="https://shop.example.test/cart", refs="invalidated")
    chain.snapshot(1)
    started = records.begin(
        "type", {"ref": "e2", "text": TYPED}, parent=chain.state.head, call=records.new_id()
    )
    chain.add(started)
    return chain


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["journal", *args])
    return result.exit_code, result.output


def test_check_reads_every_sessions_journal_and_finds_nothing_wrong(data_dir: Path) -> None:
    write(data_dir, ONE, shop())
    write(data_dir, TWO, shop())
    code, output = run("check")
    assert code == 0, output
    assert "tenant-a/shop" in output and "tenant-b/mail" in output
    assert "2 journal(s) checked, 0 with problems" in output
    code, output = run("check", "--tenant", "tenant-b", "--json")
    assert code == 0
    assert [(r["tenant"], r["key"], r["ok"]) for r in json.loads(output)] == [
        ("tenant-b", "mail", True)
    ]


def test_check_reports_a_corrupt_line_and_a_torn_tail_and_exits_1(data_dir: Path) -> None:
    path = write(data_dir, ONE, shop())
    lines = path.read_bytes().splitlines(keepends=True)
    offset = len(lines[0])
    lines[1] = lines[1][:20] + b"\x00" + lines[1][21:]
    path.write_bytes(b"".join(lines) + b'{"type":"begin"')
    code, output = run("check")
    assert code == 1
    assert f"corrupt line 2, byte {offset}" in output
    assert "torn tail: 15 bytes" in output and "not committed" in output


def test_replay_shows_url_refs_and_the_unsettled_call(data_dir: Path) -> None:
    chain = shop()
    write(data_dir, ONE, chain)
    code, output = run("replay", "--tenant", "tenant-a", "--key", "shop", "--json")
    assert code == 0, output
    body = json.loads(output)
    assert body["url"] == "https://shop.example.test/cart"
    assert body["refs"]["snapshot"] == "s1" and body["refs"]["count"] == 3
    assert [p["op"] for p in body["unsettled"]] == ["type"]
    assert body["history"][0]["origin"] == "https://shop.example.test"
    code, output = run("replay", "--tenant", "tenant-a", "--key", "shop")
    assert code == 0 and "unsettled type" in output and "refs: s1" in output


def test_tail_lists_the_last_operations_without_values(data_dir: Path) -> None:
    write(data_dir, ONE, shop())
    code, output = run("tail", "--tenant", "tenant-a", "--key", "shop", "-n", "3", "--json")
    assert code == 0, output
    rows = json.loads(output)
    assert [r["op"] for r in rows] == ["snapshot", "type"]
    assert rows[-1]["args"] == {"ref": "e2", "text": {"length": len(TYPED)}}
    code, output = run("tail", "--tenant", "tenant-a", "--key", "shop")
    assert code == 0 and "navigate" in output and "pending" in output
    assert TYPED not in output


def test_file_reads_a_journal_copied_aside(data_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "aside" / "copy.jsonl"
    copy.parent.mkdir()
    shutil.copy(write(data_dir, ONE, shop()), copy)
    code, output = run("replay", "--file", str(copy), "--json")
    assert code == 0 and json.loads(output)["url"] == "https://shop.example.test/cart"
    code, output = run("check", "--file", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no journal file" in output


def test_a_session_needs_both_tenant_and_key(data_dir: Path) -> None:
    code, output = run("replay", "--tenant", "tenant-a")
    assert code == 2 and "--tenant and --key" in output


def test_the_cli_does_not_load_the_journal_until_a_journal_command_runs() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, sitekeep.cli; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "sitekeep.journal" not in loaded and "msgspec" not in loaded
