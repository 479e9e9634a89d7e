"""Careful file handling and receipts of conversions, and ``sitekeep import|export``
(SPEC §15)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sitekeep.cli import app
from sitekeep.errors import Conflict, InvalidInput
from sitekeep.interop import files
from sitekeep.interop.files import check_unchanged, convert_file, publish, read_source

FIXTURES = Path(__file__).parents[1] / "fixtures" / "interop"
NOW = 1_800_000_000


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "state.json"
    path.write_bytes((FIXTURES / "prefixes.json").read_bytes())
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if "sitekeep-staged" in p.name]


def test_a_conversion_publishes_a_private_output_and_a_receipt_of_both_files(
    source: Path, tmp_path: Path
) -> None:
    output = tmp_path / "cookies.txt"
    done = convert_file(source, output, to="cookies-txt", now=NOW)
    receipt = json.loads((tmp_path / "cookies.txt.receipt.json").read_text(encoding="utf-8"))
    assert receipt == done
    assert receipt["source"] == {
        "path": str(source),
        "bytes": source.stat().st_size,
        "sha256": sha(source),
        "format": "storage-state",
    }
    assert receipt["output"] == {
        "path": str(output),
        "bytes": output.stat().st_size,
        "sha256": sha(output),
        "format": "cookies-txt",
    }
    assert receipt["read"]["cookies"] == receipt["carried"]["cookies"] == 8
    assert receipt["changed"]["host-prefix-domain"] == 2
    assert receipt["kind"] == "convert" and receipt["at"] == "2027-01-15T08:00:00Z"
    for path in (output, tmp_path / "cookies.txt.receipt.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert leftovers(tmp_path) == []
    assert "dummy" not in json.dumps(receipt)
    assert output.read_text(encoding="utf-8").count("dummy-") == 8


def test_a_dropped_cookie_is_counted_and_explained_in_the_receipt(tmp_path: Path) -> None:
    src = tmp_path / "expiry.json"
    src.write_bytes((FIXTURES / "expiry.json").read_bytes())
    done = convert_file(src, tmp_path / "out.json", to="storage-state", now=NOW)
    assert done["dropped"] == {"expiry-past": 2}
    assert done["read"]["cookies"] - done["carried"]["cookies"] == 2
    reasons = [n["reason"] for n in done["notes"] if n["action"] == "dropped"]
    assert all("RFC 6265bis §5.7" in r for r in reasons)


def test_an_occupied_output_is_refused_and_left_as_it_was(source: Path, tmp_path: Path) -> None:
    output = tmp_path / "cookies.txt"
    output.write_text("mine", encoding="utf-8")
    with pytest.raises(Conflict):
        convert_file(source, output, to="cookies-txt", now=NOW)
    assert output.read_text(encoding="utf-8") == "mine"
    assert not (tmp_path / "cookies.txt.receipt.json").exists()
    assert leftovers(tmp_path) == []


def test_an_occupied_receipt_is_refused_before_anything_is_written(
    source: Path, tmp_path: Path
) -> None:
    (tmp_path / "out.txt.receipt.json").write_text("old", encoding="utf-8")
    with pytest.raises(Conflict):
        convert_file(source, tmp_path / "out.txt", to="cookies-txt", now=NOW)
    assert not (tmp_path / "out.txt").exists()


def test_a_dangling_symlink_as_output_is_refused_and_not_followed(
    source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere" / "planted.txt"
    target.parent.mkdir()
    (tmp_path / "out.txt").symlink_to(target)
    with pytest.raises(Conflict):
        convert_file(source, tmp_path / "out.txt", to="cookies-txt", now=NOW)
    assert not target.exists()


def test_the_source_itself_as_output_is_refused(source: Path, tmp_path: Path) -> None:
    before = source.read_bytes()
    with pytest.raises(Conflict) as caught:
        convert_file(source, source, to="storage-state", now=NOW)
    assert "the source itself" in caught.value.message
    alias = tmp_path / "alias.json"
    os.link(source, alias)
    with pytest.raises(Conflict) as caught:
        convert_file(source, alias, to="storage-state", now=NOW)
    assert "the source itself" in caught.value.message
    assert source.read_bytes() == before


def test_a_symlinked_source_is_refused(source: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(source)
    with pytest.raises(InvalidInput) as caught:
        convert_file(link, tmp_path / "out.txt", to="cookies-txt", now=NOW)
    assert caught.value.field == "source" and "symbolic link" in caught.value.message


@pytest.mark.parametrize("kind", ["fifo", "folder", "missing"])
def test_a_source_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "src"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    with pytest.raises(InvalidInput) as caught:
        read_source(path)
    assert caught.value.field == "source"


def test_a_source_over_the_size_limit_is_refused(source: Path) -> None:
    with pytest.raises(InvalidInput):
        read_source(source, limit=100)


def test_a_source_not_in_utf8_is_refused_naming_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"app.example.test\tFALSE\t/\tFALSE\t0\tname\tcaf\xe9\n")
    with pytest.raises(InvalidInput) as caught:
        convert_file(path, tmp_path / "out.json", to="storage-state", now=NOW)
    assert caught.value.field == "source" and "byte 41" in caught.value.message
    assert not (tmp_path / "out.json").exists()


def test_a_byte_order_mark_is_skipped_and_remarked(source: Path, tmp_path: Path) -> None:
    source.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    done = convert_file(source, tmp_path / "out.txt", to="cookies-txt", now=NOW)
    assert done["carried"]["cookies"] == 8
    assert any("byte-order mark" in r for r in done["remarks"])


def test_broken_json_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"cookies": [', encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        convert_file(path, tmp_path / "out.txt", to="cookies-txt", now=NOW)
    assert caught.value.field == "source"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.json"]


def test_strict_refuses_a_lossy_conversion_and_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "expiry.json"
    src.write_bytes((FIXTURES / "expiry.json").read_bytes())
    with pytest.raises(InvalidInput) as caught:
        convert_file(src, tmp_path / "out.json", to="storage-state", now=NOW, strict=True)
    assert caught.value.field == "cookies[7]"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expiry.json"]


@pytest.mark.parametrize("change", ["same-size", "grown", "replaced", "removed"])
def test_a_source_that_changed_during_the_run_is_refused(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    real_export = files.export_site_data

    def export_while_the_source_changes(*args: Any, **kwargs: Any) -> Any:
        data = source.read_bytes()
        if change == "same-size":
            source.write_bytes(data.replace(b"dummy", b"DUMMY", 1))
        elif change == "grown":
            source.write_bytes(data + b" ")
        elif change == "replaced":
            other = tmp_path / "other.json"
            other.write_bytes(data)
            other.replace(source)
        else:
            source.unlink()
        return real_export(*args, **kwargs)

    monkeypatch.setattr(files, "export_site_data", export_while_the_source_changes)
    with pytest.raises(Conflict) as caught:
        convert_file(source, tmp_path / "out.txt", to="cookies-txt", now=NOW)
    assert "changed during the run" in caught.value.message
    assert not (tmp_path / "out.txt").exists()
    assert not (tmp_path / "out.txt.receipt.json").exists()
    assert leftovers(tmp_path) == []


def test_an_unchanged_source_passes_the_check(source: Path) -> None:
    check_unchanged(read_source(source))


def test_publish_never_overwrites_even_when_the_name_is_taken_after_the_check(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.txt"

    def someone_takes_the_name() -> None:
        path.write_text("theirs", encoding="utf-8")

    with pytest.raises(Conflict):
        publish(path, b"ours", before=someone_takes_the_name)
    assert path.read_text(encoding="utf-8") == "theirs"
    assert leftovers(tmp_path) == []


def test_publish_into_a_missing_folder_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        publish(tmp_path / "nowhere" / "out.txt", b"x")
    assert caught.value.field == "output"


# -- the CLI -------------------------------------------------------------------------------


def test_sitekeep_export_converts_file_to_file_and_prints_the_receipt_path(
    source: Path, tmp_path: Path
) -> None:
    output = tmp_path / "cookies.txt"
    result = CliRunner().invoke(app, ["export", "--from", str(source), "--to", str(output)])
    assert result.exit_code == 0, result.output
    assert "receipt:" in result.output and "host-prefix-domain ×2" in result.output
    assert output.read_text(encoding="utf-8").startswith("# Netscape HTTP Cookie File")
    assert (
        json.loads(Path(f"{output}.receipt.json").read_text(encoding="utf-8"))["output"]["format"]
        == "cookies-txt"
    )
    assert "dummy" not in result.output


def test_sitekeep_import_takes_a_format_and_a_receipt_path(tmp_path: Path) -> None:
    src = FIXTURES / "curl.cookies.txt"
    out, receipt = tmp_path / "state.out", tmp_path / "r.json"
    args = ["import", "--from", str(src), "--to", str(out), "--format", "storage-state",
            "--receipt", str(receipt)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text(encoding="utf-8"))["cookies"]) == 3
    assert json.loads(receipt.read_text(encoding="utf-8"))["source"]["format"] == "cookies-txt"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "exists"),
        (["--format", "yaml"], "--format must be"),
        (["--from-format", "har"], "--from-format must be"),
    ],
)
def test_sitekeep_export_refusals_exit_2_with_what_to_do(
    source: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    output = tmp_path / "taken.txt"
    output.write_text("mine", encoding="utf-8")
    result = CliRunner().invoke(app, ["export", "--from", str(source), "--to", str(output), *extra])
    assert result.exit_code == 2
    assert message in result.output
    assert output.read_text(encoding="utf-8") == "mine"


def test_sitekeep_export_asks_for_a_format_it_cannot_tell_from_the_name(
    source: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        app, ["export", "--from", str(source), "--to", str(tmp_path / "out.dat")]
    )
    assert result.exit_code == 2 and "--format" in result.output
