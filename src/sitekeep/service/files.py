"""The file side of ``sitekeep import`` and ``sitekeep export`` (SPEC §15).

A file is read carefully and published with a receipt (:mod:`sitekeep.interop.files`);
the profile or session at the other end is the service's (:class:`~sitekeep.service.
interop.Interop`, behind its gate). An import into a profile or a session runs in three
steps, so a bad file is refused before any store is opened: :func:`read_import`, then
the room's ``import_*_state``, then :func:`finish_import`. An export: :func:`check_free`,
the room's ``*_site_data``, then :func:`export_to`. :func:`convert_file` is file to file.
None of them needs an open service (this module loads no store).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitekeep.errors import Conflict
from sitekeep.interop import Format, Report, detect_format, export_site_data
from sitekeep.interop.files import (
    Source,
    check_unchanged,
    convert_file,
    decode_text,
    file_entry,
    publish,
    read_source,
    receipt,
    receipt_bytes,
)
from sitekeep.model import SiteData

__all__ = [
    "Format",
    "Incoming",
    "check_free",
    "convert_file",
    "export_to",
    "finish_import",
    "read_import",
]


@dataclass(frozen=True, slots=True)
class Incoming:
    """A file read for an import: its text, as read, and what reading it remarked."""

    source: Source
    text: str
    remarks: Report


def check_free(path: Path) -> None:
    """Nothing at ``path``: an import or export never overwrites a file.

    Raises:
        Conflict: a file or a link is there.
    """
    if path.exists() or path.is_symlink():
        raise Conflict(f"{path} exists: a conversion never overwrites")


def read_import(source_path: Path, receipt_path: Path) -> Incoming:
    """The file to import, read carefully (not through a link, bounded, decoded, and
    unchanged while read), once the receipt's place is known to be free.

    Raises:
        Conflict: the receipt exists, or the file changed while it was read.
        InvalidInput: the file cannot be read or decoded (``source``).
    """
    check_free(receipt_path)
    source = read_source(source_path)
    remarks = Report()
    text = decode_text(source, remarks)
    check_unchanged(source)
    return Incoming(source, text, remarks)


def finish_import(
    incoming: Incoming,
    fmt: Format | None,
    output: dict[str, str],
    report: dict[str, Any],
    receipt_path: Path,
) -> dict[str, Any]:
    """The import's receipt, published at ``receipt_path``, and returned.

    Args:
        fmt: the source's format as given (None: detected from its text).
        output: where it went: ``{"profile": id}`` or ``{"session": key}``.
        report: the room's import report (read, carried, changed, dropped, remarks).

    Raises:
        Conflict, StoreUnavailable: the receipt cannot be published.
    """
    source = incoming.source
    done = receipt(
        "import",
        source=file_entry(
            source.path, source.size, source.sha256, fmt or detect_format(incoming.text)
        ),
        output=output,
        report=Report(),
        now=time.time(),
    )
    done.update(report)
    done["remarks"] = [*incoming.remarks.remarks, *done["remarks"]]
    publish(receipt_path, receipt_bytes(done))
    return done


def export_to(
    site_data: SiteData, output: Path, to: Format, source: dict[str, str], receipt_path: Path
) -> dict[str, Any]:
    """``site_data`` written to the new file ``output`` in format ``to``, its receipt
    published at ``receipt_path`` and returned.

    Args:
        source: where it came from: ``{"profile": id}`` or ``{"session": key}``.

    Raises:
        Conflict: ``output`` exists (nothing is written).
    """
    exported = export_site_data(site_data, to)
    published = publish(Path(os.path.abspath(output)), exported.data)
    done = receipt(
        "export",
        source=source,
        output=file_entry(published.path, published.size, published.sha256, to),
        report=exported.report,
        now=time.time(),
    )
    publish(receipt_path, receipt_bytes(done))
    return done
