"""The live view's browser side over WebDriver BiDi (SPEC §10): frames out, input in.

Frames are ``browsingContext.captureScreenshot`` of the main tab (BiDi has no live
screencast: ``browsingContext.startScreencast`` records to a file and neither browser
implements it — research/bidi-spike.md §8). Input is a person's, so nothing here logs it:

- ``pointer`` (``down``, ``up``, ``move``, ``click``; buttons 0–2) and ``wheel`` →
  ``input.performActions`` with a mouse source and a wheel source (W3C WebDriver BiDi
  §7.6 input; the pressed-button state lives in the browser between messages, so a drag
  is down, moves, up);
- ``key`` (``down``, ``up``, ``press`` with ``modifiers``) and ``text`` →
  ``input.performActions`` with a key source (a single character stands for itself, named
  keys as :data:`~sitekeep.browser.page.KEYS` has them);
- ``navigate`` → ``browsingContext.navigate`` (the agents' navigation policy applies);
- ``resize`` → ``browsingContext.setViewport``, bounded to 320–2560 × 240–1600 CSS px.

A message that breaks these rules is :class:`~sitekeep.errors.InvalidInput` naming the
field, and nothing is sent to the browser. Input goes through the input gate
(:mod:`sitekeep.browser.inputs`): in a session where a secret was typed, one that could
copy, cut or paste, open the context menu, paste the selection or drag is
:class:`~sitekeep.errors.ClipboardNotAllowed` and nothing of it is sent.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from sitekeep.address import Refused
from sitekeep.browser import inputs, wire
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.browser.page import KEYS
from sitekeep.errors import InvalidInput
from sitekeep.policy import check_url

__all__ = [
    "HEIGHTS",
    "WIDTHS",
    "Ack",
    "Key",
    "LiveInput",
    "Navigate",
    "Pointer",
    "Resize",
    "Text",
    "Wheel",
    "apply",
    "capture",
    "decode",
    "jpeg_size",
    "parse",
    "perform_params",
    "set_viewport",
    "viewport",
]

WIDTHS = (320, 2560)
"""The live viewport's width bounds, CSS pixels (inclusive)."""
HEIGHTS = (240, 1600)
"""The live viewport's height bounds, CSS pixels (inclusive)."""
MAX_TEXT = 4096
"""The longest ``text`` message, in characters."""
FRAME_FORMAT: wire.ImageFormat = {"type": "image/jpeg", "quality": 0.75}
"""``captureScreenshot``'s format: JPEG costs Chromium no more than PNG and Firefox less."""

_MOUSE = {"type": "pointer", "id": "live-mouse", "parameters": {"pointerType": "mouse"}}
_X = Annotated[int, Field(ge=0, lt=WIDTHS[1])]
_Y = Annotated[int, Field(ge=0, lt=HEIGHTS[1])]
_DELTA = Annotated[int, Field(ge=-100_000, le=100_000)]
_MODIFIERS = ("Shift", "Control", "Alt", "Meta")
_KEYBOARD = "live-keys"
_FIELD = {"pointer": "button", "wheel": "button", "key": "key", "text": "text"}
"""The field a refused input message names (``ClipboardNotAllowed``)."""


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Pointer(_Message):
    type: Literal["pointer"]
    action: Literal["down", "up", "move", "click"]
    x: _X
    y: _Y
    button: Annotated[int, Field(ge=0, le=2)] = 0


class Wheel(_Message):
    type: Literal["wheel"]
    x: _X
    y: _Y
    dx: _DELTA = 0
    dy: _DELTA = 0


class Key(_Message):
    type: Literal["key"]
    key: Annotated[str, Field(min_length=1, max_length=32)]
    action: Literal["down", "up", "press"] = "press"
    modifiers: list[Literal["Shift", "Control", "Alt", "Meta"]] = Field(
        default_factory=list, max_length=4
    )


class Text(_Message):
    type: Literal["text"]
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]


class Navigate(_Message):
    type: Literal["navigate"]
    url: Annotated[str, Field(min_length=1, max_length=8192)]


class Resize(_Message):
    type: Literal["resize"]
    width: Annotated[int, Field(ge=WIDTHS[0], le=WIDTHS[1])]
    height: Annotated[int, Field(ge=HEIGHTS[0], le=HEIGHTS[1])]


class Ack(_Message):
    """The client drew a frame: one more may be in flight."""

    type: Literal["ack"]


LiveInput = Annotated[
    Pointer | Wheel | Key | Text | Navigate | Resize | Ack, Field(discriminator="type")
]
_ADAPTER: TypeAdapter[LiveInput] = TypeAdapter(LiveInput)


def parse(message: object) -> Pointer | Wheel | Key | Text | Navigate | Resize | Ack:
    """One client message, validated.

    Raises:
        InvalidInput: not an object of a known ``type``, or a field out of its bounds
            (``field`` names it, e.g. ``width``); never echoes a typed value.
    """
    try:
        return _ADAPTER.validate_python(message)
    except ValidationError as exc:
        error = exc.errors(include_input=False)[0]
        loc = [str(p) for p in error["loc"][1:]] or ["type"]
        field = ".".join(loc)
        raise InvalidInput(f"{field}: {error['msg']}", field=field) from None


