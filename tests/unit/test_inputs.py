"""The input gate's state machine (``sitekeep.browser.inputs``; SPEC §7, issue #24 item 3)
without a browser: what it refuses in a session where a secret was typed, what it follows
as held between commands, and what it sends — a fake BiDi connection records it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from sitekeep.browser import inputs, page
from sitekeep.browser.inputs import Held, InputGate
from sitekeep.browser.live import LiveBrowser
from sitekeep.errors import BidiError, ClipboardNotAllowed

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parents[2] / "src" / "sitekeep"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def keys(keys: str) -> dict[str, Any]:
    return inputs.combos(page.parse_keys(keys), "keyboard")


def key(action: str, value: str, source: str = "live-keys") -> dict[str, Any]:
    return {"type": "key", "id": source, "actions": [{"type": action, "value": value}]}


def mouse(*actions: dict[str, Any], source: str = "live-mouse") -> dict[str, Any]:
    return {"type": "pointer", "id": source, "actions": list(actions)}


def move(x: float, y: float) -> dict[str, Any]:
    return {"type": "pointerMove", "x": x, "y": y, "origin": "viewport"}


def down(button: int = 0) -> dict[str, Any]:
    return {"type": "pointerDown", "button": button}


def up(button: int = 0) -> dict[str, Any]:
    return {"type": "pointerUp", "button": button}


def refused(
    *commands: dict[str, Any], held: Held | None = None, sticky: bool = False
) -> str | None:
    """The ``what`` of the first refused command, sent one by one from ``held``."""
    state = held or Held()
    for command in commands:
        gate = InputGate()
        gate.held = state
        try:
            state = gate.admit([command], secret_typed=True, field="f", sticky=sticky)
        except ClipboardNotAllowed as exc:
            return exc.message.split(" ")[0]
    return None


@pytest.mark.parametrize(
    ("pressed", "chord"),
    [("Control+C", "'Control+C'"), ("Meta+x", "'Meta+X'"), ("Shift+Delete", "'Shift+Delete'"),
     ("Tab Control+Shift+V", "'Control+Shift+V'"), ("Control+A Control+C", "'Control+C'"),
     ("Shift+\ue05c", "'Shift+Insert'"), ("Control+\ue016", "'Control+Insert'"),
     ("\ue051+v", "'Control+V'"), ("\ue053+c", "'Meta+C'"), ("\ue050+\ue05d", "'Shift+Delete'"),
     ("Shift+F10", "'Shift+F10'"), ("\ue050+\ue03a", "'Shift+F10'"),
     ("Control+A", None), ("C V x", None), ("Shift+Tab", None), ("Alt+c", None),
     ("Shift+A", None), ("\ue016", None), ("F10", None), ("Control+F10", None)],
)  # fmt: skip
def test_a_chord_in_one_command_is_refused_by_what_it_presses(
    pressed: str, chord: str | None
) -> None:
    assert refused(keys(pressed)) == chord


@pytest.mark.parametrize("modifier", ["\ue009", "\ue051", "\ue03d", "\ue053"])
@pytest.mark.parametrize("pressed", ["c", "C", "x", "v", "\ue016", "\ue05c"])
def test_a_control_or_meta_held_in_one_message_makes_the_next_key_a_chord(
    modifier: str, pressed: str
) -> None:
    assert refused(key("keyDown", modifier), keys(pressed)) is not None
    assert refused(key("keyDown", modifier), key("keyUp", modifier), keys(pressed)) is None


@pytest.mark.parametrize("modifier", ["\ue008", "\ue050"])
@pytest.mark.parametrize("pressed", ["\ue017", "\ue05d", "\ue016", "\ue05c", "\ue03a"])
def test_a_shift_held_makes_delete_insert_and_f10_refused(modifier: str, pressed: str) -> None:
    assert refused(key("keyDown", modifier), key("keyDown", pressed)) is not None
    assert refused(key("keyDown", modifier), keys("A b C")) is None  # Shift+letters type


def test_a_modifier_held_by_one_source_joins_another_sources_keys() -> None:
    assert refused(key("keyDown", "\ue009"), keys("c")) is not None  # an agent's "keyboard"


def test_text_holds_a_key_code_point_to_its_end_only_when_sticky() -> None:
    for text in ("\ue009c", "a\ue03dbv", "\ue008\ue017", "\ue050x\ue016"):
        assert refused(inputs.presses(text, "keyboard"), sticky=True) is not None, text
        assert refused(inputs.presses(text, "keyboard")) is None  # each key goes up
    assert refused(inputs.presses("Hello, World! cxv\n", "keyboard"), sticky=True) is None


@pytest.mark.parametrize(("button", "what"), [(1, "the"), (2, "the"), (0, None), (3, None)])
def test_the_middle_and_secondary_buttons_are_refused(button: int, what: str | None) -> None:
    assert refused(mouse(move(5, 5), down(button), up(button))) == what


def test_a_held_button_moved_past_the_slop_is_a_drag() -> None:
    slop = inputs.DRAG_SLOP
    assert refused(mouse(move(10, 10), down()), mouse(move(10 + slop, 10 - slop), up())) is None
    assert refused(mouse(move(10, 10), down()), mouse(move(11 + slop, 10))) == "moving"
    assert refused(mouse(move(10, 10), down(), move(10, 40), up())) == "moving"  # one command
    element = {"type": "pointerMove", "x": 0, "y": 0, "origin": {"type": "element"}}
    assert refused(mouse(move(10, 10), down()), mouse(element)) == "moving"  # unknown: a drag
    scroll = {"type": "wheel", "id": "w", "actions": [{"type": "scroll", "x": 1, "y": 1}]}
    assert refused(mouse(move(10, 10), down()), scroll) == "moving"
    assert refused(mouse(move(10, 10), down(), up()), mouse(move(300, 300)), scroll) is None
    # another pointer source moving while one holds its button: the page sees one mouse
    assert refused(mouse(move(10, 10), down()), mouse(move(90, 90), source="mouse")) == "moving"


def test_without_a_typed_secret_nothing_is_refused_but_what_is_held_is_followed() -> None:
    gate = InputGate()
    gate.held = Held()
    for command in (key("keyDown", "\ue009"), mouse(move(1, 1), down(1))):
        gate.held = gate.admit([command], secret_typed=False, field="f")
    assert gate.held.keys == {"live-keys": {"Control"}} and gate.held.buttons["live-mouse"] == {1}
    assert gate.held.pressed()
    gate.held = gate.admit([key("keyUp", "\ue009"), mouse(up(1))], secret_typed=False, field="f")
    assert not gate.held.pressed()


def test_the_refusal_names_the_field_and_what_the_input_does() -> None:
    with pytest.raises(ClipboardNotAllowed) as error:
        InputGate().admit([mouse(down(1))], secret_typed=True, field="button")
    assert error.value.field == "button" and error.value.type_name == "clipboard_not_allowed"
    assert error.value.message.startswith("the middle button pastes what is selected")


@dataclass
class FakeConn:
    """Records each command; fails ``fail`` with a BiDi error."""

    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail: str = ""

    async def send(self, method: str, params: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.sent.append((method, params))
        if method == self.fail:
            raise BidiError("unknown error", method)
        return {}

    def methods(self) -> list[str]:
        return [m.removeprefix("input.") for m, _ in self.sent]


@dataclass
class FakeBrowser:
    conn: FakeConn = field(default_factory=FakeConn)
    context: str = "ctx"
    input: InputGate = field(default_factory=InputGate)


async def perform(
    browser: FakeBrowser, sources: Sequence[dict[str, Any]], secret_typed: bool = True, **kw: Any
) -> None:
    await inputs.perform(
        cast(LiveBrowser, browser), sources, secret_typed=secret_typed, field="f", **kw
    )


async def test_what_is_held_is_unknown_until_released_and_released_before_secret_input() -> None:
    browser = FakeBrowser()
    await perform(browser, [key("keyDown", "\ue009")], secret_typed=False)
    assert browser.input.held is None  # nothing released yet: unknown, followed or not
    await perform(browser, [key("keyDown", "a")])
    assert browser.conn.methods() == ["performActions", "releaseActions", "performActions"]
    assert browser.input.held == Held(keys={"live-keys": {"a"}})


async def test_a_refusal_sends_none_of_it_and_lets_go_of_what_was_held() -> None:
    browser = FakeBrowser()
    browser.input.held = Held()
    await perform(browser, [key("keyDown", "\ue009")])
    with pytest.raises(ClipboardNotAllowed):
        await perform(browser, [keys("Shift+c")])
    assert browser.conn.methods() == ["performActions", "releaseActions"]
    assert browser.input.held == Held()
    with pytest.raises(ClipboardNotAllowed):  # nothing held: nothing to let go
        await perform(browser, [mouse(down(2))])
    assert browser.conn.methods() == ["performActions", "releaseActions"]


async def test_an_agents_call_stands_alone_once_a_secret_was_typed() -> None:
    browser = FakeBrowser()
    browser.input.held = Held(keys={"live-keys": {"Control"}})
    await perform(browser, [keys("c")], alone=True)  # the person's Control let go first
    assert browser.conn.methods() == ["releaseActions", "performActions"]
    await perform(browser, [keys("c")], secret_typed=False, alone=True)
    assert browser.conn.methods()[-1] == "performActions"  # no secret: nothing released


async def test_a_failed_command_leaves_the_state_unknown_and_a_release_makes_it_known() -> None:
    browser = FakeBrowser(FakeConn(fail="input.performActions"))
    browser.input.held = Held()
    with pytest.raises(BidiError):
        await perform(browser, [keys("a")])
    assert browser.input.held is None
    browser.conn.fail = "input.releaseActions"
    with pytest.raises(BidiError):
        await inputs.release(cast(LiveBrowser, browser))
    assert browser.input.held is None
    browser.conn.fail = ""
    await inputs.release(cast(LiveBrowser, browser))
    assert browser.input.held == Held() and browser.input.releases == 2


def test_no_module_but_the_gate_sends_input_to_a_browser() -> None:
    """Input commands are built only by the wire (``browser.wire.input``) and sent only by
    the gate; no module spells their names (``test_wire``)."""
    sends = re.compile(
        r"input_(perform|release)_actions\(|\.send\(\s*(wire\.)?INPUT_|Command\(\s*INPUT_"
    )
    senders = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if sends.search(path.read_text(encoding="utf-8"))
    }
    assert senders == {"browser/inputs.py", "browser/wire/input.py"}
