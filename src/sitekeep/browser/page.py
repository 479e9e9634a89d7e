"""Page tools over WebDriver BiDi (SPEC §5): snapshot, click, press, select, read,
screenshot, wait (typing is :mod:`sitekeep.browser.keys`).

Elements are found by a snapshot's short refs (``e1``…, each a BiDi ``sharedId``, valid
while its document lives) or by a CSS selector (``browsingContext.locateNodes``). Pointer
and keyboard input goes through ``input.performActions``, so pages see trusted events, and
through the input gate first (:mod:`sitekeep.browser.inputs`).
After an action that may navigate, :func:`settle` waits for a navigation it started to
load. Nothing here logs what is typed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sitekeep.browser import inputs, wire
from sitekeep.browser.live import LiveBrowser
from sitekeep.errors import (
    QUOTED_MAX,
    BidiError,
    BrowserUnavailable,
    InvalidInput,
    NotFound,
    quoted,
)

__all__ = [
    "KEYS",
    "Element",
    "NavigationWatch",
    "click",
    "press",
    "read",
    "screenshot",
    "select",
    "snapshot",
    "text_present",
    "wait_for",
]

MAX_ELEMENTS = 400
"""A snapshot lists at most this many elements (the rest are counted, not listed)."""

SETTLE_GRACE = 0.1
"""Seconds an action waits for a navigation it may have started (a click on a link, a
form submit) before it counts as staying on the page."""

KEYS: dict[str, str] = {
    "Enter": "\ue007",
    "Tab": "\ue004",
    "Escape": "\ue00c",
    "Backspace": "\ue003",
    "Delete": "\ue017",
    "Space": " ",
    "ArrowLeft": "\ue012",
    "ArrowUp": "\ue013",
    "ArrowRight": "\ue014",
    "ArrowDown": "\ue015",
    "Home": "\ue011",
    "End": "\ue010",
    "PageUp": "\ue00e",
    "PageDown": "\ue00f",
    "Shift": "\ue008",
    "Control": "\ue009",
    "Alt": "\ue00a",
    "Meta": "\ue03d",
    **{f"F{n}": chr(0xE031 + n - 1) for n in range(1, 13)},
}
"""Key names → WebDriver key values (W3C WebDriver §17.4.2 Keyboard actions)."""

_SNAPSHOT = """() => {
  const want = 'a[href],button,input:not([type=hidden]),select,textarea,summary,' +
    '[role=button],[role=link],[role=checkbox],[role=radio],[role=tab],[role=menuitem],' +
    '[role=option],[role=switch],[role=textbox],[role=combobox],[role=searchbox],' +
    '[contenteditable=""],[contenteditable=true],' +
    'h1,h2,h3,h4,h5,h6,[role=heading]';
  const shown = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return false;
    const s = getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none';
  };
  const implicit = (el) => {
    const t = el.tagName.toLowerCase();
    if (/^h[1-6]$/.test(t)) return 'heading';
    if (t === 'a') return 'link';
    if (t === 'button' || t === 'summary') return 'button';
    if (t === 'select') return el.multiple ? 'listbox' : 'combobox';
    if (t === 'textarea') return 'textbox';
    if (t === 'input') {
      const k = (el.type || 'text').toLowerCase();
      return {checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button',
              reset: 'button', image: 'button', range: 'slider', search: 'searchbox',
              email: 'textbox', tel: 'textbox', url: 'textbox', text: 'textbox',
              password: 'textbox', number: 'spinbutton'}[k] || 'textbox';
    }
    return el.isContentEditable ? 'textbox' : 'generic';
  };
  const text = (el) => (el.innerText || el.textContent || '').replace(/\\s+/g, ' ').trim();
  const name = (el) => {
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = by.split(/\\s+/).map((id) => document.getElementById(id))
        .filter(Boolean).map(text).join(' ');
      if (t) return t;
    }
    const a = el.getAttribute('aria-label');
    if (a) return a.trim();
    if (el.labels && el.labels.length) return [...el.labels].map(text).join(' ');
    const t = el.tagName.toLowerCase();
    if (t === 'input' && ['submit', 'button', 'reset'].includes((el.type || '').toLowerCase()))
      return el.value || '';
    if (t === 'input' && el.type === 'image') return el.alt || '';
    const inner = (t === 'input' || t === 'select' || t === 'textarea') ? '' : text(el);
    return inner || el.getAttribute('placeholder') || el.getAttribute('title') ||
      el.getAttribute('alt') || '';
  };
  const all = [...document.querySelectorAll(want)].filter(shown);
  const picked = all.slice(0, $MAX);
  const info = picked.map((el) => {
    const role = el.getAttribute('role') || implicit(el);
    const o = {role, name: name(el).slice(0, 120)};
    const t = el.tagName.toLowerCase();
    if (role === 'heading') o.level = +(el.getAttribute('aria-level') || t.slice(1)) || 2;
    if (t === 'input' && ['checkbox', 'radio'].includes(el.type)) o.checked = el.checked;
    else if (el.hasAttribute('aria-checked'))
      o.checked = el.getAttribute('aria-checked') === 'true';
    if (t === 'input' && el.type === 'password') o.value = el.value ? '•••' : '';
    else if (t === 'input' || t === 'textarea') o.value = (el.value || '').slice(0, 120);
    if (t === 'select') o.value = [...el.selectedOptions].map((x) => x.label).join(', ');
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') o.disabled = true;
    if (el.getAttribute('aria-expanded')) o.expanded = el.getAttribute('aria-expanded') === 'true';
    return o;
  });
  return [JSON.stringify({info, total: all.length}), ...picked];
}""".replace("$MAX", str(MAX_ELEMENTS))
"""Interactive elements and headings, visible ones, in document order, with role,
accessible name (a simplification of W3C Accessible Name Computation 1.2) and state.
Password values are never read back."""


@dataclass(frozen=True, slots=True)
class Element:
    """One snapshot entry (no ``sharedId``: that stays with sitekeep)."""

    role: str
    name: str
    state: dict[str, Any]


async def snapshot(browser: LiveBrowser) -> tuple[list[Element], list[str], int]:
    """The main tab's interactive elements and headings.

    Returns:
        (elements, their BiDi ``sharedId``s in the same order, total found before the
        ``MAX_ELEMENTS`` limit).
    """
    command = wire.script_call_function(
        _SNAPSHOT,
        wire.context_target(browser.context),
        await_promise=False,
        serialization_options={"maxDomDepth": 0, "maxObjectDepth": 1},
    )
    result = await wire.call(browser.conn, command)
    _raise_on_exception(result, "snapshot")
    items = result["result"]["value"]
    head = json.loads(items[0]["value"])
    ids = [str(item.get("sharedId")) for item in items[1:]]
    elements = []
    for raw in head["info"]:
        state = {k: v for k, v in raw.items() if k not in ("role", "name")}
        elements.append(Element(str(raw["role"]), str(raw["name"]), state))
    return elements, ids, int(head["total"])


def _raise_on_exception(result: wire.EvaluateResult, what: str) -> None:
    if result.get("type") == "exception":
        details = result.get("exceptionDetails") or {}
        kind = (details.get("exception") or {}).get("className") or "Error"
        raise BidiError("javascript error", f"{what}: {kind}")


async def locate(browser: LiveBrowser, selector: str) -> str:
    """The ``sharedId`` of the first element matching a CSS selector
    (``browsingContext.locateNodes``).

    Raises:
        InvalidInput: the selector is not valid CSS (field ``selector``).
        NotFound: no element matches (field ``selector``).
    """
    try:
        locator = wire.css_locator(selector)
        result = await wire.call(
            browser.conn,
            wire.browsing_context_locate_nodes(browser.context, locator, max_node_count=1),
        )
    except BidiError as exc:
        if exc.code == "invalid selector":
            raise InvalidInput("not a valid CSS selector", field="selector") from exc
        raise
    nodes = result.get("nodes") or []
    if not nodes:
        raise _no_match(selector)
    return str(nodes[0]["sharedId"])


def _no_match(selector: str) -> NotFound:
    return NotFound(
        "element",
        selector,
        field="selector",
        message=f"no element matches the selector {quoted(selector)}",
    )


async def call_on(browser: LiveBrowser, shared_id: str, function: str, *args: str) -> Any:
    """Call ``function(element, *args)`` (returning JSON text) on an element.

    Raises:
        BidiError: with code ``no such node`` when the element's document is gone.
    """
    arguments = [wire.shared_reference(shared_id), *(wire.local_value(a) for a in args)]
    guarded = (
        "(el, ...rest) => (!el.isConnected || el.ownerDocument !== document)"
        f" ? JSON.stringify({{__stale: true}}) : ({function})(el, ...rest)"
    )
    command = wire.script_call_function(
        guarded, wire.context_target(browser.context), arguments=arguments, await_promise=False
    )
    result = await wire.call(browser.conn, command)
    _raise_on_exception(result, "element script")
    value = json.loads(result["result"]["value"])
    if isinstance(value, dict) and value.get("__stale"):
        # Firefox hands back a node of a document kept for back/forward; Chromium says
        # "no such node" itself. Both mean the same: the page moved on.
        raise BidiError("no such node", command.method, "the element's document is gone")
    return value


_PREPARE = """(el) => {
  el.scrollIntoView({block: 'center', inline: 'center'});
  return JSON.stringify({disabled: !!el.disabled, connected: el.isConnected});
}"""

_SELECT = """(el, wanted) => {
  if (el.tagName !== 'SELECT') return JSON.stringify({error: 'not a select element'});
  const options = [...el.options];
  const hit = options.find((o) => o.value === wanted) ||
    options.find((o) => o.label.trim() === wanted || o.text.trim() === wanted);
  if (!hit) return JSON.stringify({error: 'no such option',
    options: options.map((o) => o.label.trim()).slice(0, 50)});
  el.value = hit.value;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return JSON.stringify({selected: [hit.label.trim()]});
}"""


def _cut(text: str) -> str:
    """``text`` cut to :data:`QUOTED_MAX` characters (``…`` marks a cut)."""
    return text if len(text) <= QUOTED_MAX else text[:QUOTED_MAX] + "…"


async def click(
    browser: LiveBrowser, shared_id: str, field: str = "ref", *, secret_typed: bool = False
) -> None:
    """Scroll the element into view and click its centre with the mouse (an agent's input:
    ``browser.inputs``, alone).

    Raises:
        InvalidInput: the element is disabled (``field``: the argument that named it).
    """
    state = await call_on(browser, shared_id, _PREPARE)
    if state.get("disabled"):
        raise InvalidInput("the element is disabled", field=field)
    origin = {"type": "element", "element": {"sharedId": shared_id}}
    mouse = {
        "type": "pointer",
        "id": "mouse",
        "parameters": {"pointerType": "mouse"},
        "actions": [
            {"type": "pointerMove", "x": 0, "y": 0, "origin": origin},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0},
        ],
    }
    await inputs.perform(browser, [mouse], secret_typed=secret_typed, field=field, alone=True)


def parse_keys(keys: str) -> list[list[str]]:
    """``"Control+A Enter"`` → ``[["\\ue009", "a"], ["\\ue007"]]``: combos separated by
    spaces, keys of a combo by ``+``; a single character stands for itself.

    Raises:
        InvalidInput: an unknown key name (field ``keys``).
    """
    combos: list[list[str]] = []
    for combo in keys.split():
        parts: list[str] = []
        for part in combo.split("+") if combo != "+" else ["+"]:
            if part in KEYS:
                parts.append(KEYS[part])
            elif len(part) == 1:
                parts.append(part.lower() if len(combo) > 1 else part)
            else:
                known = ", ".join(sorted(KEYS))
                raise InvalidInput(f"unknown key {quoted(part)}; known: {known}", field="keys")
        combos.append(parts)
    if not combos:
        raise InvalidInput("no keys to press", field="keys")
    return combos


async def press(browser: LiveBrowser, keys: str, *, secret_typed: bool = False) -> None:
    """Press key combinations on the focused element (see :func:`parse_keys`), an agent's
    input (``browser.inputs``, alone).

    Raises:
        InvalidInput: an unknown key (field ``keys``).
        ClipboardNotAllowed: (``secret_typed``) a clipboard or context-menu chord; nothing
            was pressed.
    """
    source = inputs.combos(parse_keys(keys), "keyboard")
    await inputs.perform(browser, [source], secret_typed=secret_typed, field="keys", alone=True)


async def select(browser: LiveBrowser, shared_id: str, value: str, field: str = "ref") -> list[str]:
    """Choose an option of a ``<select>`` by its value or its label.

    Raises:
        InvalidInput: not a select (``field``: the argument that named the element), or
            no such option (field ``value``, naming the labels).
    """
    result = await call_on(browser, shared_id, _SELECT, value)
    if "error" in result:
        # The script runs in the page's realm, so its answer is the page's to choose:
        # sitekeep's own words, and at most 50 labels each cut to QUOTED_MAX characters.
        options = result.get("options")
        if not isinstance(options, list):
            raise InvalidInput("not a select element", field=field)
        labels = ", ".join(_cut(str(label)) for label in options[:50])
        detail = f"; options: {labels}" if labels else ""
        raise InvalidInput(f"no such option{detail}", field="value")
    return [str(v) for v in result["selected"]]


_READ = """(sel, max) => {
  const el = sel ? document.querySelector(sel) : document.body;
  if (!el) return JSON.stringify(null);
  const t = (el.innerText || el.textContent || '');
  return JSON.stringify({text: t.slice(0, +max), length: t.length});
}"""


async def read(browser: LiveBrowser, selector: str | None, max_chars: int) -> tuple[str, int]:
    """Visible text of the page (or of the first element matching ``selector``).

    Returns:
        (text, up to ``max_chars`` characters; the full length).

    Raises:
        InvalidInput: an invalid selector. NotFound: no element matches (field
            ``selector``), or the page has no body.
    """
    try:
        found = await browser.evaluate_json(_READ, selector or "", str(max_chars))
    except BidiError as exc:
        if selector and exc.code == "javascript error":
            raise InvalidInput("not a valid CSS selector", field="selector") from exc
        raise
    if found is None:
        if selector:
            raise _no_match(selector)
        raise NotFound("element", "body", message="the page has no body to read")
    text = str(found["text"])  # the page's realm answers: max_chars is kept here too
    return text[:max_chars], max(int(found["length"]), len(text))


async def screenshot(browser: LiveBrowser) -> bytes:
    """The main tab's viewport as PNG bytes (``browsingContext.captureScreenshot``)."""
    result = await wire.call(
        browser.conn, wire.browsing_context_capture_screenshot(browser.context)
    )
    return base64.b64decode(result["data"])


