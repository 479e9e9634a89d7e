"""Storage state and cookies.txt to and from sitekeep's ``SiteData`` (SPEC §15).

The one module that builds and takes apart a :class:`~sitekeep.model.SiteData` for the
interop formats: the format modules read and write their files, :mod:`.rules` makes each
cookie one a browser would hold, and this module puts the pieces together and counts them.

An import never drops a cookie silently (every drop is a note, and ``strict`` refuses the
whole import instead of dropping anything); an export says what its format cannot carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sitekeep import client_json
from sitekeep.errors import InvalidInput
from sitekeep.interop.netscape import cookies_to_text, read_cookies_txt
from sitekeep.interop.report import Report
from sitekeep.interop.rules import RawCookie, canonical_origin, dedupe, normalise
from sitekeep.interop.storage_state import (
    WebStorage,
    cookies_to_json,
    read_storage_state,
    storage_state_json,
)
from sitekeep.model import Cookie, OriginStorage, SessionStorage, SiteData, escape_surrogates

__all__ = [
    "FORMATS",
    "Exported",
    "Format",
    "Imported",
    "detect_format",
    "export_site_data",
    "import_text",
    "parse_json",
]

Format = Literal["storage-state", "cookies-txt"]
FORMATS: tuple[Format, ...] = ("storage-state", "cookies-txt")


@dataclass(frozen=True, slots=True)
class Imported:
    """The site data an import made, and its report."""

    site_data: SiteData
    report: Report


@dataclass(frozen=True, slots=True)
class Exported:
    """The bytes of an export (UTF-8), and its report."""

    data: bytes
    report: Report


def _no_constant(name: str) -> Any:
    raise InvalidInput(f"not JSON: {name} is not a JSON number", field="source")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidInput(
                f"not JSON this can read: the key {key!r} is repeated in an object", field="source"
            )
        out[key] = value
    return out


def _web_storage_text(path: client_json.Path) -> bool:
    """Whether ``path`` is a Web Storage name or value — ``origins[i].localStorage`` or
    ``sitekeep.sessionStorage.items``, as ``[{name, value}]`` or ``{name: value}`` — a
    JavaScript string a page wrote, which may hold a lone surrogate (HTML §Web Storage)."""
    local = len(path) > 3 and path[0] == "origins" and path[2] == "localStorage"
    if not (local or path[:3] == ("sitekeep", "sessionStorage", "items")):
        return False
    rest = path[3:]
    by_name = len(rest) == 1 and isinstance(rest[0], str)
    return by_name or (len(rest) == 2 and isinstance(rest[0], int) and rest[1] in ("name", "value"))


def parse_json(text: str) -> Any:
    """Strict JSON: no NaN/Infinity, no repeated key in an object (which would make one
    of two cookies' fields silently win), no unbounded number, and no lone surrogate but
    in a Web Storage name or value (:mod:`sitekeep.client_json`: nothing after could
    encode or hold them; a page's storage holds them, and snapshots keep them).

    Raises:
        InvalidInput: ``source``, with the line and column of the fault (never the text);
            or the field holding a lone surrogate or an unbounded number
            (``cookies[0].expires``).
    """
    try:
        parsed = client_json.loads(
            text, parse_constant=_no_constant, object_pairs_hook=_unique_keys
        )
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", field="source"
        ) from exc
    except RecursionError as exc:
        raise InvalidInput("not JSON this can read: nested too deeply", field="source") from exc
    return client_json.check(parsed, root="source", js_strings=_web_storage_text)


def detect_format(text: str) -> Format:
    """``storage-state`` for JSON (an object or a list), else ``cookies-txt``."""
    return "storage-state" if text.lstrip()[:1] in ("{", "[") else "cookies-txt"


# -- import --------------------------------------------------------------------------------


def _cookies(raw: list[RawCookie], now: float, report: Report) -> list[Cookie]:
    report.read["cookies"] += len(raw)
    normal: list[tuple[RawCookie, Cookie]] = []
    for item in raw:
        cookie = normalise(item, now, report)
        if cookie is not None:
            normal.append((item, cookie))
    return dedupe(normal, report)


def _origin(where: str, written: str, report: Report) -> str | None:
    origin = canonical_origin(written)
    if origin is None:
        report.note(
            where,
            written[:200],
            "",
            "dropped",
            "origin-invalid",
            "not an http(s) origin on a host name a browser would accept (the rule of a "
            "cookie's domain, RFC 6265bis §5.1.2): its storage is not carried",
        )
    elif origin != written:
        report.note(
            where,
            origin,
            "",
            "changed",
            "origin-normalised",
            "origin written as scheme://host[:port] (RFC 6454 §6.2)",
        )
    return origin


def _web_storage(
    storage: WebStorage, report: Report
) -> tuple[dict[str, OriginStorage], SessionStorage | None]:
    local: dict[str, dict[str, str]] = {}
    for where, written, items in storage["local"]:
        report.read["origins"] += 1
        report.read["local_items"] += len(items)
        origin = _origin(where, written, report)
        if origin is None:
            continue
        if origin in local:
            report.note(
                where,
                origin,
                "",
                "changed",
                "origin-repeated",
                "the origin appears twice: its items merged, the later value winning",
            )
        local.setdefault(origin, {}).update(items)
    session = None
    if storage["session"] is not None:
        where, written, items = storage["session"]
        report.read["session_items"] += len(items)
        origin = _origin(where, written, report)
        if origin is not None:
            session = SessionStorage(origin=origin, items=items)
    return {o: OriginStorage(local=i) for o, i in local.items()}, session


def import_text(text: str, fmt: Format | None, now: float, *, strict: bool = False) -> Imported:
    """The site data of a storage state or cookies.txt text, normalised at ``now``.

    Args:
        text: the file's text.
        fmt: its format; None to detect it (:func:`detect_format`).
        now: seconds since the epoch, to judge expiry by; also the snapshot's time.
        strict: refuse the import when any cookie or origin would be dropped.

    Raises:
        InvalidInput: not JSON, a field of the wrong type (named), or — ``strict`` — the
            first item that would be dropped (its place in the file named).
    """
    report = Report()
    fmt = fmt or detect_format(text)
    if fmt == "storage-state":
        raw, storage = read_storage_state(parse_json(text), report)
    else:
        raw, storage = read_cookies_txt(text, report), {"local": [], "session": None}
    cookies = _cookies(raw, now, report)
    origins, session = _web_storage(storage, report)
    if strict and report.dropped:
        first = report.dropped[0]
        raise InvalidInput(f"{first.where} would be dropped: {first.reason}", field=first.where)
    site_data = SiteData(cookies=tuple(cookies), origins=origins, session=session, saved_at=now)
    _count(report.carried, site_data)
    return Imported(site_data, report)


def _count(counts: Any, site_data: SiteData, *, cookies: int | None = None) -> None:
    counts["cookies"] += len(site_data.cookies) if cookies is None else cookies
    counts["origins"] += len(site_data.origins)
    counts["local_items"] += sum(len(o.local) for o in site_data.origins.values())
    counts["session_items"] += len(site_data.session.items) if site_data.session else 0


# -- export --------------------------------------------------------------------------------


def _vendor_remark(site_data: SiteData, report: Report) -> None:
    vendor = sum(1 for c in site_data.cookies if set(c.extras) - {"bidi:valueType"})
    if vendor:
        report.remarks.append(
            f"{vendor} cookies carry browser vendor fields (goog:priority…) that the "
            "format has no place for; browsers set their defaults"
        )


def export_site_data(site_data: SiteData, fmt: Format) -> Exported:
    """``site_data`` as a storage state or cookies.txt file (UTF-8 bytes), and what the
    format could not carry."""
    report = Report()
    _count(report.read, site_data)
    _vendor_remark(site_data, report)
    if fmt == "storage-state":
        return _export_storage_state(site_data, report)
    return _export_cookies_txt(site_data, report)


def _local(site_data: SiteData) -> Mapping[str, Mapping[str, str]]:
    return {origin: storage.local for origin, storage in site_data.origins.items()}


def _export_storage_state(site_data: SiteData, report: Report) -> Exported:
    cookies = cookies_to_json(site_data.cookies, report)
    session = site_data.session
    state = storage_state_json(
        cookies, _local(site_data), (session.origin, session.items) if session else None
    )
    if session is not None:
        report.remarks.append(
            f"sessionStorage of {session.origin} is carried in the 'sitekeep' extension "
            "field; Playwright ignores it"
        )
    _count(report.carried, site_data, cookies=len(cookies))
    # A page's lone surrogate goes out as its JSON escape, as Playwright writes one.
    text = escape_surrogates(json.dumps(state, indent=2, ensure_ascii=False)) + "\n"
    return Exported(text.encode(), report)


def _export_cookies_txt(site_data: SiteData, report: Report) -> Exported:
    text, written = cookies_to_text(site_data.cookies, report)
    for i, origin in enumerate(site_data.origins):
        report.note(
            f"origins[{i}]",
            origin,
            "",
            "dropped",
            "local-storage-not-carried",
            "cookies.txt holds cookies only: this origin's localStorage is not carried",
        )
    if site_data.session is not None:
        report.note(
            "sessionStorage",
            site_data.session.origin,
            "",
            "dropped",
            "session-storage-not-carried",
            "cookies.txt holds cookies only: sessionStorage is not carried",
        )
    report.carried["cookies"] += written
    return Exported(text.encode(), report)
