"""Pure masking of typed secret values in what an agent is shown (SPEC §7, §12; issue #8
item 3).

A page may do anything with a value typed into it: show it (a "show password" button that
turns the field into ``type=text``), copy it into other text, a title, a URL or storage,
cut it short or URL-encode it. So a result is not trusted to be clean because the field was
a password field: every string in it — keys and values, at any depth — is searched for the
values of every secret typed in the session, and each stretch made of them becomes ``•••``.

What counts as a stretch of a value ``v``: any run of the string covered by pieces of
``v`` at least ``min(len(v), PIECE)`` characters long — so the whole value, a value cut
short by a snapshot's 120 characters or a ``read``'s ``max_chars``, or a part the page
shows, in the forms a page or URL gives it (:func:`forms`): as typed; percent-encoded in
any spelling — any of its characters encoded or not, hex digits in either case (Python's
``quote``, JavaScript's ``encodeURIComponent`` and ``encodeURI``; a string is also
searched with its ``%XX`` runs decoded as UTF-8), ``+`` for a space, JavaScript's
``escape()``; JSON-escaped; base64 and base64url of its UTF-8 bytes, alone or inside a
longer base64 text (``Basic`` credentials: the characters that encode its bytes at each of
the three byte alignments); hex of its UTF-8 bytes in either case. A value shorter than
:data:`PIECE` is masked only whole.

**The mask follows the data** (issue #24). Site data saved or captured from a session
carries, sealed with it, the values a stretch of which it holds (:func:`carried`, into
``SiteData.mask``): a profile made from it, a session opened from that profile (which adds
them to its own mask, ``SessionRecord.mask``) and every later copy mask them too — even
once the secret was changed or deleted, for the session keeps the values it typed as they
were when typed. Exports never carry the mask (:func:`masked_site_data`).

Where a copy of site data keeps a value, every string of it is searched: a cookie's name,
value and path, storage keys and values, IndexedDB records, a tab's URL. An export writes
each stretch as ``•••`` — except in a host, which cannot hold one: a cookie whose domain,
or an origin's storage whose origin, holds a stretch is left out of the export
(:func:`masked_site_data`).

Known limit: a page that transforms a value otherwise (upper-cases it, reverses it, hashes
or encrypts it, encodes it some other way) shows something this cannot recognise.
Screenshots are pixels and are not masked.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, quote_plus, unquote_plus

from sitekeep.model import SITE_DATA_JSON, OriginStorage, SiteData

__all__ = ["MASK", "PIECE", "Masker", "appears_in", "carried", "forms", "masked_site_data"]

MASK = "•••"
PIECE = 12
"""Characters of a value that, found together in a result, are masked."""


def appears_in(value: str, url: str) -> bool:
    """Whether a secret value stands in a URL, as typed or URL-encoded (a GET form puts
    field values in the query string, RFC 3986 / HTML §form submission)."""
    if not value:
        return False
    return any(form in url for form in forms(value)) or value in unquote_plus(url)


_URI_COMPONENT_SAFE = "!*'()~"
"""What JavaScript's ``encodeURIComponent`` leaves as it is besides ``quote``'s own."""
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ESCAPES = re.compile(r"((?:%[0-9A-Fa-f]{2})+)")


def forms(value: str) -> set[str]:
    """``value`` as typed and as a page or URL gives it (the module's docstring): each
    percent-encoded form in upper- and lower-case hex, ``escape()``, JSON-escaped, hex and
    the base64 pieces of its UTF-8 bytes. (Other percent spellings are found by decoding
    the text searched: :meth:`Masker.hits`.)"""
    encoded = {
        quote(value, safe=""),
        quote(value),
        quote(value, safe=_URI_COMPONENT_SAFE),
        quote_plus(value),
        _escaped(value),
    }
    lower = {_PERCENT.sub(lambda m: m.group().lower(), form) for form in encoded}
    raw = value.encode("utf-8", "surrogatepass")
    return {
        value,
        json.dumps(value)[1:-1],
        *encoded,
        *lower,
        raw.hex(),
        raw.hex().upper(),
        *_base64_pieces(raw),
    }


def _escaped(value: str) -> str:
    """JavaScript's ``escape()`` (ECMA-262 §B.2.1.1): ``%XX`` below 256, ``%uXXXX`` above."""
    out = []
    for char in value:
        if char.isascii() and (char.isalnum() or char in "@*_+-./"):
            out.append(char)
        elif ord(char) < 256:
            out.append(f"%{ord(char):02X}")
        else:
            out.append(f"%u{ord(char):04X}")
    return "".join(out)


def _base64_pieces(raw: bytes) -> set[str]:
    """The base64 and base64url characters that encode ``raw``'s bytes wherever they
    stand in a longer base64 text: at each of the three byte alignments, the run of
    characters that depends on ``raw``'s bytes alone (an edge character shared with a
    neighbouring byte, and the padding, left out)."""
    found: set[str] = set()
    for lead in range(3):
        text = base64.b64encode(bytes(lead) + raw).decode()
        start = (lead * 8 + 5) // 6  # characters holding bits of the lead bytes
        end = ((lead + len(raw)) * 8) // 6  # characters wholly within raw's bits
        core = text[start:end]
        if core:
            found |= {core, core.translate(_URLSAFE)}
    return found


_URLSAFE = str.maketrans("+/", "-_")


@dataclass(frozen=True, slots=True)
class _Decoded:
    """A text with its ``%XX`` escapes of UTF-8 characters decoded (others kept as
    written): ``starts[k]``, ``ends[k]``: where its character ``k`` stands in the text;
    ``escaped``: the ``(start, end)`` of each run of decoded escapes in it."""

    plain: str
    starts: list[int]
    ends: list[int]
    escaped: list[tuple[int, int]]


def _decoded(text: str) -> _Decoded | None:
    """``text`` decoded (:class:`_Decoded`); None when it has no escape."""
    runs = _ESCAPES.split(text)
    if len(runs) == 1:
        return None
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    escaped: list[tuple[int, int]] = []
    at = 0
    for index, run in enumerate(runs):
        if index % 2 == 0:  # text between runs of escapes, as it is
            out.append(run)
            starts.extend(range(at, at + len(run)))
            ends.extend(range(at + 1, at + len(run) + 1))
        else:
            first, i = len(starts), 0
            while i < len(run):
                char, end = _utf8_escape(run, i)
                out.append(char)
                starts.append(at + i)
                ends.append(at + end)
                i = end
            escaped.append((first, len(starts)))
        at += len(run)
    return _Decoded("".join(out), starts, ends, escaped)


def _utf8_escape(text: str, i: int) -> tuple[str, int]:
    """The character the ``%XX`` escapes at ``i`` encode in UTF-8 and where they end;
    else ``text[i]`` and ``i + 1``."""
    first = _PERCENT.match(text, i)
    if first is None:
        return text[i], i + 1
    lead = int(first.group()[1:], 16)
    size = next((n for n, top in ((1, 0x80), (2, 0xE0), (3, 0xF0), (4, 0xF8)) if lead < top), 0)
    raw, end = bytearray(), i
    for _ in range(size):
        escape = _PERCENT.match(text, end)
        if escape is None:
            return text[i], i + 1
        raw.append(int(escape.group()[1:], 16))
        end = escape.end()
    try:
        return raw.decode("utf-8"), end
    except UnicodeDecodeError:
        return text[i], i + 1


@dataclass(frozen=True, slots=True)
class Masker:
    """Masks the given values in results (module docstring).

    Attributes:
        pieces: piece length → every piece of that length of every value's forms.
    """

    pieces: dict[int, frozenset[str]]

    @classmethod
    def of(cls, values: Iterable[str]) -> Masker:
        """A masker for ``values`` (empty strings are ignored)."""
        grouped: dict[int, set[str]] = {}
        for value in values:
            for form in forms(value) if value else ():
                size = min(len(form), PIECE)
                grouped.setdefault(size, set()).update(
                    form[i : i + size] for i in range(len(form) - size + 1)
                )
        return cls({size: frozenset(found) for size, found in grouped.items()})

    def hits(self, text: str) -> Iterator[tuple[int, int, str]]:
        """``(start, length, piece)`` of every piece of a value that stands in ``text``,
        also once its percent-escapes are decoded (then ``start`` and ``length`` are of
        the escapes in ``text``)."""
        for size, pieces in self.pieces.items():
            for i in range(len(text) - size + 1):
                if text[i : i + size] in pieces:
                    yield i, size, text[i : i + size]
        decoded = _decoded(text) if "%" in text else None
        if decoded is None:
            return
        plain, starts, ends = decoded.plain, decoded.starts, decoded.ends
        for size, pieces in self.pieces.items():
            # Only a window over a decoded escape can hold what the first pass did not see.
            windows: set[int] = set()
            for first, end in decoded.escaped:
                windows.update(range(max(0, first - size + 1), min(end, len(plain) - size + 1)))
            for i in sorted(windows):
                if plain[i : i + size] in pieces:
                    yield starts[i], ends[i + size - 1] - starts[i], plain[i : i + size]

    def __bool__(self) -> bool:
        return bool(self.pieces)

    def text(self, text: str) -> str:
        """``text`` with every stretch of a value replaced by ``•••``."""
        covered = [False] * len(text)
        hit = False
        for i, size, _ in self.hits(text):
            covered[i : i + size] = [True] * size
            hit = True
        if not hit:
            return text
        out: list[str] = []
        for i, char in enumerate(text):
            if not covered[i]:
                out.append(char)
            elif i == 0 or not covered[i - 1]:
                out.append(MASK)
        return "".join(out)

    def value(self, value: Any) -> Any:
        """``value`` (a JSON-like result: dicts, lists, strings…) with every string masked,
        dict keys included; other values as they are."""
        if not self.pieces:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def carried(values: Iterable[str], data: SiteData) -> tuple[str, ...]:
    """The ``values`` a stretch of which (as :class:`Masker` finds them) stands in any
    string of ``data`` — a cookie, a storage key or value, an IndexedDB record, a URL —
    each once, in order: what a copy of ``data`` carries in ``SiteData.mask`` to stay
    masked wherever it goes, and no more (a value typed but never copied into the data
    does not travel with it)."""
    kept = [v for v in dict.fromkeys(values) if v]
    if not kept:
        return ()
    owner: dict[str, set[int]] = {}
    for index, value in enumerate(kept):
        for pieces in Masker.of([value]).pieces.values():
            for piece in pieces:
                owner.setdefault(piece, set()).add(index)
    everyone = Masker.of(kept)
    dumped = SITE_DATA_JSON.dump_python(replace(data, mask=()))
    found: set[int] = set()
    for text in _strings(dumped):
        for _, _, piece in everyone.hits(text):
            found |= owner[piece]
        if len(found) == len(kept):
            break
    return tuple(v for i, v in enumerate(kept) if i in found)


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value, dict keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def masked_site_data(masker: Masker, data: SiteData) -> SiteData:
    """``data`` with every typed secret value masked in every string it holds, for exports:
    a storage state must never carry a value typed into a page that the page copied into
    its storage (attacker review M3) — cookie names, values and paths, localStorage /
    sessionStorage keys and values, IndexedDB records, tabs' URLs. A host cannot hold
    ``•••``: a cookie whose domain, or the storage of an origin whose origin, holds a
    stretch of a value is left out. The mask itself (``SiteData.mask``) is never in an
    export."""
    data = replace(data, mask=())
    if not masker:
        return data

    def items(found: Mapping[str, str]) -> dict[str, str]:
        return {masker.text(k): masker.text(v) for k, v in found.items()}

    def kept(host: str) -> bool:
        return masker.text(host) == host

    session = data.session
    return replace(
        data,
        cookies=tuple(
            replace(
                c, name=masker.text(c.name), value=masker.text(c.value), path=masker.text(c.path)
            )
            for c in data.cookies
            if kept(c.domain)
        ),
        origins={
            origin: OriginStorage(
                local=items(o.local),
                indexed_db=tuple(masker.value(dict(db)) for db in o.indexed_db),
            )
            for origin, o in data.origins.items()
            if kept(origin)
        },
        session=None
        if session is None or not kept(session.origin)
        else replace(session, items=items(session.items)),
        tabs=tuple(
            replace(t, url=masker.text(t.url), items=items(t.items))
            for t in data.tabs
            if kept(t.origin)
        ),
    )
