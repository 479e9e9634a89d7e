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
shows, in the forms a page or URL gives it (as typed, percent-encoded with ``%20`` or
``+``, JSON-escaped). A value shorter than :data:`PIECE` is masked only whole.

**The mask follows the data** (issue #24). Site data saved or captured from a session
carries, sealed with it, the values a stretch of which it holds (:func:`carried`, into
``SiteData.mask``): a profile made from it, a session opened from that profile (which adds
them to its own mask, ``SessionRecord.mask``) and every later copy mask them too — even
once the secret was changed or deleted, for the session keeps the values it typed as they
were when typed. Exports never carry the mask (:func:`masked_site_data`).

Known limit: a page that transforms a value (upper-cases it, reverses it, hashes it) shows
something this cannot recognise. Screenshots are pixels and are not masked.
"""

from __future__ import annotations

import json
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


def forms(value: str) -> set[str]:
    """``value`` as typed and as a page or URL gives it: percent-encoded (``%20`` or
    ``+``, RFC 3986 / HTML form submission) and JSON-escaped."""
    return {value, quote(value, safe=""), quote(value), quote_plus(value), json.dumps(value)[1:-1]}


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

    def hits(self, text: str) -> Iterator[tuple[int, int]]:
        """``(start, length)`` of every piece of a value that stands in ``text``."""
        for size, pieces in self.pieces.items():
            for i in range(len(text) - size + 1):
                if text[i : i + size] in pieces:
                    yield i, size

    def __bool__(self) -> bool:
        return bool(self.pieces)

    def text(self, text: str) -> str:
        """``text`` with every stretch of a value replaced by ``•••``."""
        covered = [False] * len(text)
        hit = False
        for i, size in self.hits(text):
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
        for i, size in everyone.hits(text):
            found |= owner[text[i : i + size]]
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
    """``data`` with every typed secret value masked in its cookie values and its
    localStorage / sessionStorage keys and values (and IndexedDB records), for exports:
    a storage state must never carry a value typed into a page that the page copied into
    its storage (attacker review M3). Cookie names and where things are stay as they are;
    the mask itself (``SiteData.mask``) is never in an export."""
    data = replace(data, mask=())
    if not masker:
        return data

    def items(found: Mapping[str, str]) -> dict[str, str]:
        return {masker.text(k): masker.text(v) for k, v in found.items()}

    return replace(
        data,
        cookies=tuple(replace(c, value=masker.text(c.value)) for c in data.cookies),
        origins={
            origin: OriginStorage(
                local=items(o.local),
                indexed_db=tuple(masker.value(dict(db)) for db in o.indexed_db),
            )
            for origin, o in data.origins.items()
        },
        session=None
        if data.session is None
        else replace(data.session, items=items(data.session.items)),
        tabs=tuple(replace(t, items=items(t.items)) for t in data.tabs),
    )
