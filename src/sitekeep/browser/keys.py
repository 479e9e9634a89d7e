"""Typing text into one element: only there, only while its document stays, fast (SPEC §5
``type``, §7, §12; issue #8 items 1, 2 and 4).

**Delivery.** Text goes in chunks of :data:`CHUNK_CHARS`, one ``script.callFunction`` per
chunk in sitekeep's own sandbox realm (W3C WebDriver BiDi §script, ``sandbox``: the page
cannot see or change that realm's globals). In one JavaScript turn — nothing of the page
runs in between, no navigation can commit — the call checks that

* the element is still connected to the document now shown in the tab, the very document
  whose hostname was checked when typing began (a token kept in the sandbox realm's global:
  a new document has a new global, so the token is gone);
* the focus (followed through open shadow roots) is on the element or inside it, and is
  not a frame (keys would reach the frame's document, whatever its host);
* the call is not late: it runs before its caller stops waiting for it, measured on the
  document's own monotonic clock (``performance.now()``), so a chunk queued behind a busy
  page does nothing once the caller has given up on it;

and only then inserts the chunk with ``document.execCommand("insertText")``, as the browser
does for a paste: trusted ``input`` events, undo history, the page's own handlers run. This
is the same delivery as Playwright's ``fill``. Key events (``input.performActions``) cost
2.5–5 ms a key in the browser itself on this machine — 176–211 chars/s on Chromium 156 and
412 on Firefox 153 with one key source; 250–400 with 2–16 key sources in parallel ticks —
so no arrangement of keys reaches the 2,000 chars/s an 8 KiB value needs within its bound
(``bench/type_speed.py`` prints both). Insertion types 8 KiB in well under a second.

**Keys as a fallback.** An element that ``insertText`` does not edit (a widget that reads
keys itself, a frame for plain ``type``) gets key events instead, :data:`CHUNK_KEYS` per
``input.performActions``, each chunk after the same check; at most :data:`MAX_KEY_CHARS`
characters. Secrets are never typed as keys: between a check and its chunk's keys there is
a window (one chunk) in which the page could navigate or move the focus.

**Stop.** A failed check stops typing before the chunk; nothing is sent after it. When a
call returns — success, error, timeout — no chunk of it runs later: the one in flight has
answered, or it is past its deadline and will refuse to insert. A key chunk that gets no
answer in time is followed by ``input.releaseActions`` and waited for :data:`RELEASE_GRACE`
more (a chunk is short: 32 keys end well within it); only a browser that answers nothing
at all is left behind. Measured: one 600-key command stalled by a page delivered 72 keys to
the next page after its call returned; chunks of 32 delivered none.

**Known limits.** A page's own script may copy what was typed anywhere it likes; an allowed
host is trusted with the value. Closed shadow roots cannot be looked into: a focus inside
one counts as outside the element.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from sitekeep.browser import inputs, wire
from sitekeep.browser.live import LiveBrowser
from sitekeep.errors import (
    BidiError,
    BidiTimeout,
    BrowserUnavailable,
    Conflict,
    InvalidInput,
    SecretNotAllowed,
    SitekeepError,
)
from sitekeep.secrets import MAX_VALUE_CHARS

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_KEYS",
    "ENTER",
    "MAX_KEY_CHARS",
    "MAX_TEXT_CHARS",
    "MIN_KEY_RATE",
    "RELEASE_GRACE",
    "TYPE_BUDGET",
    "Guard",
    "type_text",
]

CHUNK_CHARS = 1024
"""Characters inserted per script call (about 1–3 ms each on this machine)."""
CHUNK_KEYS = 32
"""Characters sent as keys per ``input.performActions`` on the fallback path."""
MAX_TEXT_CHARS = MAX_VALUE_CHARS
"""The most a ``type`` text or a secret value holds (``PUT /v1/secrets`` accepts no more):
8,192 characters insert in 9 chunks, well under a second (``bench/type_speed.py``)."""
MAX_KEY_CHARS = 2048
"""The most the key fallback types: at :data:`MIN_KEY_RATE` it ends within the budget."""
MIN_KEY_RATE = 100
"""Characters per second the key fallback keeps on this machine under load (measured
176–412, ``bench/type_speed.py``); :data:`MAX_KEY_CHARS` is sized by it."""
TYPE_BUDGET = 30.0
"""Seconds one type call may take in all; no chunk of it runs after that."""
RELEASE_GRACE = 2.0
"""Seconds a key chunk that got no answer in time is still waited for, after
``input.releaseActions``, before its call gives up."""
ENTER = "\ue007"
"""The WebDriver key value of Enter (W3C WebDriver §17.4.2)."""

_SANDBOX = "sitekeep-typing"

Stop = Literal["gone", "detached", "moved", "host", "focus", "frame", "late", "not editable"]


class _Stopped(Exception):
    """Typing stopped before a chunk: nothing of that chunk or after it was typed.

    Attributes:
        reason: ``gone`` (the element's document went away), ``detached`` (the page took
            the element out of its document), ``moved`` (the tab shows another document),
            ``host`` (the guard refused the hostname), ``focus`` (the focus is not on the
            element), ``frame`` (it is on a frame), ``late`` (past the deadline), ``not
            editable`` (no text field).
        host: the hostname the check saw (of the frame's ``src`` for ``frame``), or "".
        typed: characters typed before the stop.
    """

    def __init__(self, reason: Stop, host: str, typed: int) -> None:
        super().__init__(f"typing stopped: {reason}")
        self.reason = reason
        self.host = host
        self.typed = typed


@dataclass(frozen=True, slots=True)
class Guard:
    """What a secret's typing must hold to (SPEC §7).

    Attributes:
        secret: the secret's name, for the error.
        allowed: whether a document's hostname may receive the value
            (``secrets.host_allowed`` over the secret's patterns).
    """

    secret: str
    allowed: Callable[[str], bool]


_CHUNK = """(el, text, token, host, notAfter, mode) => {
  const out = (o) => JSON.stringify(o);
  const now = performance.now();
  if (mode !== 'probe' && now > +notAfter) return out({stop: 'late'});
  if (el.ownerDocument !== document) return out({stop: 'gone'});
  if (!el.isConnected) return out({stop: 'detached'});
  const here = location.hostname;
  if (mode === 'probe') globalThis.__sitekeepTyping = token;
  else if (globalThis.__sitekeepTyping !== token || here !== host)
    return out({stop: 'moved', host: here});
  const deep = () => {
    let a = document.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    return a;
  };
  const within = (node) => {
    for (let n = node; n; n = n.parentNode || n.host) if (n === el) return true;
    return false;
  };
  const frames = ['iframe', 'frame', 'object', 'embed', 'fencedframe', 'portal'];
  if (mode === 'probe') el.scrollIntoView({block: 'center', inline: 'center'});
  if (!within(deep())) el.focus();
  const active = deep();
  if (!active || !within(active)) return out({stop: 'focus', host: here});
  if (frames.includes(active.localName)) {
    let src = '';
    try { src = new URL(active.src || active.data || '', location.href).hostname; } catch (e) {}
    return out({stop: 'frame', host: src, self: active === el});
  }
  if (mode === 'probe') {
    if (typeof active.select === 'function') active.select();
    else if (active.isContentEditable) {
      const range = document.createRange(); range.selectNodeContents(active);
      const sel = getSelection(); sel.removeAllRanges(); sel.addRange(range);
    }
    const kind = (active.type || '').toLowerCase();
    const field = active.localName === 'textarea' || active.isContentEditable ||
      (active.localName === 'input' && !['checkbox', 'radio', 'button', 'submit', 'reset',
        'image', 'file', 'range', 'color', 'hidden', 'date', 'time', 'datetime-local',
        'month', 'week'].includes(kind));
    return out({host: here, now, field: !!field});
  }
  if (mode === 'check') return out({ok: true});
  const done = text ? document.execCommand('insertText', false, text)
                    : document.execCommand('delete', false);
  return out({ok: !!done});
}"""
"""One chunk: the checks of the module docstring, then (``insert``) the chunk's text.
``probe`` starts typing: it marks the document, selects what the field holds (the text
replaces it) and reports the hostname and whether the element is a text field."""


@dataclass
class _Typing:
    """One type call's state. ``doc_base`` (ms, the document's ``performance.now()``) was
    read by the probe, which answered by ``loop_base`` (s, the event loop's clock): a call
    sent at loop time ``t`` with timeout ``T`` must not run after doc time
    ``doc_base + (t + T - loop_base) * 1000`` — at or before ``t + T``, never after."""

    browser: LiveBrowser
    shared_id: str
    token: str
    host: str
    deadline: float  # on the event loop's clock, s
    doc_base: float = 0.0
    loop_base: float = 0.0
    typed: int = 0
    secret_typed: bool = False  # in the session before this call: the input gate's rules

    async def call(self, mode: str, text: str = "") -> dict[str, Any]:
        now = asyncio.get_running_loop().time()
        timeout = min(self.deadline - now, self.browser.conn.timeout)
        if timeout <= 0:
            raise _Stopped("late", self.host, self.typed)
        not_after = self.doc_base + (now + timeout - self.loop_base) * 1000
        try:
            result = await _call(self, mode, text, timeout, not_after)
        except BidiError as exc:
            if exc.code not in ("no such node", "unknown error"):
                raise
            if mode == "probe" and exc.code == "no such node":
                raise  # the ref or selector found a node of a document already gone
            # Chromium: the element's document was replaced, or is being replaced (no
            # realm to run in for a moment). Either way: stop.
            raise _Stopped("gone", "", self.typed) from None
        if "stop" in result:
            raise _Stopped(result["stop"], str(result.get("host", "")), self.typed)
        return result


async def _call(
    typing: _Typing, mode: str, text: str, timeout: float, not_after: float
) -> dict[str, Any]:
    args = [text, typing.token, typing.host, repr(not_after), mode]
    command = wire.script_call_function(
        _CHUNK,
        wire.context_target(typing.browser.context, sandbox=_SANDBOX),
        arguments=[wire.shared_reference(typing.shared_id), *map(wire.local_value, args)],
        await_promise=False,
    )
    result = await wire.call(typing.browser.conn, command, timeout=timeout)
    if result.get("type") == "exception":
        raise BidiError("javascript error", command.method, "typing check")
    value: dict[str, Any] = json.loads(result["result"]["value"])
    return value


async def type_text(
    browser: LiveBrowser,
    shared_id: str,
    text: str,
    *,
    submit: bool = False,
    guard: Guard | None = None,
    field: str = "ref",
    secret_typed: bool = False,
) -> None:
    """Replace what the element holds with ``text``; ``submit`` presses Enter after.

    Args:
        shared_id: the element (BiDi ``sharedId``) in the main tab's document.
        text: at most :data:`MAX_TEXT_CHARS` characters; ``\\n`` is a line break. Never
            logged, never in an error.
        guard: for a secret: the hostname of the element's document must be allowed before
            the first chunk, every chunk checks it is still that document, the element must
            be a text field (no key fallback) and the focus never on a frame.
        field: the argument naming the element (``ref`` or ``selector``), for errors.
        secret_typed: whether a secret was typed in the session before: key events then
            go through the input gate's rules (``browser.inputs``; the caller judged the
            whole text first).

    Raises:
        SecretNotAllowed: (``guard``) the document's host is not allowed, the element is or
            focuses a frame, or the tab moved to another document while typing; nothing
            reached another document.
        InvalidInput: text too long (field ``text``); the element takes no focus, or (with
            ``guard``) is no text field (field ``field``); nothing was typed.
        Conflict: the page moved the focus away or replaced the element while typing; what
            was typed stayed in the element's own document.
        BidiError: ``no such node`` when the element's document is gone at the start.
        BidiTimeout / BrowserUnavailable: the browser did not answer within the bound;
            nothing more of the text is typed after this returns.
    """
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidInput(f"text holds at most {MAX_TEXT_CHARS} characters", field="text")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TYPE_BUDGET
    token = secrets.token_hex(16)
    typing = _Typing(browser, shared_id, token, "", deadline, secret_typed=secret_typed)
    try:
        await _type(typing, text, submit, guard)
    except _Stopped as stop:
        raise _error(stop, guard, field) from None


async def _type(typing: _Typing, text: str, submit: bool, guard: Guard | None) -> None:
    loop = asyncio.get_running_loop()
    try:
        probe = await typing.call("probe")
    except _Stopped as stop:
        if stop.reason == "frame" and guard is None:
            return await _keys_into_frame(typing, text, submit)
        raise
    typing.host = str(probe["host"])
    typing.doc_base, typing.loop_base = float(probe["now"]), loop.time()
    if guard is not None and not guard.allowed(typing.host):
        raise _Stopped("host", typing.host, 0)
    if probe["field"]:
        await _insert(typing, text)
    elif guard is not None:
        raise _Stopped("not editable", typing.host, 0)
    else:
        await _keys(typing, text)
    if submit:
        await typing.call("check")
        await _press(typing, [ENTER])


def _error(stop: _Stopped, guard: Guard | None, field: str) -> SitekeepError:
    """The caller's error for a stop; never the text, nor (for a secret) how much was typed."""
    if stop.reason == "late":
        return BidiTimeout("typing", TYPE_BUDGET)
    if guard is not None and stop.reason in ("host", "frame", "moved", "gone"):
        where = stop.host or ("a frame" if stop.reason == "frame" else "another page")
        return SecretNotAllowed(guard.secret, where, field="secret")
    if stop.typed == 0 and stop.reason == "focus":
        return InvalidInput("the element does not take the keyboard focus", field=field)
    if stop.typed == 0 and stop.reason == "not editable":
        return InvalidInput("a secret is typed only into a text field", field=field)
    if stop.reason in ("gone", "detached", "moved") and stop.typed == 0:
        return BidiError(
            "no such node", wire.SCRIPT_CALL_FUNCTION, "the element's document is gone"
        )
    return Conflict(
        "typing stopped: the page moved the focus or replaced the element while typing; "
        "what was typed stayed in the element's own document"
    )


async def _insert(typing: _Typing, text: str) -> None:
    for start in range(0, max(len(text), 1), CHUNK_CHARS):
        chunk = text[start : start + CHUNK_CHARS]
        result = await typing.call("insert", chunk)
        if not result.get("ok"):
            raise _Stopped("not editable", typing.host, typing.typed)
        typing.typed += len(chunk)


async def _keys(typing: _Typing, text: str) -> None:
    if len(text) > MAX_KEY_CHARS:
        raise InvalidInput(
            f"this element takes key events only: at most {MAX_KEY_CHARS} characters",
            field="text",
        )
    keys = [ENTER if ch == "\n" else ch for ch in text] or ["\ue017"]  # Delete: clear
    for start in range(0, len(keys), CHUNK_KEYS):
        await typing.call("check")
        await _press(typing, keys[start : start + CHUNK_KEYS])
        typing.typed += len(keys[start : start + CHUNK_KEYS])


async def _keys_into_frame(typing: _Typing, text: str, submit: bool) -> None:
    """Plain ``type`` on a frame element: keys reach the frame's focused element."""
    keys = [ENTER if ch == "\n" else ch for ch in text]
    if len(keys) > MAX_KEY_CHARS:
        raise InvalidInput(
            f"a frame takes key events only: at most {MAX_KEY_CHARS} characters", field="text"
        )
    for start in range(0, len(keys), CHUNK_KEYS):
        await _press(typing, keys[start : start + CHUNK_KEYS])
    if submit:
        await _press(typing, [ENTER])


async def _press(typing: _Typing, keys: list[str]) -> None:
    """One ``input.performActions`` of keyDown/keyUp pairs, through the input gate (an
    agent's text: alone, modifiers sticky). Without an answer in time:
    ``input.releaseActions``, then wait up to :data:`RELEASE_GRACE` more for the chunk to
    end, so a call returns with its keys delivered or the browser not answering at all.

    Raises:
        BidiTimeout: no answer in time (the keys that reached the page went to the element
            the chunk's check saw focused).
        ClipboardNotAllowed: (a secret was typed) the keys copy, cut or paste.
    """
    browser = typing.browser
    limit = min(typing.deadline - asyncio.get_running_loop().time(), browser.conn.timeout)
    if limit <= 0:
        raise _Stopped("late", typing.host, typing.typed)
    sent = asyncio.ensure_future(
        inputs.perform(
            browser,
            [inputs.presses(keys, "keyboard")],
            secret_typed=typing.secret_typed,
            field="text",
            alone=True,
            sticky=True,
            timeout=limit + RELEASE_GRACE,
        )
    )
    done, _ = await asyncio.wait({sent}, timeout=limit)
    if not done:
        with contextlib.suppress(BidiError, BrowserUnavailable):
            await inputs.release(browser, timeout=RELEASE_GRACE)
        await asyncio.wait({sent}, timeout=RELEASE_GRACE)
        with contextlib.suppress(BidiError, BrowserUnavailable):
            if sent.done():
                sent.result()
        sent.cancel()
        raise BidiTimeout(wire.INPUT_PERFORM_ACTIONS, limit)
    sent.result()
