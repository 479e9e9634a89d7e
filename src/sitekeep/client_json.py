"""JSON from clients, read so that every layer after it can encode and store it (issue #24).

Python's JSON reader takes two things nothing after it can use, and each ended in a 500:

- a **lone surrogate** — half of a UTF-16 pair written as an escape, ``"\\ud800"``. It
  reads into a ``str`` that no UTF-8 encoder takes, so the first ``.encode()``, JSON
  writer with ``ensure_ascii=False`` or store it reached raised ``UnicodeEncodeError``.
- an **unbounded number** — an integer of thousands of digits, which Python refuses to
  convert past 4,300 digits (``ValueError``) and no float can hold, or a number past a
  double's range, read as infinity.

:func:`loads` reads numbers through bounds (:data:`~sitekeep.limits.MAX_DIGITS` digits
for an integer, finite for the rest) and :func:`check` then walks the value for what is
unfit, so each is refused as :class:`~sitekeep.errors.InvalidInput` naming the field
where it sits (``cookies[2].name``: keys dotted, list items in brackets) — before anything
is stored or sent. One kind of place may hold a lone surrogate: a JavaScript string as a
page wrote it (a Web Storage name or value), which browsers keep and snapshots carry
losslessly; a reader names those places (``js_strings``). :func:`check_text` does the
same for one string (a CLI argument, a cookies.txt line, a socket ticket).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

from sitekeep.errors import InvalidInput
from sitekeep.limits import MAX_DIGITS

__all__ = ["LONE_SURROGATE", "TOO_LARGE", "Path", "check", "check_text", "field_path", "loads"]

LONE_SURROGATE: Final = "a lone surrogate (half of a UTF-16 pair, such as \\ud800) is no text"
TOO_LARGE: Final = f"a number of more than {MAX_DIGITS} digits, or past a double's range"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

Path = tuple[str | int, ...]


class _TooLarge:
    """Where an unbounded number was read (it is never converted)."""

    __slots__ = ()


_MARK: Final = _TooLarge()


def _int(text: str) -> int | _TooLarge:
    return int(text) if len(text.lstrip("-")) <= MAX_DIGITS else _MARK


def _float(text: str) -> float | _TooLarge:
    value = float(text)
    return value if math.isfinite(value) else _MARK


def loads(data: str | bytes, **options: Any) -> Any:
    """``json.loads`` with numbers read through bounds; call :func:`check` on what it
    gives before using it. ``options`` go to ``json.loads`` (hooks, ``parse_constant``).

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``), or bytes that are not UTF-8.
        RecursionError: nested past the interpreter's stack.
    """
    return json.loads(data, parse_int=_int, parse_float=_float, **options)


def field_path(path: Path, root: str) -> str:
    """``("cookies", 2, "name")`` → ``cookies[2].name``; ``root`` for the empty path and
    before a leading index (``body[0]``)."""
    text = root if path and isinstance(path[0], int) else ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or root


def _never(path: Path) -> bool:
    return False


def _unfit(value: Any, text: Callable[[Path], bool]) -> Iterator[tuple[Path, str]]:
    """Each unfit place in ``value``, in document order, without recursion."""
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if item is _MARK:
            yield path, TOO_LARGE
        elif isinstance(item, str):
            if _SURROGATE.search(item) and not text(path):
                yield path, LONE_SURROGATE
        elif isinstance(item, dict):
            for key in item:
                if _SURROGATE.search(key) and not text((*path, key)):
                    yield path, f"a key: {LONE_SURROGATE}"
            stack.extend(((*path, k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(item))))


def check(value: Any, *, root: str, js_strings: Callable[[Path], bool] = _never) -> Any:
    """``value`` (from :func:`loads`) when nothing in it is unfit.

    Args:
        root: the field to name when the value itself is to blame (``body``, ``source``).
        js_strings: the places that hold a JavaScript string as a page wrote it (a Web
            Storage name or value: HTML §Web Storage keeps any UTF-16 string), where a
            lone surrogate is data, kept losslessly (``model.json_bytes``); for a key,
            the path of its entry.

    Raises:
        InvalidInput: a lone surrogate in a string or key (outside ``js_strings``), or
            an unbounded number; the ``field`` is where it sits (:func:`field_path`).
    """
    for path, why in _unfit(value, js_strings):
        field = field_path(path, root)
        raise InvalidInput(f"{field}: {why}", field=field)
    return value


def check_text(text: str, field: str) -> str:
    """``text`` when it holds no lone surrogate.

    Raises:
        InvalidInput: it does, naming ``field``.
    """
    if _SURROGATE.search(text):
        raise InvalidInput(f"{field}: {LONE_SURROGATE}", field=field)
    return text
