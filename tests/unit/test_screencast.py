"""The live view's messages (SPEC §10): what a client may send, and the BiDi each becomes.

Pure: no browser. ``tests/ui/test_live.py`` drives the same messages through a real one.
"""

from __future__ import annotations

from typing import Any

import pytest

from sitekeep.browser import screencast
from sitekeep.browser.page import KEYS
from sitekeep.errors import InvalidInput


def actions(message: dict[str, Any]) -> dict[str, Any]:
    parsed = screencast.parse(message)
    assert isinstance(
        parsed, screencast.Pointer | screencast.Wheel | screencast.Key | screencast.Text
    )
    return screencast.perform_params(parsed)


def test_a_click_a_drag_and_a_wheel_are_pointer_and_wheel_sources() -> None:
    click = actions({"type": "pointer", "action": "click", "x": 10, "y": 20})
    assert click["type"] == "pointer" and click["parameters"] == {"pointerType": "mouse"}
    assert [a["type"] for a in click["actions"]] == ["pointerMove", "pointerDown", "pointerUp"]
    assert click["actions"][0] == {"type": "pointerMove", "x": 10, "y": 20, "origin": "viewport"}
    # A drag is down, moves, up on one source id: the browser keeps the button pressed.
    drag = [
        actions({"type": "pointer", "action": a, "x": x, "y": 5, "button": 0})
        for a, x in (("down", 1), ("move", 50), ("up", 90))
    ]
    assert {d["id"] for d in drag} == {"live-mouse"}
    assert [[a["type"] for a in d["actions"]] for d in drag] == [
        ["pointerMove", "pointerDown"],
        ["pointerMove"],
        ["pointerMove", "pointerUp"],
    ]
    right = actions({"type": "pointer", "action": "down", "x": 1, "y": 1, "button": 2})
    assert right["actions"][1] == {"type": "pointerDown", "button": 2}
    wheel = actions({"type": "wheel", "x": 3, "y": 4, "dy": 120})
    assert wheel == {
        "type": "wheel",
        "id": "live-wheel",
        "actions": [
            {"type": "scroll", "x": 3, "y": 4, "origin": "viewport", "deltaX": 0, "deltaY": 120}
        ],
    }


def test_keys_with_modifiers_and_text_are_key_sources() -> None:
    select_all = actions({"type": "key", "key": "a", "modifiers": ["Shift", "Control"]})
    values = [(a["type"], a["value"]) for a in select_all["actions"]]
    assert values == [
        ("keyDown", KEYS["Shift"]),
        ("keyDown", KEYS["Control"]),
        ("keyDown", "a"),
        ("keyUp", "a"),
        ("keyUp", KEYS["Control"]),
        ("keyUp", KEYS["Shift"]),
    ]
    down = actions({"type": "key", "key": "Enter", "action": "down"})
    assert down["actions"] == [{"type": "keyDown", "value": KEYS["Enter"]}]
    text = actions({"type": "text", "text": "hé\n"})
    assert [a["value"] for a in text["actions"]] == [
        "h",
        "h",
        "é",
        "é",
        KEYS["Enter"],
        KEYS["Enter"],
    ]


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"type": "resize", "width": 319, "height": 800}, "width"),
        ({"type": "resize", "width": 2561, "height": 800}, "width"),
        ({"type": "resize", "width": 1280, "height": 239}, "height"),
        ({"type": "resize", "width": 1280, "height": 1601}, "height"),
        ({"type": "resize", "width": "1280", "height": 800}, "width"),
        ({"type": "pointer", "action": "click", "x": -1, "y": 0}, "x"),
        ({"type": "pointer", "action": "tap", "x": 1, "y": 0}, "action"),
        ({"type": "pointer", "action": "click", "x": 1, "y": 0, "button": 3}, "button"),
        ({"type": "key", "key": "a", "modifiers": ["Hyper"]}, "modifiers.0"),
        ({"type": "text", "text": "x" * (screencast.MAX_TEXT + 1)}, "text"),
        ({"type": "teleport"}, "type"),
        ({"type": "ack", "extra": 1}, "extra"),
        ([1, 2], "type"),
    ],
)
def test_a_message_out_of_bounds_is_invalid_input_naming_the_field(
    message: Any, field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        screencast.parse(message)
    assert caught.value.field == field


def test_the_viewport_bounds_are_inclusive() -> None:
    for width, height in ((320, 240), (2560, 1600)):
        parsed = screencast.parse({"type": "resize", "width": width, "height": height})
        assert isinstance(parsed, screencast.Resize)


def test_an_unknown_key_name_is_refused_and_a_typed_value_never_echoed() -> None:
    with pytest.raises(InvalidInput) as caught:
        actions({"type": "key", "key": "Hyperdrive"})
    assert caught.value.field == "key" and "Hyperdrive" not in caught.value.message
    with pytest.raises(InvalidInput) as long:
        screencast.parse({"type": "text", "text": "dummy-secret-typed" * 300})
    assert "dummy-secret-typed" not in long.value.message
