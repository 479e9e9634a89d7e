"""What was typed from a secret never comes back (SPEC §7, §12; issue #8 item 3): every
agent-facing result — snapshot, read, flow reports, errors, MCP content — shows ``•••``
where a typed value stands, whatever the page does with it."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote

import pytest
from mcp import Client
from mcp.types import TextContent

from fixtures.sites import LONG_SECRET, TYPED_SECRET, Sites
from sitekeep.masking import MASK
from sitekeep.mcp import build_server
from support import WHO, Api

from .test_type_secret_clipboard import LiveSocket

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PAGE_HOST = "type.example.test"

# A page that does all it can with what is typed: a "show password" button turning the
# field into type=text, the value copied into text, the title and a select's option.
PAGE = """<input id="p" type="password" aria-label="Pass">
<button id="show" onclick="document.getElementById('p').type = 'text'">Show</button>
<textarea id="t" aria-label="Notes"></textarea>
<p id="copy"></p>
<select id="s" aria-label="Choice"><option>first</option></select>
<script>
const p = document.getElementById("p");
p.addEventListener("input", () => {
  document.getElementById("copy").textContent = "You typed " + p.value;
  document.title = "Typed " + p.value;
  document.getElementById("s").options[0].text = p.value;
});
</script>"""


def shows_no_value(result: object) -> str:
    text = json.dumps(result, ensure_ascii=False)
    for value in (TYPED_SECRET, LONG_SECRET):
        assert value[:12] not in text, "a typed value came back"
    return text


@pytest.mark.parametrize("browser", ["chromium"])
async def test_every_result_masks_what_was_typed_from_a_secret(api: Api, sites: Sites) -> None:
    await api.service.parts.vault.put(
        WHO.tenant, "masked", "", [PAGE_HOST], {"short": TYPED_SECRET, "long": LONG_SECRET}
    )
    url = sites.url(PAGE_HOST, "/__fixture/html?body=" + quote(PAGE))
    await api.open(key="m", url=url)
    for selector, field in (("#p", "short"), ("#t", "long")):
        await api.call(
            "POST",
            "/v1/sessions/m/type-secret",
            {"selector": selector, "secret": "masked", "field": field},
        )
    clicked = await api.call("POST", "/v1/sessions/m/click", {"selector": "#show"})
    assert clicked["title"] == f"Typed {MASK}"

    snap = await api.call("POST", "/v1/sessions/m/snapshot")
    values = {e["name"]: e.get("value") for e in snap["elements"]}
    # The shown password (now type=text) and the textarea cut at 120 characters.
    assert values["Pass"] == MASK and values["Notes"] == MASK and values["Choice"] == MASK
    shows_no_value(snap)
    read = await api.call("POST", "/v1/sessions/m/read", {"max_chars": 300})
    assert f"You typed {MASK}" in shows_no_value(read)

    bad = await api.http.post("/v1/sessions/m/select", json={"selector": "#s", "value": "zzz"})
    assert bad.status_code == 400 and MASK in shows_no_value(bad.json())
    flow = await api.call(
        "POST",
        "/v1/sessions/m/flows",
        {
            "steps": [
                {"op": "snapshot"},
                {"op": "read"},
                {"op": "select", "selector": "#s", "value": "zzz"},
            ],
            "on_error": "continue",
        },
    )
    assert flow["steps"][2]["status"] == "failed" and MASK in shows_no_value(flow)
    current = await api.call("GET", "/v1/sessions/m")
    assert current["title"] == f"Typed {MASK}"

    async with Client(build_server(lambda: api.service, lambda _ctx: WHO)) as mcp:
        result = await mcp.call_tool("read", {"key": "m"})
    content = result.content[0]
    assert isinstance(content, TextContent)
    assert f"You typed {MASK}" in shows_no_value(result.model_dump())


@pytest.mark.parametrize("browser", ["chromium", "firefox"])
async def test_the_live_view_masks_what_was_typed_from_a_secret(api: Api, sites: Sites) -> None:
    """Found attacking issue #24 afresh (SPEC §10): the live socket's ``ready`` and ``page``
    messages carried the page's title and URL as the browser had them — a typed value the
    page put there in plain text, where every result shows ``•••`` and withholds a URL
    holding one. They mask it, and withhold such a URL, like every result."""
    await api.service.parts.vault.put(
        WHO.tenant, "masked", "", [PAGE_HOST], {"short": TYPED_SECRET}
    )
    go = "<button id='go' onclick='location.search = \"typed=\" + p.value'>Go</button>"
    url = sites.url(PAGE_HOST, "/__fixture/html?body=" + quote(PAGE + go))
    typed = {"selector": "#p", "secret": "masked", "field": "short"}
    await api.open(key="v", url=url)
    await api.call("POST", "/v1/sessions/v/type-secret", typed)
    live = LiveSocket(api, "v")

    async def told(match: dict[str, Any]) -> None:
        for _ in range(200):  # the watcher tells of a change within WATCH_EVERY
            if any(match.items() <= json.loads(t).items() for t in live.texts):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"no message {match}: {live.texts}")

    async with live.open():
        await live.send({"type": "navigate", "url": url})  # the page again, its field empty
        await api.call("POST", "/v1/sessions/v/type-secret", typed)
        await told({"type": "page", "title": f"Typed {MASK}"})
        await api.call("POST", "/v1/sessions/v/click", {"selector": "#go"})
        await told({"type": "page", "url_withheld": True})
    said = [json.loads(t) for t in live.texts]
    assert said[0]["type"] == "ready" and said[0]["title"] == f"Typed {MASK}", said[0]
    for text in live.texts:
        shows_no_value(text)
