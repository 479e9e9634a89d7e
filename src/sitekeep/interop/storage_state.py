"""Playwright's storage state JSON, read and written (SPEC §15).

The shape is Playwright's (``BrowserContext.storage_state()``; camelCase kept here, in
the wire ``TypedDict``s, and nowhere else)::

    {"cookies": [{"name", "value", "domain", "path", "expires", "httpOnly", "secure",
                  "sameSite", "partitionKey"?, "_crHasCrossSiteAncestor"?}],
     "origins": [{"origin", "localStorage": [{"name", "value"}]}],
     "sitekeep": {"sessionStorage": {"origin", "items": [{"name", "value"}]}, "about"}}

``expires`` is seconds since the epoch, ``-1`` for a session cookie. ``sameSite`` is
always exactly ``Strict``, ``Lax`` or ``None`` — Playwright's type, which its
``addCookies`` requires: a cookie whose SameSite is the browser's default (or a ``None``
that is not ``Secure``, which no browser holds) is written ``Lax``, as Chromium applies an
unspecified one and as Playwright itself writes it, never wider — and noted. sessionStorage, which
storage state does not have, rides in the ``sitekeep`` extension field, which says so in
its ``about``; Playwright ignores fields it does not know.

Reading also takes what tools that write "storage state" often write instead: a bare list
of cookies, ``expirationDate`` (Cookie-Editor, the extension APIs), ``hostOnly``,
``session``, a partition key as an object. Fields of the wrong JSON type are refused with
the field named; values of the right type that a browser would not hold are left to
:mod:`sitekeep.interop.rules`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

from sitekeep.errors import InvalidInput
from sitekeep.interop.report import Report
from sitekeep.interop.rules import RawCookie
from sitekeep.model import Cookie

__all__ = [
    "EXTENSION",
    "StorageState",
    "StorageStateCookie",
    "WebStorage",
    "cookies_to_json",
    "read_storage_state",
]

EXTENSION = "sitekeep"
ABOUT = (
    "sitekeep extension: sessionStorage of the tab the session was on. Playwright's "
    "storage state has no sessionStorage and ignores this field."
)


class NameValue(TypedDict):
    name: str
    value: str


class StorageStateCookie(TypedDict):
    name: str
    value: str
    domain: str
    path: str
    expires: float
    httpOnly: bool
    secure: bool
    sameSite: str
    partitionKey: NotRequired[str]
    _crHasCrossSiteAncestor: NotRequired[bool]


class OriginState(TypedDict):
    origin: str
    localStorage: list[NameValue]


class StorageState(TypedDict):
    cookies: list[StorageStateCookie]
    origins: list[OriginState]
    sitekeep: NotRequired[dict[str, Any]]


class WebStorage(TypedDict):
    """What a storage state carries besides cookies, as read (not yet checked)."""

    local: list[tuple[str, str, dict[str, str]]]
    """(where, origin as written, items) per ``origins`` entry."""
    session: tuple[str, str, dict[str, str]] | None
    """(where, origin as written, items) of the extension's sessionStorage."""


_SAME_SITE_OUT = {"strict": "Strict", "lax": "Lax", "none": "None"}


# -- reading -------------------------------------------------------------------------------


def _require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InvalidInput(f"{where}.{key} must be {_kind_name(kind)}", field=f"{where}.{key}")
    return value


