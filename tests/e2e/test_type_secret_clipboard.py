"""No clipboard carries a typed secret to another host (SPEC §7; attacker review H1; issue
#24 item 3): in a session where a secret was typed, every way input reaches the browser —
``press``, ``type``, a flow's steps, the live socket's keys, text and pointer, a modifier
held in one message and a key sent in the next, a person's held key under an agent's call —
refuses copy, cut and paste chords, the context menu, the middle button's paste of the
selection and a drag of it, and the other host's page receives nothing. What reached a page
is what the recorder hosts recorded (``Sites.events``). The same inputs work in a session
where no secret was typed."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from fixtures.sites import REC_HOST, REC_OTHER_HOST, TYPED_SECRET, Sites
from sitekeep.config import Settings
from sitekeep.service.relay import Relay
from support import WHO, Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REFUSED = "clipboard_not_allowed"
WAIT = 60.0  # s: a bound on the relay's answer, never a pause


async def press(api: Api, keys: str, key: str = "c") -> tuple[int, dict[str, Any]]:
    reply = await api.http.post(f"/v1/sessions/{key}/press", json={"keys": keys})
    body = reply.json()
    return reply.status_code, body.get("error", body)


async def type_text(api: Api, text: str, key: str) -> tuple[int, dict[str, Any]]:
    reply = await api.http.post(f"/v1/sessions/{key}/type", json={"selector": "#rec", "text": text})
    body = reply.json()
    return reply.status_code, body.get("error", body)


async def typed_a_secret(api: Api, sites: Sites, key: str, path: str = "/") -> int:
    """Open ``key`` on the recorder host at ``path`` and type the secret into its field;
    returns how many requests the other recorder host had seen before (for :func:`leaked`)."""
    sent = len(sites.recorded(REC_OTHER_HOST))
    await api.service.parts.vault.put(WHO.tenant, "clip", "", [REC_HOST], {"short": TYPED_SECRET})
    await api.open(key=key, url=sites.url(REC_HOST, path))
    await api.call(
        "POST",
        f"/v1/sessions/{key}/type-secret",
        {"selector": "#rec", "secret": "clip", "field": "short"},
    )
    return sent


def leaked(sites: Sites, host: str, mark: int) -> list[dict[str, str]]:
    """The requests ``host``'s pages made since ``len(sites.recorded(host))`` was
    ``mark`` that report a paste or carry a piece of the typed secret (a word of it)."""
    pieces = TYPED_SECRET.split("-")
    return [
        e
        for e in sites.recorded(host)[mark:]
        if '"kind":"paste"' in e["body"] or any(p in e["body"] for p in pieces)
    ]


def key(name: str, *modifiers: str, action: str = "press") -> dict[str, Any]:
    return {"type": "key", "key": name, "action": action, "modifiers": list(modifiers)}


def held(modifier: str, name: str) -> list[dict[str, Any]]:
    """``modifier`` down as its own message, ``name`` pressed in the next, then up."""
    return [key(modifier, action="down"), key(name), key(modifier, action="up")]


def pointer(action: str, at: tuple[int, int], button: int = 0) -> dict[str, Any]:
    return {"type": "pointer", "action": action, "x": at[0], "y": at[1], "button": button}


async def centre(api: Api, key: str, in_frame: bool = False) -> tuple[int, int]:
    """The viewport point a little inside the start of the page's ``#rec`` field (of the
    page in its first frame when ``in_frame``)."""
    browser = await api.browser(key)
    box = """(frame) => {
      const r = document.querySelector(frame || '#rec').getBoundingClientRect();
      return JSON.stringify(frame ? [r.x + 2, r.y + 2] : [r.x + 12, r.y + r.height / 2]);
    }"""
    x, y = await browser.evaluate_json(box, "")
    if in_frame:
        tree = await browser.conn.send("browsingContext.getTree", {"root": browser.context})
        inner = tree["contexts"][0]["children"][0]["context"]
        dx, dy = await browser.evaluate_json(box, "#frame")
        x, y = await browser.evaluate_json(box, "", context=inner)
        x, y = x + dx, y + dy
    return int(x), int(y)


class LiveSocket:
    """A live socket's relay (:class:`sitekeep.service.relay.Relay`) on a session's real browser,
    its messages in and out as JSON text, as the WebSocket carries them."""

    def __init__(self, api: Api, key: str) -> None:
        self._api, self._key = api, key
        self._inbox: asyncio.Queue[str] = asyncio.Queue()
        self._out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.texts: list[str] = []
        """Every JSON message the relay said, as sent."""

    async def _said(self, text: str) -> None:
        self.texts.append(text)
        await self._out.put(json.loads(text))

    async def _next(self) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            return await self._out.get()

    async def send(self, *messages: dict[str, Any]) -> list[tuple[str, str | None]]:
        """Send ``messages``; once all were applied (a resize to the same size after them
        answers last), the ``error`` messages the relay said meanwhile, each's ``(type,
        field)``."""
        for message in (*messages, {"type": "resize", "width": 1280, "height": 800}):
            await self._inbox.put(json.dumps(message))
        said = []
        while (message := await self._next())["type"] != "viewport":
            said.append(message)
        return [(m["error"]["type"], m["error"].get("field")) for m in said if m["type"] == "error"]

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[LiveSocket]:
        svc = self._api.service
        live, _ = await svc.live._start(WHO, self._key)
        browser = await self._api.browser(self._key)

        async def frame(_: bytes) -> None:
            await self._inbox.put(json.dumps({"type": "ack"}))

        relay = Relay(
            svc.live, WHO, live, browser, send=self._said, send_bytes=frame, receive=self._inbox.get
        )
        task = asyncio.create_task(relay.run())
        try:
            assert (await self._next())["type"] == "ready"
            yield self
            assert not task.done(), "the socket ended"
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@contextlib.asynccontextmanager
async def selected_secret(
    api: Api, sites: Sites, session: str, path: str = "/"
) -> AsyncIterator[tuple[LiveSocket, int]]:
    """A live socket on ``session`` (:func:`typed_a_secret`) with the typed secret selected
    (``Control+A``: not a clipboard key), and :func:`typed_a_secret`'s count."""
    sent = await typed_a_secret(api, sites, session, path)
    async with LiveSocket(api, session).open() as live:
        assert await live.send(key("a", "Control")) == []
        yield live, sent


