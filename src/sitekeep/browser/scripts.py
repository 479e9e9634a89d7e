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
    "CODEC",
    "LANDED",
    "PRELOAD",
    "READ",
    "READ_DATABASES",
    "REPLACE_LOCATION",
    "RESTORED_KEY",
    "SPARE_HTML",
    "SPARE_MARKER_ATTR",
    "SPARE_PATH",
    "WRITE_DATABASES",
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

REPLACE_LOCATION = "(u) => { location.replace(u); }"
"""Navigate to ``u`` leaving no history entry behind (HTML §Location ``replace``)."""

SPARE_HTML = (
    "<!doctype html><html $MARKER><head><meta charset=utf-8>"
    '<link rel=icon href="data:,"><title>sitekeep</title></head><body>%s</body></html>'
).replace("$MARKER", SPARE_MARKER_ATTR)
"""The spare page: a marker and nothing that loads (the data: icon stops Firefox's
``/favicon.ico`` request). ``%s`` takes the same-site frames."""


# IndexedDB: the tagged JSON of structured-clone values is described in ``browser.indexeddb``.

CODEC = r"""
const b64 = (buf) => {
  const bytes = new Uint8Array(buf);
  let out = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    out += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(out);
};
const unb64 = (text) => {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes.buffer;
};
const VIEWS = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
  "Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array",
  "BigUint64Array", "DataView"].filter((n) => typeof self[n] === "function");
async function encode(value, seen = new Map()) {
  const t = typeof value;
  if (value === null || t === "string" || t === "boolean") return value;
  if (t === "undefined") return {$: "undef"};
  if (t === "number") {
    if (Object.is(value, -0)) return {$: "num", v: "-0"};  // String(-0) is "0"
    if (!Number.isFinite(value)) return {$: "num", v: String(value)};
    return value;
  }
  if (t === "bigint") return {$: "big", v: value.toString()};
  if (seen.has(value)) return {$: "ref", i: seen.get(value)};
  const id = seen.size;
  seen.set(value, id);
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  if (tag === "Date") return {$: "date", v: await encode(value.getTime(), seen)};
  if (tag === "RegExp") return {$: "re", source: value.source, flags: value.flags};
  if (tag === "ArrayBuffer") return {$: "ab", b64: b64(value)};
  if (VIEWS.includes(tag)) {
    const bytes = value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength);
    return {$: "view", type: tag, b64: b64(bytes)};
  }
  if (tag === "File") {
    return {$: "file", name: value.name, type: value.type, lastModified: value.lastModified,
      b64: b64(await value.arrayBuffer())};
  }
  if (tag === "Blob") return {$: "blob", type: value.type, b64: b64(await value.arrayBuffer())};
  if (tag === "Map") {
    const v = [];
    for (const [k, x] of value) v.push([await encode(k, seen), await encode(x, seen)]);
    return {$: "map", v};
  }
  if (tag === "Set") {
    const v = [];
    for (const x of value) v.push(await encode(x, seen));
    return {$: "set", v};
  }
  if (tag === "Boolean" || tag === "Number" || tag === "String" || tag === "BigInt") {
    return {$: "box", v: await encode(value.valueOf(), seen)};
  }
  if (value instanceof Error) return {$: "error", name: value.name, message: value.message};
  if (Array.isArray(value)) {
    const v = [];
    for (let i = 0; i < value.length; i++) {
      v.push(i in value ? await encode(value[i], seen) : {$: "hole"});
    }
    const extra = [];
    for (const k of Object.keys(value)) {
      if (!/^(0|[1-9][0-9]*)$/.test(k) || Number(k) >= value.length) {
        extra.push([k, await encode(value[k], seen)]);
      }
    }
    return extra.length ? {$: "arr", v, extra} : {$: "arr", v};
  }
  const v = [];
  for (const k of Object.keys(value)) v.push([k, await encode(value[k], seen)]);
  return {$: "obj", v};
}
function decode(value, seen = []) {
  if (value === null || typeof value !== "object") return value;
  const keep = (x) => { seen.push(x); return x; };
  switch (value.$) {
    case "undef": return undefined;
    case "num": return value.v === "-0" ? -0 : Number(value.v);
    case "big": return BigInt(value.v);
    case "ref": return seen[value.i];
    case "date": {
      const slot = seen.length;
      seen.push(null);
      const d = new Date(decode(value.v, seen));
      seen[slot] = d;
      return d;
    }
    case "re": return keep(new RegExp(value.source, value.flags));
    case "ab": return keep(unb64(value.b64));
    case "view": {
      const buf = unb64(value.b64);
      if (value.type === "DataView") return keep(new DataView(buf));
      return keep(new self[value.type](buf));
    }
    case "file": return keep(new File([unb64(value.b64)], value.name,
      {type: value.type, lastModified: value.lastModified}));
    case "blob": return keep(new Blob([unb64(value.b64)], {type: value.type}));
    case "map": {
      const m = keep(new Map());
      for (const [k, x] of value.v) m.set(decode(k, seen), decode(x, seen));
      return m;
    }
    case "set": {
      const s = keep(new Set());
      for (const x of value.v) s.add(decode(x, seen));
      return s;
    }
    case "box": {
      const slot = seen.length;
      seen.push(null);
      const b = Object(decode(value.v, seen));
      seen[slot] = b;
      return b;
    }
    case "error": { const e = keep(new Error(value.message)); e.name = value.name; return e; }
    case "arr": {
      const a = keep(new Array(value.v.length));
      value.v.forEach((x, i) => { if (!(x && x.$ === "hole")) a[i] = decode(x, seen); });
      for (const [k, x] of value.extra || []) a[k] = decode(x, seen);
      return a;
    }
    case "obj": {
      const o = keep({});
      for (const [k, x] of value.v) {
        const property = {value: decode(x, seen), enumerable: true, writable: true};
        Object.defineProperty(o, k, {...property, configurable: true});
      }
      return o;
    }
  }
  throw new Error("unknown tag " + value.$);
}
const req = (r) => new Promise((ok, ko) => {
  r.onsuccess = () => ok(r.result);
  r.onerror = () => ko(r.error);
});
"""
"""Shared by the read and write scripts: ``encode`` (async: Blob bytes are read) and
``decode`` of the tagged JSON, base64 helpers and a request-to-promise helper."""