def _optional(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if obj.get(key) is None:
        return None
    return _require(obj, key, kind, where)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", bool: "true or false", dict: "an object", list: "a list"}
    if isinstance(kind, tuple):
        return "a number" if float in kind else " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _flag(obj: Mapping[str, Any], key: str, where: str, report: Report, name: str) -> bool:
    value = obj.get(key)
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        report.note(
            where,
            name,
            str(obj.get("domain", "")),
            "changed",
            "flag-number",
            f"{key} written as {value}: read as {bool(value)}".lower(),
        )
        return bool(value)
    raise InvalidInput(f"{where}.{key} must be true or false", field=f"{where}.{key}")


def _expires(obj: Mapping[str, Any], where: str, report: Report, name: str) -> float | None:
    number = (int, float)
    if "expires" in obj:
        value = _optional(obj, "expires", number, where)
        return None if value is None else float(value)
    alias = _optional(obj, "expirationDate", number, where)
    if alias is not None:
        report.note(
            where,
            name,
            str(obj.get("domain", "")),
            "changed",
            "expiry-alias",
            "expiry read from expirationDate",
        )
        return float(alias)
    return None


def _cookie(obj: Any, where: str, report: Report) -> RawCookie:
    if not isinstance(obj, dict):
        raise InvalidInput(f"{where} must be an object", field=where)
    name = _require(obj, "name", str, where)
    value = _require(obj, "value", str, where)
    domain = _optional(obj, "domain", str, where)
    path = _optional(obj, "path", str, where)
    host_only = _optional(obj, "hostOnly", bool, where)
    if domain is None:
        url = _require(obj, "url", str, f"{where} (no domain)")
        domain, path, host_only = _from_url(url, where, path)
        report.note(
            where,
            name,
            domain,
            "changed",
            "domain-from-url",
            "domain and path taken from url, as a host-only cookie",
        )
    key = obj.get("partitionKey")
    if key is not None and not isinstance(key, str | dict):
        raise InvalidInput(f"{where}.partitionKey must be a string", field=f"{where}.partitionKey")
    return RawCookie(
        where=where,
        name=name,
        value=value,
        domain=domain,
        path=path,
        expires=_expires(obj, where, report, name),
        http_only=_flag(obj, "httpOnly", where, report, name),
        secure=_flag(obj, "secure", where, report, name),
        same_site=obj.get("sameSite"),
        partition_key=key,
        cross_site_ancestor=_optional(obj, "_crHasCrossSiteAncestor", bool, where),
        host_only=host_only,
        session=_optional(obj, "session", bool, where),
        expires_session=-1,
    )


def _from_url(url: str, where: str, path: str | None) -> tuple[str, str, bool]:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
    if not host or parts.scheme not in ("http", "https"):
        raise InvalidInput(f"{where}.url must be an http(s) URL", field=f"{where}.url")
    default = parts.path.rsplit("/", 1)[0] or "/"
    return host, path or default, True


def _items(entries: Any, where: str) -> dict[str, str]:
    if isinstance(entries, dict):  # {key: value}, as some tools write it
        pairs = [{"name": k, "value": v} for k, v in entries.items()]
    elif isinstance(entries, list):
        pairs = entries
    else:
        raise InvalidInput(f"{where} must be a list of {{name, value}}", field=where)
    items: dict[str, str] = {}
    for i, pair in enumerate(pairs):
        at = f"{where}[{i}]"
        if not isinstance(pair, dict):
            raise InvalidInput(f"{at} must be an object", field=at)
        items[_require(pair, "name", str, at)] = _require(pair, "value", str, at)
    return items


def _origins(data: Mapping[str, Any], report: Report) -> list[tuple[str, str, dict[str, str]]]:
    origins = data.get("origins")
    if origins is None:
        return []
    if not isinstance(origins, list):
        raise InvalidInput("origins must be a list", field="origins")
    read: list[tuple[str, str, dict[str, str]]] = []
    for i, entry in enumerate(origins):
        where = f"origins[{i}]"
        if not isinstance(entry, dict):
            raise InvalidInput(f"{where} must be an object", field=where)
        origin = _require(entry, "origin", str, where)
        local = entry.get("localStorage")
        items = {} if local is None else _items(local, f"{where}.localStorage")
        if entry.get("indexedDB"):
            report.remarks.append(f"{where}: its indexedDB is not imported")
        read.append((where, origin, items))
    return read


def _session(data: Mapping[str, Any]) -> tuple[str, str, dict[str, str]] | None:
    extension = data.get(EXTENSION)
    if extension is None:
        return None
    if not isinstance(extension, dict):
        raise InvalidInput(f"{EXTENSION} must be an object", field=EXTENSION)
    session = extension.get("sessionStorage")
    if session is None:
        return None
    where = f"{EXTENSION}.sessionStorage"
    if not isinstance(session, dict):
        raise InvalidInput(f"{where} must be an object", field=where)
    origin = _require(session, "origin", str, where)
    return where, origin, _items(session.get("items", []), f"{where}.items")


def read_storage_state(data: Any, report: Report) -> tuple[list[RawCookie], WebStorage]:
    """The cookies and Web Storage of parsed storage state JSON.

    Raises:
        InvalidInput: a field of the wrong JSON type, named (``cookies[2].name``).
    """
    if isinstance(data, list):
        report.remarks.append("a bare list of cookies was read as a storage state's cookies")
        data = {"cookies": data}
    if not isinstance(data, dict):
        raise InvalidInput("a storage state is a JSON object", field="source")
    cookies = data.get("cookies", [])
    if not isinstance(cookies, list):
        raise InvalidInput("cookies must be a list", field="cookies")
    raw = [_cookie(c, f"cookies[{i}]", report) for i, c in enumerate(cookies)]
    return raw, {"local": _origins(data, report), "session": _session(data)}


# -- writing -------------------------------------------------------------------------------


def same_site_out(cookie: Cookie) -> tuple[str, bool]:
    """The ``sameSite`` storage state gives ``cookie`` — ``Strict``, ``Lax`` or ``None``,
    whatever case the model holds — and whether it is the default made ``Lax``."""
    spelled = _SAME_SITE_OUT.get(str(cookie.same_site).lower())
    if spelled is None or (spelled == "None" and not cookie.secure):
        return "Lax", True
    return spelled, False


def cookie_to_json(cookie: Cookie) -> StorageStateCookie:
    """A model cookie in storage state's shape (:func:`same_site_out`)."""
    out: StorageStateCookie = {
        "name": cookie.name,
        "value": cookie.value,
        "domain": cookie.domain,
        "path": cookie.path,
        "expires": -1 if cookie.expiry is None else cookie.expiry,
        "httpOnly": cookie.http_only,
        "secure": cookie.secure,
        "sameSite": same_site_out(cookie)[0],
    }
    if cookie.partition_key:
        out["partitionKey"] = str(cookie.partition_key.get("topLevelSite", ""))
        out["_crHasCrossSiteAncestor"] = bool(
            cookie.partition_key.get("hasCrossSiteAncestor", True)
        )
    return out


def cookies_to_json(cookies: Sequence[Cookie], report: Report) -> list[StorageStateCookie]:
    """The cookies storage state can hold as text; a cookie whose value is raw bytes
    (BiDi ``base64``) is dropped with a note, one whose SameSite is made ``Lax``
    (:func:`same_site_out`) is noted."""
    out: list[StorageStateCookie] = []
    for i, cookie in enumerate(cookies):
        if cookie.extras.get("bidi:valueType") == "base64":
            report.note(
                f"cookies[{i}]",
                cookie.name,
                cookie.domain,
                "dropped",
                "value-bytes",
                "its value is raw bytes, which storage state cannot hold as text",
            )
            continue
        if same_site_out(cookie)[1]:
            report.note(
                f"cookies[{i}]",
                cookie.name,
                cookie.domain,
                "changed",
                "same-site-default",
                "the browser's default SameSite written as Lax: storage state has no "
                "default (Playwright requires Strict, Lax or None), and Lax is never wider",
            )
        out.append(cookie_to_json(cookie))
    return out


def storage_state_json(
    cookies: list[StorageStateCookie],
    local: Mapping[str, Mapping[str, str]],
    session: tuple[str, Mapping[str, str]] | None,
) -> StorageState:
    """The whole document: cookies, origins, and the extension when there is a session."""
    state: StorageState = {
        "cookies": cookies,
        "origins": [
            {"origin": origin, "localStorage": [{"name": k, "value": v} for k, v in items.items()]}
            for origin, items in local.items()
        ],
    }
    if session is not None:
        origin, items = session
        state["sitekeep"] = {
            "about": ABOUT,
            "sessionStorage": {
                "origin": origin,
                "items": [{"name": k, "value": v} for k, v in items.items()],
            },
        }
    return state