async def test_press_type_and_flows_refuse_every_spelling_of_a_clipboard_key(
    api: Api, sites: Sites, browser: str
) -> None:
    sent = await typed_a_secret(api, sites, "c")
    assert (await press(api, "Control+A"))[0] == 200  # not a clipboard key
    for chord in (
        "Control+C", "Meta+c", "Control+x", "Shift+Delete", "Tab Control+Shift+C",
        "Shift+\ue05c", "Control+\ue05c", "Shift+\ue05d", "\ue051+v", "\ue053+c",  # numpad
        "Shift+F10", "\ue050+F10",  # the context menu
    ):  # fmt: skip
        status, error = await press(api, chord)
        assert (status, error.get("type"), error.get("field")) == (403, REFUSED, "keys"), chord
    for text in ("\ue009c", "a\ue03dbv", "\ue008\ue017", "\ue050x\ue016"):
        status, error = await type_text(api, text, "c")
        assert (status, error.get("type"), error.get("field")) == (403, REFUSED, "text"), text

    await api.go("c", sites.url(REC_OTHER_HOST, "/"))
    mark = len(sites.events(REC_OTHER_HOST))
    status, error = await press(api, "Control+V")
    assert (status, error.get("type")) == (403, REFUSED)
    flow = await api.call(
        "POST",
        "/v1/sessions/c/flows",
        {"steps": [{"op": "press", "keys": "Meta+V"}, {"op": "press", "keys": "Shift+\ue016"},
                   {"op": "type", "selector": "#rec", "text": "\ue009v"}],
         "on_error": "continue"},
    )  # fmt: skip
    assert [s["error"]["type"] for s in flow["steps"]] == [REFUSED] * 3
    assert sites.events(REC_OTHER_HOST)[mark:] == []  # no key, input or paste event
    assert leaked(sites, REC_OTHER_HOST, sent) == []


async def test_a_flow_that_types_a_secret_cannot_copy_it_in_a_later_step(
    api: Api, sites: Sites, browser: str
) -> None:
    await api.service.parts.vault.put(WHO.tenant, "clip", "", [REC_HOST], {"short": TYPED_SECRET})
    await api.open(key="f", url=sites.url(REC_HOST, "/"))
    flow = await api.call(
        "POST",
        "/v1/sessions/f/flows",
        {"steps": [{"op": "type_secret", "selector": "#rec", "secret": "clip", "field": "short"},
                   {"op": "press", "keys": "Control+A"},
                   {"op": "press", "keys": "Control+C"},
                   {"op": "type", "selector": "#rec", "text": "\ue009c"}],
         "on_error": "continue"},
    )  # fmt: skip
    assert [s["status"] for s in flow["steps"]] == ["ok", "ok", "failed", "failed"]
    assert [s["error"]["type"] for s in flow["steps"][2:]] == [REFUSED] * 2