_PRESENT = """(text, sel) => JSON.stringify(
  sel ? !!document.querySelector(sel)
      : ((document.body && document.body.innerText) || '').includes(text))"""


async def text_present(browser: LiveBrowser, text: str | None, selector: str | None) -> bool:
    """Whether the page shows ``text`` (visible text) or has an element for ``selector``."""
    try:
        return bool(await browser.evaluate_json(_PRESENT, text or "", selector or ""))
    except BidiError as exc:
        if selector and exc.code == "javascript error":
            raise InvalidInput("not a valid CSS selector", field="selector") from exc
        raise


async def wait_for(
    browser: LiveBrowser, text: str | None, selector: str | None, timeout: float
) -> bool:
    """Poll until the text or selector appears, across navigations, for ``timeout`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        with contextlib.suppress(BidiError):
            if await text_present(browser, text, selector):
                return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))


@dataclass
class NavigationWatch:
    """Navigation events of the main tab while an action runs."""

    context: str
    started: asyncio.Event = field(default_factory=asyncio.Event)
    loaded: asyncio.Event = field(default_factory=asyncio.Event)

    def on_started(self, params: wire.NavigationInfo) -> None:
        if params.get("context") == self.context:
            self.loaded.clear()
            self.started.set()

    def on_load(self, params: wire.NavigationInfo) -> None:
        if params.get("context") == self.context and self.started.is_set():
            self.loaded.set()


@contextlib.asynccontextmanager
async def watching(browser: LiveBrowser) -> AsyncIterator[NavigationWatch]:
    """Watch the main tab's ``navigationStarted``/``load`` while the block runs."""
    watch = NavigationWatch(browser.context)
    conn = browser.conn
    started, loaded = wire.BROWSING_CONTEXT_NAVIGATION_STARTED, wire.BROWSING_CONTEXT_LOAD
    removers = [
        conn.add_listener(started, watch.on_started),
        conn.add_listener(loaded, watch.on_load),
    ]
    try:
        subscription = await conn.subscribe([started, loaded], [browser.context])
    except BaseException:
        for remove in removers:
            remove()
        raise
    try:
        yield watch
    finally:
        for remove in removers:
            remove()
        with contextlib.suppress(BidiError, BrowserUnavailable):
            await conn.unsubscribe(subscription)


async def settle(browser: LiveBrowser, action: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``action``; if it starts a navigation within ``SETTLE_GRACE`` seconds, wait
    (up to the navigation timeout) for the new page to load."""
    async with watching(browser) as watch:
        result = await action()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_GRACE):
                await watch.started.wait()
        if watch.started.is_set():
            await browser.conn.wait_event(
                watch.loaded.wait(),
                timeout=browser.navigation_timeout,
                what=wire.BROWSING_CONTEXT_LOAD,
            )
    return result
