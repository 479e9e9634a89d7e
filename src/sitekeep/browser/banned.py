"""The browser's network layer refuses the ports of sitekeep and its drivers (SPEC §12;
issue #24, attacked afresh: the guard's "grace").

``browser.guard`` fails, over BiDi, each request a browsing context makes to a refused
socket — once its intercept holds in that context. BiDi sees no more than that: in
Chromium a WebSocket, a worker's or shared worker's request and (racing the new tab's
intercept) a popup's first load went out unseen; in Firefox an ``<object>`` or
``<embed>`` (each a frame that a handover's holder reads, or a screenshot shows) and a
shared worker's request. So every browser is also started refusing, at its network
layer, every port a refused socket listens on when it starts (``Refused.ports``), on any
host:

* Chromium: one ``MAP *:<port> ~NOTFOUND`` host-resolver rule per port, ahead of the
  settings' own rules in the one ``--host-resolver-rules`` flag (its first matching rule
  wins): a connection there fails as a name that does not resolve;
* Firefox: the port in ``network.security.ports.banned`` (the connection fails with
  ``NS_ERROR_PORT_ACCESS_NOT_ALLOWED``).

A scheme's default port (80, 443) is never refused so: every site would go with it; the
guard alone keeps a refused socket there. Known limit: a browser's flags and prefs are
fixed at its start, so a socket sitekeep starts later — another browser's own driver,
BiDi or DevTools port — is refused in an older browser by its guard alone; the sitekeep
server, the embedded chromedriver (started before any browser) and a configured Grid are
known before every browser.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["DEFAULT_PORTS", "PORTS_PREF", "REFUSED_ERRORS", "chromium_args", "firefox_prefs"]

DEFAULT_PORTS = frozenset({80, 443})
"""Ports never refused at the network layer (every site's)."""
PORTS_PREF = "network.security.ports.banned"
"""Firefox's list of ports it never connects to (comma-separated)."""
REFUSED_ERRORS = frozenset({"NS_ERROR_PORT_ACCESS_NOT_ALLOWED"})
"""A navigation's error that is the network layer's refusal of the port: Firefox refuses
a redirect hop there before BiDi's ``beforeRequestSent`` (Chromium's guard sees its hop
first). A navigation that fails so is ``own_address``, as one the guard failed."""
_RULES = "--host-resolver-rules="


def _refusable(ports: Iterable[int]) -> list[int]:
    return sorted({p for p in ports if p not in DEFAULT_PORTS})


def chromium_args(args: Iterable[str], ports: Iterable[int]) -> tuple[str, ...]:
    """``args`` with ``MAP *:<port> ~NOTFOUND`` for each of ``ports`` ahead of the rules
    of their ``--host-resolver-rules`` flag (one flag: Chromium keeps the last of two)."""
    bans = [f"MAP *:{port} ~NOTFOUND" for port in _refusable(ports)]
    if not bans:
        return tuple(args)
    others = [a for a in args if not a.startswith(_RULES)]
    theirs = [a.removeprefix(_RULES).strip("\"'") for a in args if a.startswith(_RULES)]
    rules = ", ".join([*bans, *(r for r in theirs if r)])
    return (*others, f"{_RULES}{rules}")


def firefox_prefs(
    prefs: Iterable[tuple[str, Any]], ports: Iterable[int]
) -> tuple[tuple[str, Any], ...]:
    """``prefs`` with each of ``ports`` in ``network.security.ports.banned`` (added to
    the ports a pref there already bans)."""
    kept = [(name, value) for name, value in prefs if name != PORTS_PREF]
    given = [str(v) for name, v in prefs if name == PORTS_PREF]
    listed = {int(p) for v in given for p in v.split(",") if p.strip().isdigit()}
    banned = _refusable([*listed, *ports])
    if not banned:
        return tuple(kept)
    return (*kept, (PORTS_PREF, ",".join(str(p) for p in banned)))