async def test_the_live_socket_copies_and_pastes_no_typed_secret_by_any_chord(
    api: Api, sites: Sites, browser: str
) -> None:
    async with selected_secret(api, sites, "l") as (live, sent):
        refused = await live.send(
            key("c", "Control"),  # modifiers in the message
            *held("Control", "c"),  # a held Control, its own message
            *held("\ue051", "x"),  # the right Control, as WebDriver spells it
            *held("Meta", "c"),
            *held("Shift", "\ue016"),  # Shift+Insert
            {"type": "text", "text": "\ue009c"},
        )
        assert refused == [(REFUSED, "key")] * 5 + [(REFUSED, "text")]

        await live.send({"type": "navigate", "url": sites.url(REC_OTHER_HOST, "/")})
        field = await centre(api, "l")
        mark = len(sites.events(REC_OTHER_HOST))
        refused = await live.send(
            key("v", "Control"),
            *held("Control", "v"),
            *held("Shift", "\ue05c"),  # Shift+Insert on the number pad
            pointer("click", field, button=1),  # the middle button pastes the selection
        )
        assert refused == [(REFUSED, "key")] * 3 + [(REFUSED, "button")]
        assert await live.send(key("z")) == []  # the socket still takes input
    assert leaked(sites, REC_OTHER_HOST, sent) == []
    assert {"kind": "keydown", "data": "z"} in sites.events(REC_OTHER_HOST)[mark:]