READ_DATABASES = (
    "async () => {"
    + CODEC
    + r"""
  const out = [];
  for (const info of await indexedDB.databases()) {
    const db = await new Promise((ok, ko) => {
      const r = indexedDB.open(info.name);
      r.onupgradeneeded = () => { r.transaction.abort(); };  // it went away meanwhile
      r.onsuccess = () => ok(r.result);
      r.onerror = () => ko(r.error);
    }).catch(() => null);
    if (!db) continue;
    const names = Array.from(db.objectStoreNames);
    const stores = [];
    if (names.length) {
      const tx = db.transaction(names, "readonly");
      const pending = names.map((name) => {
        const st = tx.objectStore(name);
        const indexes = Array.from(st.indexNames).map((n) => {
          const ix = st.index(n);
          return {name: n, keyPath: ix.keyPath, unique: ix.unique, multiEntry: ix.multiEntry};
        });
        return Promise.all([req(st.getAllKeys()), req(st.getAll())]).then(([keys, values]) => ({
          name, keyPath: st.keyPath, autoIncrement: st.autoIncrement, indexes, keys, values,
        }));
      });
      for (const st of await Promise.all(pending)) {
        const records = [];
        for (let i = 0; i < st.keys.length; i++) {
          records.push([await encode(st.keys[i]), await encode(st.values[i])]);
        }
        stores.push({name: st.name, keyPath: st.keyPath, autoIncrement: st.autoIncrement,
          indexes: st.indexes, records});
      }
    }
    out.push({name: db.name, version: db.version, stores});
    db.close();
  }
  return JSON.stringify(out);
}"""
)
"""Every database of the document's origin: ``[{name, version, stores: [{name, keyPath,
autoIncrement, indexes: [{name, keyPath, unique, multiEntry}], records: [[key, value]]}]}]``
with keys and values in the tagged JSON of :data:`CODEC`. All stores of a database are
read in one read-only transaction, every request issued before any is awaited."""

WRITE_DATABASES = (
    "async (databases) => {"
    + CODEC
    + r"""
  for (const d of databases) {
    await req(indexedDB.deleteDatabase(d.name));
    const db = await new Promise((ok, ko) => {
      const r = indexedDB.open(d.name, d.version);
      r.onupgradeneeded = () => {
        for (const s of d.stores) {
          const options = {autoIncrement: s.autoIncrement};
          if (s.keyPath !== null) options.keyPath = s.keyPath;
          const st = r.result.createObjectStore(s.name, options);
          for (const ix of s.indexes) {
            st.createIndex(ix.name, ix.keyPath, {unique: ix.unique, multiEntry: ix.multiEntry});
          }
        }
      };
      r.onsuccess = () => ok(r.result);
      r.onerror = () => ko(r.error);
    });
    const names = d.stores.map((s) => s.name);
    if (names.length) {
      const tx = db.transaction(names, "readwrite");
      const done = new Promise((ok, ko) => {
        tx.oncomplete = ok; tx.onerror = () => ko(tx.error); tx.onabort = () => ko(tx.error);
      });
      for (const s of d.stores) {
        const st = tx.objectStore(s.name);
        for (const [key, value] of s.records) {
          if (s.keyPath === null) st.put(decode(value), decode(key));
          else st.put(decode(value));
        }
      }
      await done;
    }
    db.close();
  }
}"""
)
"""Write :data:`READ_DATABASES`' result into the document's origin, each database
replaced. Rejects (the restore names the origin) when a write fails."""


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