def _key_value(key: str) -> str:
    if key in KEYS:
        return KEYS[key]
    if key == " ":
        return " "
    if len(key) == 1:
        return key
    raise InvalidInput("key: a single character or a named key (Enter, Tab, …)", field="key")


def perform_params(message: Pointer | Wheel | Key | Text) -> dict[str, Any]:
    """The ``input.performActions`` source for one input message (no ``context`` yet).

    Raises:
        InvalidInput: an unknown key name (field ``key``).
    """
    if isinstance(message, Pointer):
        move = {"type": "pointerMove", "x": message.x, "y": message.y, "origin": "viewport"}
        down = {"type": "pointerDown", "button": message.button}
        up = {"type": "pointerUp", "button": message.button}
        steps = {"move": [move], "down": [move, down], "up": [move, up], "click": [move, down, up]}
        return {**_MOUSE, "actions": steps[message.action]}
    if isinstance(message, Wheel):
        scroll = {"type": "scroll", "x": message.x, "y": message.y, "origin": "viewport"}
        scroll.update(deltaX=message.dx, deltaY=message.dy)
        return {"type": "wheel", "id": "live-wheel", "actions": [scroll]}
    if isinstance(message, Key):
        value = _key_value(message.key)
        if message.action != "press":  # one side of a key held across messages
            step = {"type": "keyDown" if message.action == "down" else "keyUp", "value": value}
            return {"type": "key", "id": _KEYBOARD, "actions": [step]}
        held = [KEYS[m] for m in _MODIFIERS if m in message.modifiers]
        return inputs.combos([[*held, value]], _KEYBOARD)
    text = message.text.replace("\r\n", "\n")
    return inputs.presses((KEYS["Enter"] if c == "\n" else c for c in text), _KEYBOARD)


async def apply(
    browser: LiveBrowser,
    message: Pointer | Wheel | Key | Text | Navigate | Resize,
    *,
    own: Refused | None = None,
    own_origins: Iterable[str] = (),
    secret_typed: bool = False,
) -> PageInfo | tuple[int, int] | None:
    """Send one input message to the browser's main tab, through the input gate
    (:mod:`sitekeep.browser.inputs`: judged against what earlier messages left held).
    A ``navigate`` goes where an agent's may (``policy.check_url``: never to ``own``,
    the sitekeep server and every driver, in any spelling, nor ``own_origins``).

    Returns:
        Where a ``navigate`` landed, the viewport a ``resize`` set, else None.

    Raises:
        InvalidInput: a refused URL (field ``url``), an unknown key (field ``key``).
        OwnAddress: the URL reaches the sitekeep server or a driver (field ``url``).
        ClipboardNotAllowed: (``secret_typed``) a copy, cut or paste chord or the context
            menu (field ``key``, ``text``), the middle or secondary button or a drag
            (field ``button``); nothing of it was sent, what was held is released.
        NavigationFailed, BidiError, BidiTimeout, BrowserUnavailable: from the browser.
    """
    if isinstance(message, Navigate):
        url = check_url(message.url, own=own, own_origins=list(own_origins))
        return await browser.navigate(url)
    if isinstance(message, Resize):
        await set_viewport(browser, message.width, message.height)
        return message.width, message.height
    await inputs.perform(
        browser,
        [perform_params(message)],
        secret_typed=secret_typed,
        field=_FIELD[message.type],
        sticky=isinstance(message, Text),
    )
    return None


async def capture(browser: LiveBrowser) -> str:
    """The main tab's viewport as JPEG, base64 (as BiDi returns it: equal strings are
    equal frames, compared before anything is decoded)."""
    command = wire.browsing_context_capture_screenshot(browser.context, image_format=FRAME_FORMAT)
    result = await wire.call(browser.conn, command)
    return str(result["data"])


def decode(data: str) -> bytes:
    """A captured frame's bytes."""
    return base64.b64decode(data)


def jpeg_size(data: bytes) -> tuple[int, int]:
    """A JPEG's (width, height) in pixels from its first SOFn marker (ITU-T T.81
    §B.2.2), or (0, 0) when it has none (not a JPEG, or cut short)."""
    i = 2
    while i + 9 < len(data) and data[i] == 0xFF:
        marker, length = data[i + 1], int.from_bytes(data[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(data[i + 5 : i + 7], "big")
            return int.from_bytes(data[i + 7 : i + 9], "big"), height
        i += 2 + length
    return (0, 0)


async def set_viewport(browser: LiveBrowser, width: int, height: int) -> None:
    """``browsingContext.setViewport`` of the main tab to ``width``×``height`` CSS pixels
    at a device pixel ratio of 1, so a frame has as many pixels as the viewport has CSS
    pixels (the coordinates input messages use). Bounds are the caller's (:data:`WIDTHS`,
    :data:`HEIGHTS`)."""
    command = wire.browsing_context_set_viewport(
        browser.context, width, height, device_pixel_ratio=1
    )
    await wire.call(browser.conn, command)


async def viewport(browser: LiveBrowser) -> tuple[int, int]:
    """The main tab's viewport size, CSS pixels."""
    size = await browser.evaluate_json("() => JSON.stringify([innerWidth, innerHeight])")
    return int(size[0]), int(size[1])
