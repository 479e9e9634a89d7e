"""``sitekeep journal check|replay|tail`` on real journals: JSON-lines files, and Redis
Streams on the real Redis (SPEC §8). Every command runs against both backends."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
import redis
from typer.testing import CliRunner

from fixtures.databases import REDIS_URL, clear_redis_prefix, redis_prefix
from journal_support import Chain
from sitekeep.cli import app
from sitekeep.journal import Journal, JournalKey, open_backend, records
from sitekeep.journal.files import FileJournal
from sitekeep.journal.redis_streams import RedisJournal

ONE = JournalKey("tenant-a", "shop")
TWO = JournalKey("tenant-b", "mail")
TYPED = "correct-horse-battery"


@dataclass(frozen=True)
class Journals:
    """The journal the CLI reads (``SITEKEEP_JOURNAL_URL``), and a way to append a line
    under it that bypasses the compare-and-append (a copy spliced in by hand)."""

    url: str
    splice: Callable[[JournalKey, bytes], None]


def _file_splice(root: Path) -> Callable[[JournalKey, bytes], None]:
    def splice(key: JournalKey, line: bytes) -> None:
        with FileJournal(root).path(key).open("ab") as file:
            file.write(line)

    return splice


def _redis_splice(url: str) -> Callable[[JournalKey, bytes], None]:
    def splice(key: JournalKey, line: bytes) -> None:
        journal = RedisJournal(url)
        record = json.loads(line)
        client = redis.Redis.from_url(journal.options.client_url)
        try:
            client.xadd(journal.stream(key), {"id": record["id"], "r": line.rstrip(b"\n")})
        finally:
            client.close()

    return splice


@pytest.fixture(params=["files", "redis"])
def journals(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Journals]:
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(tmp_path))
    if request.param == "files":
        monkeypatch.delenv("SITEKEEP_JOURNAL_URL", raising=False)
        yield Journals(f"file://{tmp_path / 'journal'}", _file_splice(tmp_path / "journal"))
        return
    prefix = redis_prefix()
    url = f"{REDIS_URL}?prefix={prefix}"
    monkeypatch.setenv("SITEKEEP_JOURNAL_URL", url)
    try:
        yield Journals(url, _redis_splice(url))
    finally:
        clear_redis_prefix(REDIS_URL, prefix)


def write(journals: Journals, key: JournalKey, chain: Chain) -> None:
    async def go() -> None:
        journal = Journal(open_backend(journals.url))
        try:
            for record in chain.made:
                await journal.write(key, record)
        finally:
            await journal.aclose()

    anyio.run(go)


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
    crash = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.output + (repr(crash) if crash else "")


def test_check_reads_every_sessions_journal_and_finds_nothing_wrong(journals: Journals) -> None:
    write(journals, ONE, shop())
    write(journals, TWO, shop())
    code, output = run("check")
    assert code == 0, output
    assert "tenant-a/shop" in output and "tenant-b/mail" in output
    assert "2 journal(s) checked, 0 with problems" in output
    code, output = run("check", "--tenant", "tenant-b", "--json")
    assert code == 0, output
    assert [(r["tenant"], r["key"], r["ok"]) for r in json.loads(output)] == [
        ("tenant-b", "mail", True)
    ]
    code, output = run("check", "--tenant", "tenant-a", "--key", "shop")
    assert code == 0 and "1 journal(s) checked, 0 with problems" in output, output


def test_check_reports_a_duplicated_record_id_and_exits_1(journals: Journals) -> None:
    chain = shop()
    write(journals, ONE, chain)
    again = chain.made[1]  # a record appended a second time, copied by hand
    journals.splice(ONE, records.encode(again))
    code, output = run("check", "--json")
    assert code == 1, output
    (report,) = json.loads(output)
    duplicates = [p for p in report["problems"] if p["kind"] == "duplicate_id"]
    assert len(duplicates) == 1, report
    assert duplicates[0]["line"] == len(chain.made) + 1
    assert again.id in duplicates[0]["message"] and "line 2" in duplicates[0]["message"]
    code, output = run("check")
    assert code == 1 and "duplicate_id" in output and "1 with problems" in output, output


def test_replay_shows_url_refs_and_the_unsettled_call(journals: Journals) -> None:
    write(journals, ONE, shop())
    code, output = run("replay", "--tenant", "tenant-a", "--key", "shop", "--json")
    assert code == 0, output
    body = json.loads(output)
    assert body["url"] == "https://shop.example.test/cart"
    assert body["refs"]["snapshot"] == "s1" and body["refs"]["count"] == 3
    assert [p["op"] for p in body["unsettled"]] == ["type"]
    assert body["history"][0]["origin"] == "https://shop.example.test"
    code, output = run("replay", "--tenant", "tenant-a", "--key", "shop")
    assert code == 0 and "unsettled type" in output and "refs: s1" in output, output


def test_tail_lists_the_last_operations_without_values(journals: Journals) -> None:
    write(journals, ONE, shop())
    code, output = run("tail", "--tenant", "tenant-a", "--key", "shop", "-n", "3", "--json")
    assert code == 0, output
    rows = json.loads(output)
    assert [r["op"] for r in rows] == ["snapshot", "type"]
    assert rows[-1]["args"] == {"ref": "e2", "text": {"length": len(TYPED)}}
    code, output = run("tail", "--tenant", "tenant-a", "--key", "shop")
    assert code == 0 and "navigate" in output and "pending" in output, output
    assert TYPED not in output


def test_a_session_with_no_journal_checks_replays_and_tails_empty(journals: Journals) -> None:
    code, output = run("check", "--tenant", "tenant-a", "--key", "none", "--json")
    assert code == 0 and json.loads(output)[0]["records"] == 0, output
    code, output = run("tail", "--tenant", "tenant-a", "--key", "none", "--json")
    assert code == 0 and json.loads(output) == [], output
    code, output = run("check")
    assert code == 0 and "0 journal(s) checked" in output, output


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SITEKEEP_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("SITEKEEP_JOURNAL_URL", raising=False)
    return tmp_path


def write_file(data_dir: Path, key: JournalKey, chain: Chain) -> Path:
    write(Journals(f"file://{data_dir / 'journal'}", _file_splice(data_dir)), key, chain)
    return FileJournal(data_dir / "journal").path(key)


def test_check_reports_a_corrupt_line_and_a_torn_tail_and_exits_1(data_dir: Path) -> None:
    path = write_file(data_dir, ONE, shop())
    lines = path.read_bytes().splitlines(keepends=True)
    offset = len(lines[0])
    lines[1] = lines[1][:20] + b"\x00" + lines[1][21:]
    path.write_bytes(b"".join(lines) + b'{"type":"begin"')
    code, output = run("check")
    assert code == 1
    assert f"corrupt line 2, byte {offset}" in output
    assert "torn tail: 15 bytes" in output and "not committed" in output


def test_file_reads_a_journal_copied_aside(data_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "aside" / "copy.jsonl"
    copy.parent.mkdir()
    shutil.copy(write_file(data_dir, ONE, shop()), copy)
    code, output = run("replay", "--file", str(copy), "--json")
    assert code == 0 and json.loads(output)["url"] == "https://shop.example.test/cart"
    code, output = run("check", "--file", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no journal file" in output


def test_a_session_needs_both_tenant_and_key(data_dir: Path) -> None:
    code, output = run("replay", "--tenant", "tenant-a")
    assert code == 2 and "--tenant and --key" in output


def test_an_unreachable_redis_journal_is_one_line_and_exit_2(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SITEKEEP_JOURNAL_URL", "redis://127.0.0.1:1/0")
    for args in (("check",), ("tail", "--tenant", "a", "--key", "b")):
        code, output = run(*args)
        assert code == 2, output
        assert "the Redis journal is unavailable" in output and "Traceback" not in output


def test_the_cli_does_not_load_the_journal_until_a_journal_command_runs() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, sitekeep.cli; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "sitekeep.journal" not in loaded and "msgspec" not in loaded
