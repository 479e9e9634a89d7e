"""One gate every input to a browser goes through (SPEC §7; issue #24 item 3).

In a session where a secret was typed, no input may move a typed value through a clipboard
or anything like one — the copy, cut and paste keys, the context menu (its Copy and Paste),
Linux's primary selection (the middle button pastes what is selected) and a drag of the
selection — whichever way it came: an agent's ``press``, ``type`` or ``click`` (over HTTP,
MCP or as a flow's step) or a person's live socket. Every ``input.performActions`` and
``input.releaseActions`` sitekeep sends goes through :func:`perform` and :func:`release`
(a unit test holds every other module to that), which ask the browser's
:class:`InputGate` first.

**What is held.** A browser keeps keys and buttons down between commands (W3C WebDriver
BiDi §7.7 ``input``: an input source's state lives until ``input.releaseActions``), so
Control sent down in one live message and ``c`` in the next is a copy. The gate follows
what every command it let through left held, per input source, and judges a command
against all of it: Firefox gives a key event the modifiers held by every key source (a
person's held Control turns an agent's ``c`` into a copy), Chromium those of the event's
own source only; the union serves both. A command that failed or got no answer leaves the
state unknown; ``input.releaseActions`` makes it known, and empty.

**What is refused** (:func:`judge`), only in a session where a secret was typed:

* a key going down while Control or Meta (either side; Meta is Control's twin on a Mac) is
  held that is ``c``, ``x``, ``v`` or Insert (of either block); one going down while Shift
  is held that is Delete or Insert (cut, paste), or F10 (the context menu);
* in text (``type``, a live ``text``), a WebDriver key code point counts as held for the
  rest of the text, as WebDriver's element send keys takes it (``"\\ue009c"`` is
  Control+C). Each key of a text goes down and up on its own, so neither browser copies
  there (measured), but the rule does not rest on that;
* the middle button going down (both browsers paste the selection with it, on another host
  too: measured) and the secondary one (the context menu: headless Chromium and Firefox
  show none and its keys reach the page, measured, but a browser that shows one offers
  Copy and Paste in it);
* the pointer moving, or the wheel turning, with a button held farther than
  :data:`DRAG_SLOP` pixels from where it went down: a drag (measured: Chromium drops a
  selected value into another field, and into another host's frame; Firefox ends no drag).

**Alone or not.** An agent's call stands alone: in a secret-typed session whatever is held
(a person's key, in this process or another one) is released before it, and the call is
judged by itself. A live socket's message is judged against what is held. A refusal sends
nothing of the refused command and releases what was held — keys go up (no key going up
copies) and a held button goes up where it went down (no drag): the middle and secondary
buttons are never held there, as ``type_secret`` releases everything first — so nothing
left held joins the next input.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Protocol

from sitekeep.browser import wire
from sitekeep.errors import BidiError, ClipboardNotAllowed

__all__ = [
    "DRAG_SLOP",
    "Gated",
    "Held",
    "InputGate",
    "Refusal",
    "chord",
    "combos",
    "judge",
    "key_name",
    "perform",
    "presses",
    "release",
]

DRAG_SLOP = 2
"""CSS pixels a held pointer may move from where its button went down (a person's hand
on a click), below the few pixels a browser waits for before it starts a drag; and a drag
that short drops where it began."""

_NAMES = {
    "\ue008": "Shift", "\ue050": "Shift", "\ue009": "Control", "\ue051": "Control",
    "\ue00a": "Alt", "\ue052": "Alt", "\ue03d": "Meta", "\ue053": "Meta",
    "\ue016": "Insert", "\ue05c": "Insert", "\ue017": "Delete", "\ue05d": "Delete",
    "\ue03a": "F10",
}  # fmt: skip
"""WebDriver key code points (W3C WebDriver §17.4.2, both sides and both blocks) → the
key they press, for the keys the rules name."""
_MODIFIERS = ("Control", "Meta", "Alt", "Shift")
_COPIERS = frozenset({"Control", "Meta"})
_WITH_CONTROL = frozenset({"c", "x", "v", "Insert"})  # copy, cut, paste, copy
_WITH_SHIFT = frozenset({"Delete", "Insert"})  # cut, paste

Point = tuple[float, float]


def key_name(value: str) -> str:
    """The key a WebDriver key value presses, as the rules name it: ``Control``,
    ``Insert``… for the code points they name, else the value in lower case (``C`` and
    ``c`` are one key)."""
    return _NAMES.get(value, value.lower())


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an input is refused: ``what`` it is and what it ``does`` (for the error)."""

    what: str
    does: str


_MIDDLE = Refusal("the middle button", "pastes what is selected (the primary selection)")
_SECONDARY = Refusal("the secondary button", "opens the context menu (copy, cut, paste)")
_DRAG = Refusal("moving with a button held", "drags what is selected into another field or frame")
_BUTTONS = {1: _MIDDLE, 2: _SECONDARY}