async def test_the_live_socket_opens_no_context_menu_and_drags_no_selection(
    api: Api, sites: Sites, browser: str
) -> None:
    frame = "/?frame=" + quote(sites.url(REC_OTHER_HOST, "/"), safe="")
    async with selected_secret(api, sites, "d", frame) as (live, sent):
        field, there = await centre(api, "d"), await centre(api, "d", in_frame=True)
        mark = len(sites.events(REC_HOST))
        dx, dy = there[0] - field[0], there[1] - field[1]
        steps = [(field[0] + dx * i // 4, field[1] + dy * i // 4) for i in (1, 2, 4)]
        refused = await live.send(
            pointer("down", field),  # a drag of the selected secret into the other host's frame
            *(pointer("move", at) for at in steps),
            pointer("up", there),
            pointer("click", field, button=2),  # the context menu
            key("F10", "Shift"),
            *held("Shift", "F10"),
        )
        assert refused == [(REFUSED, f) for f in ("button", "button", "key", "key")]
    assert [e for e in sites.events(REC_HOST)[mark:] if e["kind"] == "contextmenu"] == []
    assert leaked(sites, REC_OTHER_HOST, sent) == []


async def test_a_key_a_person_holds_adds_nothing_to_an_agents_call(
    api: Api, sites: Sites, browser: str
) -> None:
    async with selected_secret(api, sites, "h") as (live, sent):
        assert await live.send(key("Control", action="down")) == []
        assert (await press(api, "c", "h"))[0] == 200  # Control is released first: a "c"
        await api.go("h", sites.url(REC_OTHER_HOST, "/"))
        assert await live.send(key("Control", action="down")) == []
        assert (await press(api, "v", "h"))[0] == 200
        assert (await type_text(api, "v", "h"))[0] == 200
    assert leaked(sites, REC_OTHER_HOST, sent) == []


async def test_without_a_typed_secret_the_same_inputs_copy_paste_and_open_menus(
    api: Api, sites: Sites, browser: str
) -> None:
    await api.open(key="n", url=sites.url(REC_HOST, "/"))
    assert (await type_text(api, "no secret", "n"))[0] == 200
    assert (await press(api, "Control+A Control+C Shift+F10", "n"))[0] == 200
    assert (await type_text(api, "\ue009c", "n"))[0] == 200
    async with LiveSocket(api, "n").open() as live:
        await live.send({"type": "navigate", "url": sites.url(REC_OTHER_HOST, "/")})
        field = await centre(api, "n")
        mark = len(sites.events(REC_OTHER_HOST))
        assert (
            await live.send(
                *held("Control", "v"),
                *held("Shift", "h"),
                {"type": "text", "text": "Ok"},
                pointer("click", field, button=2),
                pointer("click", field, button=1),
                pointer("down", field),
                pointer("move", (field[0] + 30, field[1])),
                pointer("up", (field[0] + 30, field[1])),
            )
            == []
        )
    events = sites.events(REC_OTHER_HOST)[mark:]
    kinds = {e["kind"] for e in events}
    assert {"paste", "contextmenu"} <= kinds
    assert any("HOk" in e["data"] for e in events if e["kind"] == "input")  # Shift held


REMEMBERING_FORM = """<form method="post" action="/__fixture/state">
<input id="user" name="username"><input id="pass" name="password" type="password">
<button type="submit">Sign in</button></form>"""
"""A sign-in form as most are: no ``autocomplete=off``, so a browser keeps what was sent."""
FISHING = """<input id="user" name="username"><input id="pass" name="password" type="password">
<script>
for (const field of document.querySelectorAll("input"))
  field.addEventListener("input", () => { document.title = field.id + " got " + field.value; });
</script>"""
"""Another host's page with fields of the same names, reporting whatever fills them."""


def browser_profile(api: Api, settings: Settings, endpoint: str, debugger: str) -> Path:
    """The folder of the browser's profile, on this machine: a Firefox's beside its
    geckodriver (``<data>/geckodriver/<port>.profile``), the mapper engine's Chromium's in
    its state file, chromedriver's Chromium's from its command line (``--user-data-dir``,
    the process serving its DevTools port)."""
    if settings.browser == "firefox":
        return settings.data_dir / "geckodriver" / f"{urlsplit(endpoint).port}.profile"
    if not debugger:  # the mapper engine's
        state = api.service.parts.browsers._mapper._state(endpoint)
        return Path(json.loads(state.read_text())["profile"])
    port = debugger.rsplit(":", 1)[1]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            args = cmdline.read_bytes().decode(errors="replace").split("\0")
            for arg in args:
                active = Path(arg.removeprefix("--user-data-dir=")) / "DevToolsActivePort"
                listening = active.read_text().split()[:1] if active.exists() else []
                if arg.startswith("--user-data-dir=") and listening == [port]:
                    return active.parent
    raise AssertionError(f"no Chromium serves DevTools on {debugger}")


@pytest.mark.parametrize(
    ("browser", "via"), [("chromium", "local"), ("firefox", "local"), ("firefox", "grid")]
)
async def test_no_browser_remembers_a_typed_secret_to_offer_it_to_another_host(
    api: Api, sites: Sites, settings: Settings, via: str
) -> None:
    """Found attacking issue #24 item 3 afresh: Firefox kept a secret typed into a text
    field in its form history once the form was sent (formhistory.sqlite), and offered it
    back in any field of that name on any host — ``ArrowDown Enter`` there, keys no gate
    refuses, handed the value to a page the secret is not allowed on. Chromium kept it too
    (its profile's ``Web Data``). No browser remembers what was typed into a form."""
    values = {"user": TYPED_SECRET, "pass": TYPED_SECRET + "-p"}
    await api.service.parts.vault.put(WHO.tenant, "login", "", ["form.example.test"], values)
    url = sites.url("form.example.test", "/__fixture/html?body=" + quote(REMEMBERING_FORM))
    await api.open(key="r", url=url)
    for field in ("user", "pass"):
        typed = {"selector": f"#{field}", "secret": "login", "field": field}
        await api.call("POST", "/v1/sessions/r/type-secret", {**typed, "submit": field == "pass"})
    sent = {"op": "wait_for", "text": '"method": "POST"', "timeout": 30}
    flow = await api.call("POST", "/v1/sessions/r/flows", {"steps": [sent]})
    assert flow["steps"][0]["status"] == "ok", flow  # the form was sent, and answered
    ref = (await api.browser("r")).ref
    fishing = sites.url("app.other.test", "/__fixture/html?body=" + quote(FISHING))
    for field in ("user", "pass"):
        await api.go("r", fishing)
        await api.call("POST", "/v1/sessions/r/click", {"selector": f"#{field}"})
        for keys in ("ArrowDown", "ArrowDown", "Enter"):
            await api.call("POST", "/v1/sessions/r/press", {"keys": keys})
        got = await (await api.browser("r")).evaluate_json(
            "() => JSON.stringify([...document.querySelectorAll('input')].map(i => i.value))", ""
        )
        assert got == ["", ""], field  # the api client's hook finds no value in any reply
    if via == "local":
        profile = browser_profile(api, settings, ref.endpoint, ref.debugger)
        kept = [
            f.relative_to(profile)
            for f in profile.rglob("*")
            if f.is_file() and TYPED_SECRET.encode() in f.read_bytes()
        ]
        assert kept == [], f"the browser's profile keeps the typed value in {kept}"
