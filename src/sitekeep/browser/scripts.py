"""The JavaScript sitekeep runs in pages, kept in one place.

Every script returns JSON text (a BiDi ``string`` remote value) so results never depend on
the remote-value serialisation of objects. None of them logs or stores anything itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ACKS",
    "CHANNEL",
    "LANDED",
    "PRELOAD",
    "READ",
    "RESTORED_KEY",
    "SPARE_HTML",
    "SPARE_MARKER_ATTR",
    "SPARE_PATH",
    "inline_write",
    "landing_preload",
]

SPARE_PATH = "/__sitekeep-spare__"
"""The reserved path the spare tab stands on, on any origin (SPEC §3)."""

SPARE_MARKER_ATTR = "data-sitekeep-spare"
"""Set on the spare page's root element; absent when a service worker answered instead."""

CHANNEL = "sitekeep.leave"
"""The ``script.message`` channel the preload script reports on."""

RESTORED_KEY = "sitekeep.restored"
"""``Symbol.for`` key under which the landing preload leaves its result in the page."""

PRELOAD = """(channel) => {
  const origin = self.origin;
  if (!origin || origin === "null" || location.pathname === "$SPARE") return;
  let trusted = window === window.top;
  if (!trusted) {
    try { trusted = window.top.location.origin === origin; } catch (e) { trusted = false; }
  }
  const read = () => {
    const out = Object.create(null);  // "__proto__" is a key like any other
    try {
      for (let i = 0; i < localStorage.length; i++) {
        const k = localStorage.key(i);
        out[k] = localStorage.getItem(k);
      }
    } catch (e) { return null; }
    return out;
  };
  let idb = false;  // whether this document opened an IndexedDB database
  try {
    const open = IDBFactory.prototype.open;
    IDBFactory.prototype.open = function (...args) { idb = true; return open.apply(this, args); };
  } catch (e) {}
  const leave = () => {
    channel(JSON.stringify({origin, trusted, idb, local: trusted ? read() : null}));
  };
  addEventListener("beforeunload", leave, {capture: true});
  addEventListener("pagehide", leave, {capture: true});
}""".replace("$SPARE", SPARE_PATH)
"""Capture on leave: each document reports its origin's localStorage as it leaves — at
``beforeunload`` (fired when a navigation begins, while the document is still whole) and
again at ``pagehide`` (the only event of a tab closed over BiDi; Chromium drops channel
messages sent from a document already being torn down). A frame that is not same-origin
with the top may see partitioned storage, so it reports as untrusted, without content.
It also says whether the document opened an IndexedDB database (``indexedDB.open``), so a
save without IndexedDB can name the origins whose databases it did not carry."""

READ = """async (withSession) => {
  const dump = (s) => {
    const out = Object.create(null);  // "__proto__" is a key like any other
    for (let i = 0; i < s.length; i++) { const k = s.key(i); out[k] = s.getItem(k); }
    return out;
  };
  const res = {
    origin: self.origin,
    spare: document.documentElement.hasAttribute("$MARKER"),
    trusted: window === window.top,
    top: window === window.top,
    url: location.href,
    frames: window.length,
  };
  if (!res.trusted) {
    try { res.trusted = window.top.location.origin === self.origin; } catch (e) {}
  }
  try {
    res.local = dump(localStorage);
    if (withSession) res.session = dump(sessionStorage);
    if (withSession) res.ua = navigator.userAgent;
    if (withSession) res.title = document.title;
  } catch (e) { res.error = String(e && e.name || e); }
  try { res.idb = (await indexedDB.databases()).length > 0; } catch (e) { res.idb = false; }
  return JSON.stringify(res);
}""".replace("$MARKER", SPARE_MARKER_ATTR)
"""Read the document's origin, spare marker, localStorage, (optionally) its tab's
sessionStorage, user agent and title, how many frames it holds (``window.length``), and
whether its origin holds IndexedDB databases."""

SPARE_HTML = (
    "<!doctype html><html $MARKER><head><meta charset=utf-8>"
    '<link rel=icon href="data:,"><title>sitekeep</title></head><body>%s</body></html>'
).replace("$MARKER", SPARE_MARKER_ATTR)
"""The spare page: a marker and nothing that loads (the data: icon stops Firefox's
``/favicon.ico`` request). ``%s`` takes the same-site frames."""


