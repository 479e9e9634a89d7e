"""type_secret delivers a value into an allowed field and nothing else, ever (SPEC §7, §12;
issue #8 items 1 and 2). Every "nothing reached" is what the recorder hosts received: each
request, and each key, input and paste event their pages saw (``Sites.recorded``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import pytest

from fixtures.sites import LONG_SECRET, REC_OTHER_HOST, TYPED_SECRET, Sites
from sitekeep.browser import keys
from sitekeep.errors import BidiError
from sitekeep.secrets import MAX_VALUE_CHARS
from support import WHO, Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PAGE_HOST = "type.example.test"
"""The page the secret is allowed on; the recorder hosts are not."""


async def store(api: Api) -> None:
    await api.service.parts.vault.put(
        WHO.tenant,
        "guarded",
        "typed by the guard tests",
        [PAGE_HOST],
        {"short": TYPED_SECRET, "long": LONG_SECRET},
    )


def html_page(sites: Sites, body: str) -> str:
    return sites.url(PAGE_HOST, "/__fixture/html?body=" + quote(body))


async def until(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Poll ``check()`` until true, or fail naming ``what``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if check():
            return
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def until_async(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``await check()`` until true, or fail naming ``what``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20.0
    while not await check():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def nothing_reached(sites: Sites, mark: int) -> None:
    """The recorder hosts saw no key, input or paste event since ``mark``, and no request
    carrying any piece of a secret value."""
    new = sites.recorded()[mark:]
    events = [e for e in new if e["path"] == "/__fixture/record"]
    assert events == [], f"{len(events)} key/input events reached a recorder"
    pieces = [v[i : i + 12] for v in (TYPED_SECRET, LONG_SECRET) for i in range(0, len(v), 500)]
    carried = [e["path"] for e in new if any(p in e["query"] + e["body"] for p in pieces)]
    assert carried == [], f"requests carrying a secret reached a recorder: {carried}"


def recorder_loaded(sites: Sites, mark: int) -> bool:
    return any(e["method"] == "GET" and e["path"] == "/" for e in sites.recorded()[mark:])


async def type_secret(api: Api, key: str, selector: str, field: str = "short") -> dict[str, Any]:
    reply = await api.http.post(
        f"/v1/sessions/{key}/type-secret",
        json={"selector": selector, "secret": "guarded", "field": field},
    )
    return {"status": reply.status_code, **reply.json()}


@pytest.mark.parametrize(
    ("browser", "via"), [("chromium", "local"), ("firefox", "local"), ("chromium", "grid")]
)
async def test_a_secret_aimed_at_another_hosts_frame_is_refused_and_nothing_reaches_it(
    api: Api, sites: Sites
) -> None:
    await store(api)
    rec = sites.url(REC_OTHER_HOST, "/")
    inner = sites.url(PAGE_HOST, "/__fixture/frame?src=" + quote(rec, safe=""))
    layouts = {
        "iframe": f'<iframe id="f" src="{rec}"></iframe>',
        "frame in frame": f'<iframe id="f" src="{inner}"></iframe>',
        "shadow root": (
            '<div id="f"></div><script>document.getElementById("f")'
            '.attachShadow({mode: "open", delegatesFocus: true}).innerHTML = '
            f'`<iframe tabindex="0" src="{rec}"></iframe>`;</script>'
        ),
    }
    await api.open(key="f")
    for name, body in layouts.items():
        mark = len(sites.recorded())
        await api.go("f", html_page(sites, body))
        await until(lambda m=mark: recorder_loaded(sites, m), f"the recorder frame ({name})")
        reply = await type_secret(api, "f", "#f")
        assert reply["status"] == 403, (name, reply)
        assert reply["error"]["type"] == "secret_not_allowed", name
        nothing_reached(sites, mark)


@pytest.mark.parametrize("browser", ["chromium"])
async def test_a_document_that_navigates_away_while_typing_gets_nothing_after_it(
    api: Api, sites: Sites
) -> None:
    await store(api)
    rec = sites.url(REC_OTHER_HOST, "/")
    pages = {
        # The issue's page: it sets location to another host 300 ms after load. Typed
        # before it left, refused once it had, or (404, 409) it had left before the field
        # was looked up: never in between.
        "timer": f'<input id="f"><script>setTimeout(() => {{ location.href = "{rec}"; }}, 300)'
        "</script>",
        # It navigates at the first input event, between two chunks of the value.
        "on input": f'<textarea id="f" oninput="location.href = \'{rec}\'"></textarea>',
    }
    statuses = {"timer": (200, 403, 404, 409), "on input": (200, 403)}
    for name, body in pages.items():
        mark = len(sites.recorded())
        await api.open(key=f"n-{name.replace(' ', '-')}", url=html_page(sites, body))
        reply = await type_secret(api, f"n-{name.replace(' ', '-')}", "#f", "long")
        assert reply["status"] in statuses[name], (name, reply)
        await until(lambda m=mark: recorder_loaded(sites, m), f"the page to leave ({name})")
        nothing_reached(sites, mark)


@pytest.mark.parametrize("browser", ["chromium"])
async def test_a_type_that_timed_out_types_nothing_after_it_returned(
    make_api: Callable[..., Any], sites: Sites
) -> None:
    api: Api = await make_api(bidi_timeout=1.0)
    await store(api)
    # After the first chunk the page is busy for longer than a call may wait: the second
    # chunk waits in the page's queue while its call gives up, and must do nothing later.
    body = (
        '<textarea id="f"></textarea><script>let busy = true;'
        'document.getElementById("f").addEventListener("input", () => {'
        " if (busy) { busy = false; setTimeout(() => {"
        " const t = Date.now(); while (Date.now() - t < 2500); }, 0); } });"
        "</script>"
    )
    await api.open(key="t", url=html_page(sites, body))
    reply = await type_secret(api, "t", "#f", "long")
    assert reply["status"] == 503 and reply["error"]["type"] == "bidi_timeout", reply
    live = await api.browser("t")
    held: list[int] = []

    async def length() -> bool:
        with contextlib.suppress(BidiError):  # a timeout while the page is still busy
            held.append(await live.evaluate_json("() => JSON.stringify(f.value.length)"))
        return bool(held)

    await until_async(length, "the page to be free again")
    assert held == [keys.CHUNK_CHARS], "a chunk was typed after its call returned"
    mark = len(sites.recorded())
    await api.http.post("/v1/sessions/t/navigate", json={"url": sites.url(REC_OTHER_HOST, "/")})
    await until(lambda: recorder_loaded(sites, mark), "the recorder page")
    text = await api.call("POST", "/v1/sessions/t/read", {})
    assert text["title"] == "Recorder"
    nothing_reached(sites, mark)


@pytest.mark.parametrize("browser", ["chromium"])
async def test_the_largest_value_accepted_types_whole_and_a_longer_text_is_refused_up_front(
    api: Api, sites: Sites
) -> None:
    largest = ("dummy-largest-" * 1000)[:MAX_VALUE_CHARS]
    await api.service.parts.vault.put(WHO.tenant, "largest", "", [PAGE_HOST], {"v": largest})
    await api.open(key="s", url=html_page(sites, '<textarea id="f"></textarea>'))
    await api.call(
        "POST", "/v1/sessions/s/type-secret", {"selector": "#f", "secret": "largest", "field": "v"}
    )
    live = await api.browser("s")
    value = "() => JSON.stringify(document.getElementById('f').value)"
    assert await live.evaluate_json(value) == largest
    over = await api.http.post(
        "/v1/sessions/s/type", json={"selector": "#f", "text": "x" * (MAX_VALUE_CHARS + 1)}
    )
    assert over.status_code == 400 and over.json()["error"]["field"] == "text", over.text
    assert await live.evaluate_json(value) == largest


@pytest.mark.parametrize("browser", ["chromium"])
async def test_keys_go_to_a_widget_that_reads_keys_and_stop_when_the_call_times_out(
    make_api: Callable[..., Any], sites: Sites
) -> None:
    api: Api = await make_api(bidi_timeout=1.0)
    # A widget that types what its keydown listener sees; "busy" one stalls at the first.
    widget = (
        '<div id="{id}" tabindex="0"></div><script>(() => {{'
        'const w = document.getElementById("{id}"); let stall = {stall};'
        'w.addEventListener("keydown", (e) => {{ if (e.key.length === 1) w.textContent += e.key;'
        " if (stall) {{ stall = false; const t = Date.now(); while (Date.now() - t < 1500); }}"
        " e.preventDefault(); }}); }})();</script>"
    )
    body = widget.format(id="w", stall="false") + widget.format(id="busy", stall="true")
    await api.open(key="k", url=html_page(sites, body))
    typed = await api.call("POST", "/v1/sessions/k/type", {"selector": "#w", "text": "hello"})
    assert "error" not in typed
    live = await api.browser("k")
    shown = "() => JSON.stringify(document.getElementById('w').textContent)"
    assert await live.evaluate_json(shown) == "hello"

    reply = await api.http.post(
        "/v1/sessions/k/type", json={"selector": "#busy", "text": "x" * 600}
    )
    assert reply.status_code == 503 and reply.json()["error"]["type"] == "bidi_timeout"
    mark = len(sites.recorded())
    await api.http.post("/v1/sessions/k/navigate", json={"url": sites.url(REC_OTHER_HOST, "/")})
    await until(lambda: recorder_loaded(sites, mark), "the recorder page")
    await api.call("POST", "/v1/sessions/k/read", {})
    events = [e for e in sites.recorded()[mark:] if e["path"] == "/__fixture/record"]
    assert events == [], f"{len(events)} key events reached the next page"


@pytest.mark.parametrize("browser", ["chromium"])
async def test_a_field_the_page_replaces_while_typing_stops_the_secret_as_a_conflict(
    api: Api, sites: Sites
) -> None:
    await store(api)
    body = '<textarea id="f" oninput="this.replaceWith(this.cloneNode())"></textarea>'
    await api.open(key="r", url=html_page(sites, body))
    reply = await type_secret(api, "r", "#f", "long")
    assert reply["status"] == 409 and reply["error"]["type"] == "conflict", reply
    assert "replaced the element" in reply["error"]["message"]
