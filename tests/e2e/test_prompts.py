"""A page's user prompts are answered the same way on both local Chromium engines: the
default W3C ``unhandledPromptBehavior`` chromedriver runs with ("dismiss and notify": alert,
confirm and prompt dismissed) and ``beforeunload`` accepted, so a page can neither hold a
call on an open prompt nor keep the browser from leaving it (SPEC §2; measured on both
engines: /tmp/mapper15/prompts.py)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from fixtures.sites import Sites
from support import Api

from .test_fidelity import run_js

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.e2e,
    pytest.mark.parametrize("browser", ["chromium"]),
    pytest.mark.parametrize("via", ["local", "mapper"]),
]


async def _title_becomes(api: Api, key: str, prefix: str) -> str:
    live = await api.browser(key)
    with anyio.fail_after(10):
        while not (title := str(await run_js(live, "return document.title;"))).startswith(prefix):
            await anyio.sleep(0.05)
    return title


async def test_alert_confirm_and_prompt_are_dismissed_and_the_page_goes_on(
    api: Api, sites: Sites
) -> None:
    await api.open(key="k", url=sites.url("app.example.test"))
    script = (
        "setTimeout(() => { alert('a'); const c = confirm('c'); const p = prompt('p', 'd');"
        " document.title = 'answered ' + c + ' ' + p; }, 0); return 1;"
    )
    await run_js(await api.browser("k"), script)
    assert await _title_becomes(api, "k", "answered") == "answered false null"
    assert (await api.go("k", sites.url("app.example.test")))["title"]


async def test_a_page_asking_to_stay_on_beforeunload_is_left(api: Api, sites: Sites) -> None:
    await api.open(key="k", url=sites.url("app.example.test"))
    live = await api.browser("k")
    await run_js(
        live,
        "addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = ''; });"
        "return 1;",
    )
    click: dict[str, Any] = {  # the prompt needs a user gesture on the page
        "type": "pointer",
        "id": "mouse",
        "actions": [
            {"type": "pointerMove", "x": 5, "y": 5},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0},
        ],
    }
    await live.conn.send("input.performActions", {"context": live.context, "actions": [click]})
    landed = await api.go("k", sites.url("shop.example.test"))
    assert landed["url"].startswith(sites.url("shop.example.test"))