def _js_string(value: Any) -> str:
    """``value`` as JSON text inside a JS string literal, safe in an inline ``<script>``.

    The page parses it with ``JSON.parse``, so hostile keys such as ``__proto__`` stay
    plain own properties (an object literal would set the prototype instead).
    """
    literal = json.dumps(json.dumps(value, ensure_ascii=True))
    return literal.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_WRITE_BODY = """
    if (d.local) {
      localStorage.clear();
      for (const [k, v] of Object.entries(d.local)) localStorage.setItem(k, v);
    }
    if (d.session) {
      sessionStorage.clear();
      for (const [k, v] of Object.entries(d.session)) sessionStorage.setItem(k, v);
    }"""


def inline_write(payload: Mapping[str, Any], *, top: bool) -> str:
    """The inline script of a restore's spare page: it writes ``payload`` (``{local?,
    session?}``) into its own origin's storage as the page is parsed, and acknowledges —
    the top page into ``window.__sitekeepAcks``, a frame by ``postMessage`` to the top, which
    listens from before its frames exist."""
    listen = (
        "window.__sitekeepAcks = {};"
        "addEventListener('message', (e) => { const a = e.data && e.data.sitekeepAck;"
        " if (a && a === e.origin) window.__sitekeepAcks[a] = e.data.result; });"
        if top
        else ""
    )
    ack = (
        "window.__sitekeepAcks[self.origin] = r;"
        if top
        else "parent.postMessage({sitekeepAck: self.origin, result: r}, '*');"
    )
    if not payload.get("idb"):
        return (
            f"(() => {{ {listen} let r = 'ok';"
            f"  try {{ const d = JSON.parse({_js_string(payload)});{_WRITE_BODY}"
            f"  }} catch (e) {{ r = 'error:' + String(e && e.name || e); }} {ack} }})();"
        )
    # IndexedDB writes are asynchronous: acknowledge once every transaction completed.
    from sitekeep.browser.indexeddb import WRITE_DATABASES

    return (
        f"(() => {{ {listen} const fin = (r) => {{ {ack} }};"
        f"  try {{ const d = JSON.parse({_js_string(payload)});{_WRITE_BODY}"
        f"    ({WRITE_DATABASES})(d.idb).then(() => fin('ok'),"
        "      (e) => fin('error:IndexedDB ' + String(e && e.name || e)));"
        "  } catch (e) { fin('error:' + String(e && e.name || e)); } })();"
    )


ACKS = """(want, ms) => new Promise((done) => {
  const acks = () => window.__sitekeepAcks || {};
  const until = Date.now() + (ms || 1000);
  const check = () => (Object.keys(acks()).length >= want || Date.now() > until)
    ? done(JSON.stringify(acks())) : setTimeout(check, 5);
  check();
})"""
"""The acknowledgements a restore's spare page collected (waits up to ``ms``, 1 s by
default, for late ones: IndexedDB writes acknowledge when their transactions complete)."""


def landing_preload(origin: str, payload: Mapping[str, Any]) -> str:
    """A one-shot preload (``script.addPreloadScript``) that writes ``payload`` into the
    landing page's storage before the page's own scripts run, and leaves its result under
    ``Symbol.for(RESTORED_KEY)`` (non-enumerable) for sitekeep to read after the load — a
    channel message from a new document may arrive only after its ``load``.

    It acts only in a top-level document of ``origin`` whose storage is still empty: the
    restore's fresh browser holds nothing else there, and a later document of the same
    origin (before the script is removed) finds the storage written and leaves it alone.
    """
    return (
        "() => {"
        f"  if (window !== window.top || self.origin !== {json.dumps(origin)}) return;"
        "  let r = 'ok';"
        "  try {"
        "    if (localStorage.length || sessionStorage.length) return;"
        f"    const d = JSON.parse({_js_string(payload)});{_WRITE_BODY}"
        "  } catch (e) { r = 'error:' + String(e && e.name || e); }"
        f"  Object.defineProperty(window, Symbol.for({json.dumps(RESTORED_KEY)}), {{value: r}});"
        "}"
    )


LANDED = (
    "() => JSON.stringify(window[Symbol.for("
    + json.dumps(RESTORED_KEY)
    + ")] || ('landed on ' + (self.origin === 'null' ? 'no origin' : 'another origin')))"
)
"""After a preload landing: the preload's result, or why there is none."""