def _chord(held: Collection[str], name: str) -> str:
    keys = [m for m in _MODIFIERS if m in held] + [name.upper() if len(name) == 1 else name]
    return repr("+".join(keys))


def chord(held: AbstractSet[str], name: str) -> Refusal | None:
    """Why pressing key ``name`` (:func:`key_name`) while the keys ``held`` are down is
    refused — it copies, cuts, pastes or opens the context menu — or None."""
    copies = bool(held & _COPIERS) and name in _WITH_CONTROL
    if copies or ("Shift" in held and name in _WITH_SHIFT):
        return Refusal(_chord(held, name), "copies, cuts or pastes")
    if "Shift" in held and name == "F10":
        return Refusal(_chord(held, name), "opens the context menu (copy, cut, paste)")
    return None


@dataclass
class Held:
    """What is down in a browser, per input source id (W3C WebDriver BiDi §7.7).

    Attributes:
        keys: key source → keys down (:func:`key_name`).
        buttons: pointer source → buttons down.
        at: pointer source → where it is, viewport CSS px (None: unknown, after a move to
            an element); a source starts at (0, 0).
        anchor: pointer source → where its held buttons went down (None: unknown).
    """

    keys: dict[str, set[str]] = field(default_factory=dict)
    buttons: dict[str, set[int]] = field(default_factory=dict)
    at: dict[str, Point | None] = field(default_factory=dict)
    anchor: dict[str, Point | None] = field(default_factory=dict)

    def copy(self) -> Held:
        """A copy to change."""
        return Held(
            {k: set(v) for k, v in self.keys.items()},
            {k: set(v) for k, v in self.buttons.items()},
            dict(self.at),
            dict(self.anchor),
        )

    def down(self) -> set[str]:
        """Every key down, whichever source holds it."""
        return set().union(*self.keys.values())

    def pressed(self) -> bool:
        """Whether any key or button is down."""
        return any(self.keys.values()) or any(self.buttons.values())

    def dragging(self, to: Point | None) -> bool:
        """Whether moving a pointer to ``to`` drags: a button is held and ``to`` (or where
        it went down) is unknown or farther than :data:`DRAG_SLOP` from where it went down."""
        for source, buttons in self.buttons.items():
            start = self.anchor.get(source)
            if buttons and (to is None or start is None or _farther(to, start)):
                return True
        return False


def _farther(a: Point, b: Point) -> bool:
    return max(abs(a[0] - b[0]), abs(a[1] - b[1])) > DRAG_SLOP


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.what)
        self.refusal = refusal


def judge(
    held: Held, sources: Sequence[Mapping[str, Any]], *, secret_typed: bool, sticky: bool = False
) -> Held:
    """What is held once ``sources`` (an ``input.performActions`` ``actions`` list) ran
    from ``held``, their actions taken tick by tick as the browser takes them.

    Args:
        secret_typed: refuse what the module's docstring lists (else only follow).
        sticky: a modifier that went down stays counted as held to the end (text).

    Raises:
        _Refused: (``secret_typed``) the first action refused; ``held`` is unchanged.
    """
    state = held.copy()
    stuck: set[str] | None = set() if sticky else None
    ticks = max((len(s.get("actions") or ()) for s in sources), default=0)
    for tick in range(ticks):
        for source in sources:
            actions = source.get("actions") or ()
            if tick < len(actions):
                refusal = _step(state, source, actions[tick], stuck)
                if refusal is not None and secret_typed:
                    raise _Refused(refusal)
    return state


def _step(
    state: Held, source: Mapping[str, Any], action: Mapping[str, Any], stuck: set[str] | None
) -> Refusal | None:
    """Apply one action to ``state``; why it is refused, or None."""
    kind, sid = action.get("type"), str(source.get("id"))
    if kind in ("keyDown", "keyUp"):
        return _key(state, sid, kind, key_name(str(action.get("value", ""))), stuck)
    if kind == "pointerMove":
        to = _target(state.at.get(sid, (0.0, 0.0)), action)
        state.at[sid] = to
        return _DRAG if state.dragging(to) else None
    if kind == "pointerDown":
        button = int(action.get("button", 0))
        if not state.buttons.get(sid):
            state.anchor[sid] = state.at.get(sid, (0.0, 0.0))
        state.buttons.setdefault(sid, set()).add(button)
        return _BUTTONS.get(button)
    if kind == "pointerUp":
        state.buttons.get(sid, set()).discard(int(action.get("button", 0)))
    if kind == "scroll":
        return _DRAG if state.dragging(None) else None
    return None  # pause, pointerUp


def _key(state: Held, sid: str, kind: str, name: str, stuck: set[str] | None) -> Refusal | None:
    keys = state.keys.setdefault(sid, set())
    if kind == "keyUp":
        keys.discard(name)
        return None
    refusal = chord(state.down() | (stuck or set()), name)
    keys.add(name)
    if stuck is not None and name in _MODIFIERS:
        stuck.add(name)
    return refusal


