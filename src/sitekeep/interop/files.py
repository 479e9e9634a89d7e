"""Careful file handling for imports and exports, and their receipts (SPEC §15).

The files hold sign-ins, so conversions treat them as such:

* **Source**: opened read-only, never through a symbolic link (``O_NOFOLLOW``), a regular
  file only (a FIFO or a device could block or never end), at most
  :data:`MAX_SOURCE_BYTES`; its SHA-256 and size are taken from the bytes read. Text must
  be UTF-8 (a byte-order mark is allowed and said so).
* **Output**: written to a private staged file (mode 0600, beside the output, created
  exclusively), fsynced, then published with ``link(2)``, which fails when the name is
  taken — an existing file, a dangling symbolic link — so nothing is ever overwritten or
  followed; then the folder is fsynced. The output is private (0600) like the staged file.
* **Refused**: an occupied output (or receipt), an output that is the source under
  another name (a hard link), and a source that changed during the run (its identity,
  size or times differ, or its bytes no longer hash the same), checked just before
  publishing. A refusal or a fault leaves no staged file and no output behind.
* **Receipt**: both paths, sha256 and byte counts of source and output, the formats, and
  what was read, carried, changed and dropped (with why) — never a value. It is
  published the same way, next to the output by default.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitekeep.errors import Conflict, InvalidInput
from sitekeep.interop.convert import Format, detect_format, export_site_data, import_text
from sitekeep.interop.report import Report
from sitekeep.version import __version__

__all__ = [
    "MAX_SOURCE_BYTES",
    "Published",
    "Source",
    "check_unchanged",
    "convert_file",
    "decode_text",
    "file_entry",
    "publish",
    "read_source",
    "receipt",
    "receipt_bytes",
]

MAX_SOURCE_BYTES = 64 * 1024 * 1024
"""A storage state of a busy browser is a few MB; anything far larger is not one."""

_STAGED = ".sitekeep-staged"


@dataclass(frozen=True, slots=True)
class Source:
    """A source file as read: its absolute path, bytes, digest and identity."""

    path: Path
    data: bytes
    sha256: str
    identity: tuple[int, int, int, int, int]
    """(device, inode, size, mtime_ns, ctime_ns) when it was read."""

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class Published:
    """A file published by :func:`publish`: its path, byte count and SHA-256."""

    path: Path
    size: int
    sha256: str


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_source(path: Path, *, limit: int = MAX_SOURCE_BYTES) -> Source:
    """The bytes of ``path``, read-only, not through a symbolic link.

    Raises:
        InvalidInput: ``source`` — missing, a symbolic link, not a regular file, too
            large, or unreadable.
    """
    path = Path(os.path.abspath(path))
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise InvalidInput(f"{path} does not exist", field="source") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidInput(
                f"{path} is a symbolic link: give the file it points to", field="source"
            ) from exc
        raise InvalidInput(f"{path} cannot be read: {exc.strerror}", field="source") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InvalidInput(f"{path} is not a regular file", field="source")
    with os.fdopen(fd, "rb") as file:
        if st.st_size > limit:
            raise InvalidInput(f"{path} is larger than {limit} bytes", field="source")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise InvalidInput(f"{path} is larger than {limit} bytes", field="source")
    return Source(path, data, hashlib.sha256(data).hexdigest(), _identity(st))


def decode_text(source: Source, report: Report | None = None) -> str:
    """The source as text: UTF-8, a leading byte-order mark allowed (and remarked).

    Raises:
        InvalidInput: ``source`` — not UTF-8 (the byte offset named, never the bytes).
    """
    data = source.data
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
        if report is not None:
            report.remarks.append("the source starts with a UTF-8 byte-order mark; it was skipped")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{source.path} is not UTF-8 (byte {exc.start})", field="source"
        ) from exc


def check_unchanged(source: Source) -> None:
    """Refuse when the source changed since it was read: another file under its name,
    other size or times, or other bytes.

    Raises:
        Conflict: the source changed during the run.
    """
    try:
        again = read_source(source.path, limit=max(source.size, 1))
    except InvalidInput as exc:
        raise Conflict(f"{source.path} changed during the run: {exc.message}") from exc
    if again.identity != source.identity or again.sha256 != source.sha256:
        raise Conflict(f"{source.path} changed during the run: nothing was written")


def _check_free(path: Path, source: Source | None, what: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise InvalidInput(f"{path.parent} is not a folder", field=what) from None
        return
    if source is not None and (st.st_dev, st.st_ino) == source.identity[:2]:
        raise Conflict(f"{path} is the source itself (the same file): choose another {what}")
    raise Conflict(f"{path} exists: a conversion never overwrites; choose another {what}")


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _stage(path: Path, data: bytes) -> Path:
    staged = path.with_name(f".{path.name}.{secrets.token_hex(6)}{_STAGED}")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    return staged


def publish(path: Path, data: bytes, *, before: Callable[[], None] | None = None) -> Published:
    """Write ``data`` to a new file ``path`` (mode 0600): staged, fsynced, then linked
    into place only if the name is free; ``before`` runs (and may refuse) right before.

    Raises:
        Conflict: ``path`` is taken (checked by the link itself, so no race can make it
            overwrite).
        InvalidInput: its folder does not exist.
    """
    path = Path(os.path.abspath(path))
    if not path.parent.is_dir():
        raise InvalidInput(f"{path.parent} is not a folder", field="output")
    staged = _stage(path, data)
    try:
        if before is not None:
            before()
        try:
            os.link(staged, path, follow_symlinks=False)
        except FileExistsError as exc:
            raise Conflict(f"{path} exists: a conversion never overwrites") from exc
    finally:
        staged.unlink(missing_ok=True)
    _fsync_folder(path.parent)
    return Published(path, len(data), hashlib.sha256(data).hexdigest())


def receipt(
    kind: str,
    *,
    source: dict[str, Any],
    output: dict[str, Any],
    report: Report,
    now: float,
) -> dict[str, Any]:
    """The receipt of one conversion (JSON-able; no value in it)."""
    return {
        "sitekeep": __version__,
        "kind": kind,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "source": source,
        "output": output,
        **report.as_json(),
    }


def file_entry(path: Path, size: int, sha256: str, fmt: str) -> dict[str, Any]:
    """A file's entry in a receipt: where, how many bytes, its SHA-256, its format."""
    return {"path": str(path), "bytes": size, "sha256": sha256, "format": fmt}


