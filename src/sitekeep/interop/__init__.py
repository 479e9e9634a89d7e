"""Import and export of site data in other tools' formats (SPEC §15).

Playwright's storage state JSON and Netscape cookies.txt, to and from sitekeep's
``SiteData``: :func:`import_text` and :func:`export_site_data` (pure, in memory), with a
:class:`Report` of what was carried, changed and dropped, and why. Files are read and
written by :mod:`sitekeep.interop.files`, carefully, with a receipt.
"""

from __future__ import annotations

from sitekeep.interop.convert import (
    FORMATS,
    Exported,
    Format,
    Imported,
    detect_format,
    export_site_data,
    import_text,
)
from sitekeep.interop.report import Note, Report

__all__ = [
    "FORMATS",
    "Exported",
    "Format",
    "Imported",
    "Note",
    "Report",
    "detect_format",
    "export_site_data",
    "import_text",
]