def _target(at: Point | None, action: Mapping[str, Any]) -> Point | None:
    """Where a ``pointerMove`` goes: its x, y in the viewport, from the pointer, or None
    (from an element: wherever that is)."""
    origin = action.get("origin", "viewport")
    x, y = float(action.get("x", 0)), float(action.get("y", 0))
    if origin == "viewport":
        return (x, y)
    if origin == "pointer" and at is not None:
        return (at[0] + x, at[1] + y)
    return None


def combos(values: Iterable[Sequence[str]], source: str) -> dict[str, Any]:
    """A key source pressing each combination in turn: its keys down in order, then up in
    reverse (WebDriver key values, as ``page.parse_keys`` gives them)."""
    actions: list[dict[str, Any]] = []
    for combo in values:
        actions += [{"type": "keyDown", "value": k} for k in combo]
        actions += [{"type": "keyUp", "value": k} for k in reversed(combo)]
    return {"type": "key", "id": source, "actions": actions}


def presses(values: Iterable[str], source: str) -> dict[str, Any]:
    """A key source pressing each of ``values`` (WebDriver key values) down and up in
    turn: text, one key at a time."""
    actions: list[dict[str, Any]] = []
    for value in values:
        actions += [{"type": "keyDown", "value": value}, {"type": "keyUp", "value": value}]
    return {"type": "key", "id": source, "actions": actions}


class InputGate:
    """What one browser holds, as far as this process knows (see the module's docstring).

    Attributes:
        held: what is down, or None while unknown (nothing was released yet, a command
            failed or is under way).
        releases: ``input.releaseActions`` sent so far (a command answered after one went
            out cannot say what is held).
    """

    def __init__(self) -> None:
        self.held: Held | None = None
        self.releases = 0

    def admit(
        self,
        sources: Sequence[Mapping[str, Any]],
        *,
        secret_typed: bool,
        field: str,
        alone: bool = False,
        sticky: bool = False,
    ) -> Held:
        """Judge ``sources`` and say what would be held after them, sending nothing.

        Args:
            secret_typed: whether a secret was typed in the session (``Context.secret_typed``).
            field: the argument that held the input, for the error.
            alone: an agent's call: judged by itself (what is held is released first).
            sticky: text: a modifier in it counts as held to its end.

        Raises:
            ClipboardNotAllowed: (``secret_typed``) the input copies, cuts, pastes, opens
                the context menu, pastes the selection or drags (403, ``field``).
        """
        fresh = self.held is None or (alone and secret_typed)
        try:
            return judge(
                Held() if fresh else self.held or Held(),
                sources,
                secret_typed=secret_typed,
                sticky=sticky,
            )
        except _Refused as refused:
            what, does = refused.refusal.what, refused.refusal.does
            raise ClipboardNotAllowed(what, does=does, field=field) from None


class Gated(Protocol):
    """What :func:`perform` and :func:`release` need of a browser (a ``LiveBrowser``):
    its BiDi connection, its main tab and its :class:`InputGate`."""

    @property
    def conn(self) -> wire.Channel: ...

    @property
    def context(self) -> str: ...

    @property
    def input(self) -> InputGate: ...


async def perform(
    browser: Gated,
    sources: Sequence[Mapping[str, Any]],
    *,
    secret_typed: bool,
    field: str,
    alone: bool = False,
    sticky: bool = False,
    timeout: float | None = None,
) -> None:
    """``input.performActions`` of ``sources`` in the main tab, once the gate admits them
    (arguments as :meth:`InputGate.admit`; ``timeout`` as ``BidiConnection.send``).

    Raises:
        ClipboardNotAllowed: refused; nothing of it was sent, and what was held is
            released.
        BidiError, BidiTimeout, BrowserUnavailable: from the browser.
    """
    gate = browser.input
    try:
        after = gate.admit(
            sources, secret_typed=secret_typed, field=field, alone=alone, sticky=sticky
        )
    except ClipboardNotAllowed:
        if gate.held is None or gate.held.pressed():
            with contextlib.suppress(BidiError):  # the refusal stands either way
                await release(browser)
        raise
    if secret_typed and (alone or gate.held is None):
        await release(browser)
    known, releases = gate.held is not None, gate.releases
    gate.held = None  # until the browser answers
    command = wire.input_perform_actions(browser.context, sources)
    await wire.call(browser.conn, command, timeout=timeout)
    if known and releases == gate.releases:
        gate.held = after


async def release(browser: Gated, *, timeout: float | None = None) -> None:
    """``input.releaseActions`` in the main tab: every key and button goes up (W3C WebDriver
    BiDi §7.7.3.2); the gate then knows nothing is held.

    Raises:
        BidiError, BidiTimeout, BrowserUnavailable: from the browser (the state stays
            unknown).
    """
    gate = browser.input
    gate.releases += 1
    gate.held = None
    await wire.call(browser.conn, wire.input_release_actions(browser.context), timeout=timeout)
    gate.held = Held()
