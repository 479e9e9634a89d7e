"""What the browser held is what comes back, or the report says what did not (issue #9).

Each test keeps one input of a kind as a regression, in both browsers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fixtures.sites import Sites
from sitekeep.browser.live import LiveBrowser
from sitekeep.history import origin_of
from support import Api, ApiFactory

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def run_js(live: LiveBrowser, body: str, context: str | None = None) -> Any:
    """Run ``body`` (a function body returning a JSON-able value) in the page."""
    return await live.evaluate_json(
        f"() => JSON.stringify((() => {{ {body} }})())", context=context
    )


HOSTILE_JS = r"""
const lone = "x" + String.fromCharCode(0xDA7E) + "y";
return [
  ["bad", lone],
  [String.fromCharCode(0xDC00) + "key", "low"],
  ["nul", "a\u0000b"],
  ["emoji", "\u{1F600}\u{1F680}"],
  ["half", String.fromCharCode(0xD83D)],
  ["script", "</script><!--"],
  ["__proto__", "proto"],
];
"""


async def storage_codes(live: LiveBrowser, which: str) -> list[list[list[int]]]:
    """Every key and value of the page's ``which`` storage as UTF-16 code units, sorted."""
    codes: list[list[list[int]]] = await run_js(
        live,
        "const dump = (s) => Array.from({length: s.length}, (_, i) => s.charCodeAt(i));"
        f"const out = []; for (let i = 0; i < {which}.length; i++) "
        f"{{ const k = {which}.key(i); out.push([dump(k), dump({which}.getItem(k))]); }}"
        "return out.sort((a, b) => a[0].join().localeCompare(b[0].join()));",
    )
    return codes


async def test_lone_surrogates_nul_and_non_bmp_survive_and_other_origins_come_back(
    api: Api, sites: Sites
) -> None:
    await api.open(key="u")
    await api.go("u", sites.url("app.example.test", "/login"))
    await api.go("u", sites.url("token.example.test", "/login"))
    await api.go("u", sites.url("a.example.test", "/__fixture/page"))
    live = await api.browser("u")
    await run_js(
        live,
        "for (const [k, v] of (() => {" + HOSTILE_JS + "})()) "
        "{ localStorage.setItem(k, v); sessionStorage.setItem(k, v); }"
        "document.title = 't' + String.fromCharCode(0xD800); return null;",
    )
    local_before = await storage_codes(live, "localStorage")
    session_before = await storage_codes(live, "sessionStorage")
    assert len(local_before) == 7

    saved = await api.save("u")  # was: 500 (UnicodeEncodeError in the size computation)
    assert saved["saved"]["skipped"] == []
    assert saved["title"] == "t\ufffd"  # a result is well-formed; the snapshot is exact
    await api.close("u")

    opened = await api.open(key="u")
    assert opened["site_data"]["skipped"] == []
    live = await api.browser("u")
    assert await storage_codes(live, "localStorage") == local_before
    assert await storage_codes(live, "sessionStorage") == session_before
    assert (await api.go("u", sites.url("app.example.test")))["title"] == (
        "App — signed in as alice"
    )
    assert (await api.go("u", sites.url("token.example.test")))["title"] == (
        "Token — signed in as bob"
    )


async def test_over_the_cap_the_big_cache_goes_and_the_sign_in_stays(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(snapshot_cap=1_000_000)
    await api.open(key="c")
    await api.go("c", sites.url("token.example.test", "/login"))
    live = await api.browser("c")
    await run_js(live, "localStorage.setItem('cache', 'c'.repeat(1500000)); return null;")
    await api.go("c", sites.url("tabs.example.test", "/"))
    saved = await api.save("c")

    token = origin_of(sites.url("token.example.test"))
    assert saved["saved"]["skipped"] == [
        {
            "site": token,
            "key": "cache",
            "bytes": 1_500_002,
            "reason": "left out: the snapshot passed its 1000000-byte cap: "
            "its largest values go first",
        }
    ]
    assert token in saved["saved"]["sites"]
    await api.close("c")
    opened = await api.open(key="c", url=sites.url("token.example.test"))
    assert opened["title"] == "Token — signed in as bob"  # was: signed out
    assert json.dumps(opened).count("cache") == 0
