"""IndexedDB, opt-in: every database of an origin, schema and records (SPEC §3 IndexedDB).

A save with ``indexed_db=true`` reads, per origin, each database (name, version), each
object store (name, key path, auto-increment, indexes with key path, ``unique`` and
``multiEntry``) and every record as a (key, value) pair. Values are structured-clone data
(HTML §Safe passing of structured data), so they are written in a tagged JSON that keeps
what JSON cannot: ``undefined``, ``-0``, ``NaN``/``±Infinity``, BigInt, Date, RegExp, Map,
Set, ArrayBuffer, every typed array and DataView (their bytes, base64), Blob and File
(type, name, lastModified and bytes), boxed primitives, Error, and shared or cyclic
references (``{"$": "ref"}``). Object entries are kept as a list, so any key — ``$`` or
``__proto__`` too — is an own property again. A restore writes them in a spare page on the
origin before the browser lands (it opens each database at its version, creates the
stores and indexes in ``upgradeneeded``, puts the records, and acknowledges once every
transaction completed).

Known limits: an auto-increment store's key generator comes back as one past the highest
numeric key written (IndexedDB offers no way to read or set it); values a structured clone
cannot hold never reach IndexedDB in the first place.

Without the opt-in, a save names every origin it knows holds IndexedDB (a live or spare
read found databases, or a page opened one — ``scripts.PRELOAD`` notes ``indexedDB.open``
calls) as not carried.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from sitekeep.browser.docs import frames_by_origin
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.spare import SpareResponder, background_spare
from sitekeep.errors import BidiError, BidiTimeout
from sitekeep.sites import group_by_site

__all__ = [
    "CODEC",
    "NOT_CARRIED",
    "READ_DATABASES",
    "WRITE_DATABASES",
    "read_databases",
]

NOT_CARRIED = "its IndexedDB was not carried: save_site_data(indexed_db=true) carries it"

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


async def read_databases(
    browser: LiveBrowser, origins: Sequence[str], *, deadline: float
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """Read every database of each origin in a background spare tab, a site per
    navigation (SPEC §3 IndexedDB). A read-only transaction reads beside the site's own
    pages, so live origins are read the same way.

    Args:
        deadline: seconds the whole loop may take; the rest are named as not attempted.

    Returns:
        origin → its databases (empty when it has none), and origin → why its databases
        could not be read (its last snapshot's stand).
    """
    read: dict[str, list[dict[str, Any]]] = {}
    failed: dict[str, str] = {}
    if not origins:
        return read, failed
    conn = browser.conn
    stop_at = time.monotonic() + deadline
    async with background_spare(conn) as (tab, spare):
        for members in group_by_site(origins).values():
            if time.monotonic() > stop_at:
                failed.update(dict.fromkeys(members, "not attempted: the save's deadline passed"))
                continue
            await _read_site(browser, spare, tab, members, read, failed)
    return read, failed


async def _read_site(
    browser: LiveBrowser,
    spare: SpareResponder,
    tab: str,
    members: Sequence[str],
    read: dict[str, list[dict[str, Any]]],
    failed: dict[str, str],
) -> None:
    try:
        await browser.conn.send(
            "browsingContext.navigate",
            {"context": tab, "url": spare.url(members[0], members[1:]), "wait": "complete"},
        )
        by_origin = await frames_by_origin(browser, tab, members)
    except BidiError as exc:
        failed.update(dict.fromkeys(members, f"IndexedDB could not be read: {exc.code}"))
        return

    async def one(origin: str) -> None:
        context = by_origin.get(origin)
        if context is None:
            failed[origin] = "IndexedDB could not be read: its frame did not load"
            return
        try:
            found = await browser.evaluate_json(READ_DATABASES, context=context, await_promise=True)
        except BidiTimeout:
            failed[origin] = "IndexedDB could not be read: timed out"
        except BidiError as exc:
            failed[origin] = f"IndexedDB could not be read: {exc.code}"
        else:
            read[origin] = list(found)

    await asyncio.gather(*(one(o) for o in members))
