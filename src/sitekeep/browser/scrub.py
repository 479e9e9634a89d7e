"""Nothing of sitekeep's own drivers reaches the client of a handed-out endpoint (SPEC §21).

A handover relays the answers of the browser's driver (chromedriver, a geckodriver and its
Firefox, a Selenium Grid) to a client that must learn none of their addresses: one would
reach every tenant's browsers behind that driver, and the driver's own session id is the
key to this browser there (a Grid is often reachable from where its clients run). So every
string of every answer passes :meth:`Scrubber.text`:

* the driver's session id becomes the id the handover gave out;
* the driver's URL, its BiDi URL, the browser's DevTools address and a configured Grid
  (each as a URL and as ``host:port``) become :data:`HIDDEN`, and so does any other
  ``host:port`` on a socket the browsers are refused (``address.Refused``);
* a Selenium Grid's error message loses its diagnostic tail (``Build info``, ``System
  info``: the node's host name and address, ``Driver info``, ``Command``, ``Capabilities``:
  the node's DevTools and BiDi URLs), and every error its ``stacktrace``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from sitekeep.address import Refused
from sitekeep.model import BrowserRef

__all__ = ["HIDDEN", "Scrubber"]

HIDDEN = "[sitekeep]"
"""What an address of sitekeep's own becomes."""

_TAILS = (
    "Build info:",
    "System info:",
    "Driver info:",
    "Command: [",
    "Capabilities {",
    "Session ID:",
)
"""Where a Selenium Grid's diagnostic tail starts in an error message."""
_PORT = re.compile(r":([0-9]{1,5})(?![0-9])")
_HOST = frozenset(string.ascii_letters + string.digits + "_.~%-")
_LONGEST_HOST = 253


class Scrubber:
    """Rewrites what one browser's driver answers (see the module's docstring)."""

    def __init__(
        self,
        ref: BrowserRef,
        handed_out: str,
        refused: Refused,
        extra: Iterable[str | None] = (),
    ) -> None:
        """``handed_out``: the session id the client knows; ``extra``: more addresses to
        hide (the configured ``SITEKEEP_WEBDRIVER_URL``)."""
        words: set[str] = set()
        for url in (ref.endpoint, ref.ws_url, ref.debugger and f"http://{ref.debugger}", *extra):
            if url:
                words |= {url.rstrip("/"), *_netlocs(url)}
        words.discard("")
        self._replace = [(ref.session_id, handed_out)] if ref.session_id else []
        self._replace += [(w, HIDDEN) for w in sorted(words, key=len, reverse=True)]
        self._refused = refused

    def text(self, text: str) -> str:
        """``text`` with nothing of sitekeep's drivers left in it."""
        for tail in _TAILS:
            cut = text.find(tail)
            if cut >= 0:
                text = text[:cut].rstrip()
        for word, by in self._replace:
            if word in text:
                text = text.replace(word, by)
        if ":" in text:  # a screenshot's base64 has none: no scan over megabytes
            text = self._hide_refused(text)
        return text

    def _hide_refused(self, text: str) -> str:
        """Every ``host:port`` of a refused socket as :data:`HIDDEN`. Each ``:port`` is
        found by a regular expression and its host read backwards from it, so the cost is
        linear in the text (a host-first pattern retried at every offset was not)."""
        pieces: list[str] = []
        done = 0
        for match in _PORT.finditer(text):
            start = _host_start(text, match.start())
            if start is None or start < done:
                continue
            url = f"http://{text[start : match.start()]}:{match.group(1)}/"
            if self._refused.known(url) or self._refused.reaches(url):
                pieces += [text[done:start], HIDDEN]
                done = match.end()
        return "".join(pieces) + text[done:] if pieces else text

    def value(self, value: Any) -> Any:
        """A JSON value with :meth:`text` applied to every string in it, keys included,
        and every error's ``stacktrace`` emptied (iterative: any depth)."""
        root: list[Any] = [value]
        stack: list[tuple[Any, Any]] = [(root, 0)]
        while stack:
            holder, key = stack.pop()
            item = holder[key]
            if isinstance(item, str):
                holder[key] = self.text(item)
            elif isinstance(item, list):
                stack.extend((item, i) for i in range(len(item)))
            elif isinstance(item, dict):
                fresh = {self.text(k): ("" if k == "stacktrace" else v) for k, v in item.items()}
                holder[key] = fresh
                stack.extend((fresh, k) for k in fresh)
        return root[0]


def _host_start(text: str, colon: int) -> int | None:
    """Where the host ending at ``colon`` starts (``[…]`` for IPv6), or None."""
    if colon > 0 and text[colon - 1] == "]":
        start = text.rfind("[", max(0, colon - 48), colon)
        return start if start >= 0 else None
    start = colon
    while start > 0 and colon - start < _LONGEST_HOST and text[start - 1] in _HOST:
        start -= 1
    return start if start < colon else None


def _netlocs(url: str) -> tuple[str, ...]:
    """``user:password@host:port`` and ``host:port`` of ``url``."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        return ()
    return (netloc, netloc.rsplit("@", 1)[-1]) if netloc else ()