def convert_file(
    source_path: Path,
    output_path: Path,
    *,
    to: Format,
    source_format: Format | None = None,
    receipt_path: Path | None = None,
    strict: bool = False,
    now: float | None = None,
) -> dict[str, Any]:
    """Convert a storage state or cookies.txt file into a new file of format ``to``,
    carefully (module docstring), and publish its receipt (default
    ``<output>.receipt.json``). Returns the receipt.

    Raises:
        InvalidInput: the source cannot be read or parsed (the field named), or —
            ``strict`` — a cookie would be dropped.
        Conflict: the output or receipt exists, the output is the source, or the source
            changed during the run. Nothing is written then.
    """
    at = time.time() if now is None else now
    output_path = Path(os.path.abspath(output_path))
    receipt_path = Path(os.path.abspath(receipt_path or f"{output_path}.receipt.json"))
    source = read_source(source_path)
    imported_report = Report()
    text = decode_text(source, imported_report)
    imported = import_text(text, source_format, at, strict=strict)
    exported = export_site_data(imported.site_data, to)
    report = _merge(imported.report, exported.report, imported_report.remarks)
    for path, what in ((output_path, "output"), (receipt_path, "receipt")):
        _check_free(path, source, what)
    if receipt_path == output_path:
        raise InvalidInput("the receipt and the output must be two files", field="receipt")
    published = publish(output_path, exported.data, before=lambda: check_unchanged(source))
    done = receipt(
        "convert",
        source=file_entry(
            source.path, source.size, source.sha256, source_format or detect_format(text)
        ),
        output=file_entry(published.path, published.size, published.sha256, to),
        report=report,
        now=at,
    )
    try:
        publish(receipt_path, receipt_bytes(done))
    except BaseException:
        with contextlib.suppress(OSError):
            published.path.unlink()  # no output without its receipt
        raise
    return done


def receipt_bytes(done: dict[str, Any]) -> bytes:
    """A receipt as its file holds it: indented JSON, UTF-8, a newline at the end."""
    return (json.dumps(done, indent=2, ensure_ascii=False) + "\n").encode()


def _merge(imported: Report, exported: Report, remarks: list[str]) -> Report:
    """One report for a file-to-file conversion: read from the import, carried from the
    export, the export's notes marked as such."""
    merged = Report(read=imported.read, carried=exported.carried)
    merged.notes = list(imported.notes)
    for note in exported.notes:
        merged.note(
            f"output {note.where}", note.name, note.domain, note.action, note.rule, note.reason
        )
    merged.remarks = [*remarks, *imported.remarks, *exported.remarks]
    return merged
