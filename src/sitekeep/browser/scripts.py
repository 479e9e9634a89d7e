"""The JavaScript sitekeep runs in pages, kept in one place.

Every script returns JSON text (a BiDi ``string`` remote value) so results never depend on
the remote-value serialisation of objects. None of them logs or stores anything itself.
"""

from __future__ import annotations

__all__ = [
    "CHANNEL",
    "DOC_KEY",
    "PRELOAD",
    "READ",
    "SPARE_MARKER_ATTR",
    "SPARE_PATH",
    "WRITE",
]

SPARE_PATH = "/__sitekeep-spare__"
"""The reserved path the spare tab stands on, on any origin (SPEC §3)."""

SPARE_MARKER_ATTR = "data-sitekeep-spare"
"""Set on the spare page's root element; absent when a service worker answered instead."""

CHANNEL = "sitekeep.leave"
"""The ``script.message`` channel the preload script reports on."""

DOC_KEY = "sitekeep.doc"
"""``Symbol.for`` key under which each document keeps its id."""

PRELOAD = """(channel) => {
  const origin = self.origin;
  if (!origin || origin === "null" || location.pathname === "$SPARE") return;
  const doc = Math.random().toString(36).slice(2) + performance.timeOrigin.toString(36);
  Object.defineProperty(window, Symbol.for("$DOC"), {value: doc});
  let trusted = window === window.top;
  if (!trusted) {
    try { trusted = window.top.location.origin === origin; } catch (e) { trusted = false; }
  }
  const read = () => {
    const out = {};
    try {
      for (let i = 0; i < localStorage.length; i++) {
        const k = localStorage.key(i);
        out[k] = localStorage.getItem(k);
      }
    } catch (e) { return null; }
    return out;
  };
  channel(JSON.stringify({t: "born", doc, origin, trusted}));
  const leave = () => {
    channel(JSON.stringify({t: "left", doc, origin, trusted, local: trusted ? read() : null}));
  };
  addEventListener("beforeunload", leave, {capture: true});
  addEventListener("pagehide", leave, {capture: true});
}""".replace("$SPARE", SPARE_PATH).replace("$DOC", DOC_KEY)
"""Capture on leave: each document reports its birth and, as it leaves, its origin's
localStorage. The report goes at ``beforeunload`` (HTML §Navigating: fired when a navigation
begins, while the document is still whole — Chromium drops channel messages sent from a
document already being torn down) and again at ``pagehide`` (the only event of a tab closed
over BiDi). A frame that is not same-origin with the top may see partitioned storage, so it
reports as untrusted."""

READ = """(withSession) => {
  const dump = (s) => {
    const out = {};
    for (let i = 0; i < s.length; i++) { const k = s.key(i); out[k] = s.getItem(k); }
    return out;
  };
  const res = {
    origin: self.origin,
    doc: window[Symbol.for("$DOC")] || null,
    spare: document.documentElement.hasAttribute("$MARKER"),
    trusted: window === window.top,
  };
  if (!res.trusted) {
    try { res.trusted = window.top.location.origin === self.origin; } catch (e) {}
  }
  try {
    res.local = dump(localStorage);
    if (withSession) res.session = dump(sessionStorage);
  } catch (e) { res.error = String(e && e.name || e); }
  return JSON.stringify(res);
}""".replace("$DOC", DOC_KEY).replace("$MARKER", SPARE_MARKER_ATTR)
"""Read the document's origin, id, spare marker, localStorage and (optionally) its tab's
sessionStorage."""

WRITE = """(payload) => {
  if (!document.documentElement.hasAttribute("$MARKER")) return "no-marker";
  const data = JSON.parse(payload);
  try {
    if (data.local) {
      localStorage.clear();
      for (const [k, v] of Object.entries(data.local)) localStorage.setItem(k, v);
    }
    if (data.session) {
      sessionStorage.clear();
      for (const [k, v] of Object.entries(data.session)) sessionStorage.setItem(k, v);
    }
  } catch (e) { return "error:" + String(e && e.name || e); }
  return "ok";
}""".replace("$MARKER", SPARE_MARKER_ATTR)
"""Replace a spare page's localStorage and/or sessionStorage with the payload (JSON text
``{local?, session?}``); refuses a page without the spare marker."""

SPARE_HTML = (
    "<!doctype html><html $MARKER><head><meta charset=utf-8>"
    '<link rel=icon href="data:,"><title>sitekeep</title></head><body>%s</body></html>'
).replace("$MARKER", SPARE_MARKER_ATTR)
"""The spare page: a marker and nothing that loads (the data: icon stops Firefox's
``/favicon.ico`` request). ``%s`` takes the same-site frames."""
