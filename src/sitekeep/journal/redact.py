"""Pure redaction of what goes into the journal (SPEC §8, §12).

The journal is append-only and read by people, so it holds no value that must stay
private: secret *names* yes, secret values never; no cookie or storage value; typed text
only as its length; every URL as §4 keeps a history entry below the top one — origin and
path, without query or fragment (they carry OAuth codes and reset tokens) and without user
info (it carries passwords).

Arguments are kept by an allow-list per operation, read from the operation's argument
model (``sitekeep.args``: each field says what may be kept of it, ``args.Kept``). A key
the list does not know, or an operation it does not know, keeps only its shape: a string
becomes ``{"length": n}``, a list or object ``{"items": n}``; numbers, booleans and null
stay. A new argument is therefore safe before anyone thinks about it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from sitekeep.args import JOURNALED, Args, Kept, kept

__all__ = ["args", "detail", "error", "is_redacted_url", "text", "url"]

MAX_URL: Final = 4000
"""Longest URL kept, in characters (a record's URL field takes 4096); longer ones are cut
and end in ``…``."""
MAX_NAME: Final = 256
"""Longest name, selector or key list kept, in characters; longer ones are cut."""


def url(value: str) -> str:
    """The URL as the journal keeps it: ``scheme://host[:port]/path`` for http(s), the
    exact ``about:blank``, and only ``scheme:`` for anything else (a ``data:`` or ``blob:``
    URL carries content). Trimmed like ``history.trim_url``, and without user info; cut at
    :data:`MAX_URL` characters."""
    value = value.strip()
    if value == "about:blank":
        return value
    try:
        parts = urlsplit(value)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "invalid:"
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not host:
        return f"{scheme}:" if scheme.isalnum() else "invalid:"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    path = re.sub(r"\s", "", parts.path)
    kept = f"{scheme}://{netloc}{path}"
    return kept if len(kept) <= MAX_URL else kept[: MAX_URL - 1] + "…"


_REDACTED_URL: Final = re.compile(r"about:blank|[a-z0-9]+:|https?://[^/?#@\s]+(/[^?#\s]*)?")


def is_redacted_url(value: str) -> bool:
    """Whether ``value`` has the shape :func:`url` gives: no query, fragment, user info
    or white space (a cheap check: replay runs it on every URL it reads)."""
    return _REDACTED_URL.fullmatch(value) is not None


def text(value: str) -> dict[str, int]:
    """Typed (or searched) text as its length only."""
    return {"length": len(value)}


def _name(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_NAME:
        return value[:MAX_NAME] + "…"
    return value if isinstance(value, str | bool | int | float) or value is None else _shape(value)


def _shape(value: Any) -> Any:
    """What is left of a value nobody vouched for: its kind and size."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping | list | tuple):
        return {"items": len(value)}
    return {"kind": type(value).__name__}


def _url_arg(value: Any) -> Any:
    return url(value) if isinstance(value, str) else _shape(value)


def _text_arg(value: Any) -> Any:
    return text(value) if isinstance(value, str) else _shape(value)


def _steps(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        return _shape(value)
    return [_step(s) for s in value]


def _step(value: Any) -> Any:
    if not isinstance(value, Mapping) or not isinstance(value.get("op"), str):
        return _shape(value)
    step_args = {k: v for k, v in value.items() if k not in ("op", "on_error")}
    kept: dict[str, Any] = {"op": value["op"], **args(value["op"], step_args)}
    if value.get("on_error") is not None:
        kept["on_error"] = _name(value["on_error"])
    return kept


_Rule = Callable[[Any], Any]
_BY_KIND: Final[dict[Kept, _Rule]] = {Kept.URL: _url_arg, Kept.TEXT: _text_arg, Kept.NAME: _name}


def _rules_of(model: type[Args]) -> dict[str, _Rule]:
    """What the journal keeps of each of ``model``'s fields that says (``args.Kept``)."""
    rules = {}
    for name, field in model.model_fields.items():
        kind = kept(field)
        if kind is not None:
            rules[name] = _BY_KIND[kind]
    return rules


_RULES: Final[dict[str, dict[str, _Rule]]] = {
    **{op: _rules_of(model) for op, model in JOURNALED.items()},
    "capture_profile": {"profile": _name, "cookies": _name},
    "run_flow": {"steps": _steps, "on_error": _name},
    "close_browser": {},
    "delete_session": {},
}


def args(op: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """An operation's arguments fit for the journal (see the module docstring).

    ``type`` text and ``wait_for``/``assert_text`` text become ``{"length": n}``; URLs
    are trimmed (:func:`url`); names, refs, selectors and flags stay (cut at
    :data:`MAX_NAME` characters). ``None`` values are left out.
    """
    rules = _RULES.get(op, {})
    return {k: rules.get(k, _shape)(v) for k, v in values.items() if v is not None}


_KEPT_ERROR_FIELDS: Final = (
    "type",
    "field",
    "code",
    "reason",
    "scope",
    "size",
    "cap",
    "ref",
    "secret",
    "host",
)
_URL_IN_TEXT: Final = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


def error(value: Mapping[str, Any]) -> dict[str, str | int | float | bool | None]:
    """An error's ``{type, message, field?, ...}`` fit for the journal: the structured
    fields sitekeep's errors carry (``errors.error_json``), the message cut at 500
    characters with every URL in it trimmed (:func:`url`)."""
    kept: dict[str, str | int | float | bool | None] = {}
    for name in _KEPT_ERROR_FIELDS:
        field_value = value.get(name)
        if isinstance(field_value, str | int | float | bool):
            kept[name] = _name(field_value)
    message = value.get("message")
    if isinstance(message, str):
        message = _URL_IN_TEXT.sub(lambda m: url(m.group(0)), message)
        kept["message"] = message[:500]
    return kept


_DETAIL_NAMES: Final = frozenset({"browser", "profile", "reason", "site"})


def detail(value: Mapping[str, Any]) -> dict[str, str | int | float | bool | None]:
    """A mark's detail: counts, flags and the few names listed in ``_DETAIL_NAMES``
    (browser, profile, reason, site); any other string by its length, a container by
    its size."""
    kept: dict[str, str | int | float | bool | None] = {}
    for key, item in value.items():
        if item is None or isinstance(item, bool | int | float):
            kept[str(key)] = item
        elif isinstance(item, str):
            kept[str(key)] = _name(item) if key in _DETAIL_NAMES else len(item)
        elif isinstance(item, Mapping | list | tuple):
            kept[str(key)] = len(item)
    return kept
