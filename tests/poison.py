"""Import files with one poison in them, for hypothesis (issue #24): a lone surrogate in
any string or key, or a number past every bound, placed anywhere in a storage state or a
cookies.txt file; and the field an import must name when it refuses one. A Web Storage
name or value is no place for poison: a page's storage may hold a lone surrogate, and an
import keeps it (:func:`page_surrogates` makes such files).

A storage state's text is rendered per transport: JSON escapes (``\\ud800``) for bytes on
the wire or in a file, the character itself for the Python API's ``str``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

__all__ = ["Poisoned", "poisoned", "poisoned_cookies_txt", "poisoned_storage_state"]

Path = tuple[str | int, ...]
_HUGE = "@@huge-number@@"
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
HUGE = st.one_of(
    st.integers(21, 6000).map(lambda n: "9" * n),  # past 64 bits, past Python's 4,300
    st.integers(21, 400).map(lambda n: "-1" + "0" * n),
    st.integers(309, 2000).map(lambda e: f"1.5e{e}"),  # past a double: read as infinity
)


@dataclass(frozen=True)
class Poisoned:
    """A file with one poison: its text (surrogates as characters), its bytes, its
    format, the path of the poisoned place, and whether it is a lone surrogate or a
    number. The bytes of a storage state write a surrogate as a JSON escape (valid
    UTF-8); those of a cookies.txt hold the surrogate's own bytes, which no UTF-8
    decoder takes."""

    text: str
    wire: bytes
    fmt: Literal["storage-state", "cookies-txt"]
    field: str
    kind: Literal["surrogate", "huge"]


def _state() -> dict[str, Any]:
    soon = int(time.time()) + 86_400
    cookie = {
        "name": "sid",
        "value": "dummy-value",
        "domain": ".app.example.test",
        "path": "/",
        "expires": soon,
        "httpOnly": True,
        "secure": True,
        "sameSite": "Lax",
    }
    return {
        "cookies": [cookie, {**cookie, "name": "pref", "expires": -1, "sameSite": "Strict"}],
        "origins": [
            {"origin": "https://app.example.test", "localStorage": [{"name": "k", "value": "v"}]}
        ],
        "sitekeep": {
            "about": "sessionStorage",
            "sessionStorage": {
                "origin": "https://app.example.test",
                "items": [{"name": "cart", "value": "2"}],
            },
        },
    }


def _places(value: Any, path: Path = ()) -> Iterator[tuple[Path, str | None]]:
    """Every leaf's path (key None) and every key's (the key named)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key
            yield from _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _places(item, (*path, index))
    else:
        yield path, None


def field_path(path: Path, root: str) -> str:
    """How an import names a place: ``cookies[2].name`` (keys dotted, list items in
    brackets), ``root`` for the document itself."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or root


def _parent(document: Any, path: Path) -> Any:
    for part in path:
        document = document[part]
    return document


def _spiked(text: str, where: int, surrogate: str) -> str:
    cut = where % (len(text) + 1)
    return text[:cut] + surrogate + text[cut:]


def web_storage(path: Path) -> bool:
    """A Web Storage name or value (or, for a key, its entry) of :func:`_state`."""
    return (len(path) == 5 and path[0] == "origins" and path[2] == "localStorage") or (
        path[:3] == ("sitekeep", "sessionStorage", "items") and len(path) == 5
    )


@st.composite
def poisoned_storage_state(draw: st.DrawFn) -> Poisoned:
    document = _state()
    places = list(_places(document))
    path, key = draw(st.sampled_from(places))
    if key is None and web_storage(path):
        key = path[-1] if isinstance(path[-1], str) else None  # poison a key there
        path = path[:-1]
    kind = "surrogate" if key is not None else draw(st.sampled_from(["surrogate", "huge"]))
    where = draw(st.integers(0, 64))
    if key is not None:
        parent = _parent(document, path)
        parent[_spiked(key, where, draw(SURROGATES))] = parent.pop(key)
        field = field_path(path, "source")
    else:
        parent, last = _parent(document, path[:-1]), path[-1]
        if kind == "surrogate":
            parent[last] = _spiked(str(parent[last]), where, draw(SURROGATES))
        else:
            parent[last] = _HUGE
        field = field_path(path, "source")
    number = draw(HUGE)
    text, escaped = (
        json.dumps(document, ensure_ascii=ascii).replace(f'"{_HUGE}"', number)
        for ascii in (False, True)
    )
    return Poisoned(text, escaped.encode("ascii"), "storage-state", field, kind)


@st.composite
def poisoned_cookies_txt(draw: st.DrawFn) -> Poisoned:
    soon = int(time.time()) + 86_400
    lines = [
        "# Netscape HTTP Cookie File",
        "",
        f".app.example.test\tTRUE\t/\tTRUE\t{soon}\tsid\tdummy-value",
        "#HttpOnly_app.example.test\tFALSE\t/\tFALSE\t0\tpref\tdummy-pref",
    ]
    number = draw(st.sampled_from([1, 3, 4]))  # a comment line too: no line holds one
    kind = "huge" if number > 1 and draw(st.booleans()) else "surrogate"
    fields = lines[number - 1].split("\t")
    if kind == "huge":
        fields[4] = draw(HUGE.filter(lambda n: "e" not in n))
        field = f"line {number}.expiry"
    else:
        at = draw(st.integers(0, len(fields) - 1))
        fields[at] = _spiked(fields[at], draw(st.integers(0, 64)), draw(SURROGATES))
        field = f"line {number}"
    lines[number - 1] = "\t".join(fields)
    text = "\n".join(lines) + "\n"
    return Poisoned(text, text.encode("utf-8", "surrogatepass"), "cookies-txt", field, kind)


poisoned = st.one_of(poisoned_storage_state(), poisoned_cookies_txt())
"""A storage state or a cookies.txt file with one poison."""


@st.composite
def page_surrogates(draw: st.DrawFn) -> tuple[str, dict[str, dict[str, str]], dict[str, str]]:
    """A storage state whose Web Storage names and values hold lone surrogates (as a
    page may write them), its text with JSON escapes, and what it holds: localStorage by
    origin, sessionStorage."""
    text = st.text(st.one_of(SURROGATES, st.characters(codec="utf-8")), min_size=1, max_size=8)
    local = draw(st.dictionaries(text, text, min_size=1, max_size=4))
    session = draw(st.dictionaries(text, text, max_size=3))
    document = _state()
    document["origins"][0]["localStorage"] = [{"name": k, "value": v} for k, v in local.items()]
    document["sitekeep"]["sessionStorage"]["items"] = [
        {"name": k, "value": v} for k, v in session.items()
    ]
    origin = "https://app.example.test"
    return json.dumps(document), {origin: local}, session
