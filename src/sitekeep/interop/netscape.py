"""Netscape cookies.txt, read and written (SPEC §15).

The format of curl, wget, yt-dlp and Python's ``http.cookiejar.MozillaCookieJar``: one
cookie a line, seven tab-separated fields::

    domain  include-subdomains  path  secure  expiry  name  value

``include-subdomains`` and ``secure`` are ``TRUE``/``FALSE``; ``expiry`` is whole seconds
since the epoch, ``0`` — or an empty field, as Python's ``MozillaCookieJar`` and curl read
it — for a session cookie. A line starting ``#HttpOnly_`` is an
httpOnly cookie (curl's convention); other ``#`` lines and blank lines are comments. The
format has no SameSite, no partition key and no Web Storage: writing one says what it
could not carry. A line that cannot be read is dropped with a note giving its number —
and never its text, which may hold a value. What no writer writes and nothing after could
hold refuses the whole file, naming the line: a lone surrogate (text from another
encoding, through the Python API), an expiry of more than ``MAX_DIGITS`` digits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sitekeep.client_json import TOO_LARGE, check_text
from sitekeep.errors import InvalidInput
from sitekeep.interop.report import Report
from sitekeep.interop.rules import RawCookie
from sitekeep.limits import MAX_DIGITS
from sitekeep.model import Cookie
from sitekeep.version import __version__

__all__ = ["HEADER", "cookies_to_text", "read_cookies_txt"]

HEADER = "# Netscape HTTP Cookie File"
_HTTP_ONLY = "#HttpOnly_"
_BOOL = {"TRUE": True, "FALSE": False}
_NUMBER = re.compile(r"[+-]?([0-9]+)(?:\.[0-9]*)?")


def _malformed(report: Report, where: str, why: str) -> None:
    report.read["cookies"] += 1  # a cookie line, though not one that can be read
    report.note(where, "", "", "dropped", "line-malformed", f"not a cookies.txt line: {why}")


def _line(text: str, number: int, report: Report) -> RawCookie | None:
    where = f"line {number}"
    http_only = text.startswith(_HTTP_ONLY)
    if http_only:
        text = text[len(_HTTP_ONLY) :]
    fields = text.split("\t")
    if len(fields) == 6:  # some writers leave out the tab before an empty value
        fields.append("")
    if len(fields) != 7:
        _malformed(report, where, f"{len(fields)} tab-separated fields, not 7")
        return None
    domain, subdomains, path, secure, expiry, name, value = fields
    if subdomains.upper() not in _BOOL or secure.upper() not in _BOOL:
        _malformed(report, where, "include-subdomains and secure must be TRUE or FALSE")
        return None
    written = _NUMBER.fullmatch(expiry.strip() or "0")  # empty: a session cookie
    if written is None:
        _malformed(report, where, "the expiry is not a number")
        return None
    if len(written.group(1)) > MAX_DIGITS:
        raise InvalidInput(f"{where}.expiry: {TOO_LARGE}", field=f"{where}.expiry")
    expires = float(written.group(0))
    return RawCookie(
        where=where,
        name=name,
        value=value,
        domain=domain,
        path=path or None,
        expires=expires,
        http_only=http_only,
        secure=_BOOL[secure.upper()],
        host_only=not _BOOL[subdomains.upper()],
        expires_session=0,
    )


def read_cookies_txt(text: str, report: Report) -> list[RawCookie]:
    """The cookies of a cookies.txt file; unreadable lines noted as dropped.

    Raises:
        InvalidInput: a line holds a lone surrogate, or an expiry of more than
            ``MAX_DIGITS`` digits (``line 3``, ``line 3.expiry``).
    """
    cookies: list[RawCookie] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = check_text(line.rstrip("\r"), f"line {number}")
        if not line.strip() or (line.startswith("#") and not line.startswith(_HTTP_ONLY)):
            continue
        cookie = _line(line, number, report)
        if cookie is not None:
            cookies.append(cookie)
    return cookies


_UNWRITABLE = frozenset("\t\r\n")


def cookies_to_text(cookies: Sequence[Cookie], report: Report) -> tuple[str, int]:
    """cookies.txt text of ``cookies`` and how many it holds; what the format cannot
    say is noted (SameSite changed, partitioned cookies and unwritable ones dropped)."""
    lines = [HEADER, f"# Written by sitekeep {__version__}. This file holds login cookies.", ""]
    for i, c in enumerate(cookies):
        where = f"cookies[{i}]"
        if c.partition_key:
            report.note(
                where,
                c.name,
                c.domain,
                "dropped",
                "partition-lost",
                "cookies.txt has no partition key: written unpartitioned it would be "
                "sent where the site never sent it",
            )
            continue
        if _UNWRITABLE & set(c.name + c.value + c.domain + c.path) or c.domain.startswith("#"):
            report.note(
                where,
                c.name,
                c.domain,
                "dropped",
                "value-unwritable",
                "a tab or line break in it cannot be written to cookies.txt",
            )
            continue
        if c.same_site != "default":
            report.note(
                where,
                c.name,
                c.domain,
                "changed",
                "same-site-lost",
                f"cookies.txt has no SameSite: SameSite={c.same_site.title()} is not carried",
            )
        prefix = _HTTP_ONLY if c.http_only else ""
        subdomains = "TRUE" if c.domain.startswith(".") else "FALSE"
        secure = "TRUE" if c.secure else "FALSE"
        expiry = 0 if c.expiry is None else c.expiry
        lines.append(
            f"{prefix}{c.domain}\t{subdomains}\t{c.path}\t{secure}\t{expiry}\t{c.name}\t{c.value}"
        )
    return "\n".join(lines) + "\n", len(lines) - 3
