"""Property: what a browser held comes back byte-exact, or the report names it (issue #9).

Hypothesis generates site data — cookies with every attribute combination (host-only and
domain, paths, httpOnly, Secure, each SameSite, session and persistent past the 400-day
cap, values beyond Latin-1, names beyond ASCII) and storage with hostile keys and values
(lone surrogates, NUL, non-BMP, ``__proto__``, ``</script>``) — puts it into a real source
browser the ways pages do (``document.cookie``, ``Set-Cookie`` through BiDi, storage
written by the page's own script), saves it with the engine, stores it as the service does
(JSON bytes), restores it into a real target browser and reads it back independently:
Chromium→Chromium, Firefox→Firefox and across. Each example batches many items and reuses
four browsers for the module, so six examples per direction cover a few hundred items;
the ``fidelity-10k`` profile (``--hypothesis-profile fidelity-10k``) runs 125 per
direction, about 10,000 items (``pytest -s`` prints the count).

For every item the source held: the target holds it byte-exact (cookies: name, value,
domain, path, httpOnly, Secure, expiry — capped at 400 days — and a SameSite never wider
than the source's, as each browser applies it), or a save or restore report names it; the
target holds nothing else, and nothing it holds is named as not restored.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from fixtures.sites import Sites
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.manager import BrowserManager
from sitekeep.browser.restore import restore
from sitekeep.browser.save import lost_reason, save_read, settle_jar
from sitekeep.config import Settings
from sitekeep.cookies import MAX_AGE, cookie_host, cookie_label, to_bidi
from sitekeep.model import BrowserKind, Cookie, dump_site_data, load_site_data
from sitekeep.sitedata import compose

from .conftest import FIREFOX_PREFS

pytestmark = [pytest.mark.e2e]

HOST_RULES = '--host-resolver-rules="MAP *.example.test 127.0.0.1, MAP *.other.test 127.0.0.1"'
NOW = time.time()


@dataclass
class Rig:
    """Four browsers (a source and a target of each kind) on one event loop."""

    runner: asyncio.Runner
    sites: Sites
    browsers: dict[tuple[BrowserKind, str], LiveBrowser] = field(default_factory=dict)
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    items: dict[str, int] = field(default_factory=dict)
    """Items checked per direction (printed at the end: ``pytest -s``)."""


@pytest.fixture(scope="module")
def rig(
    sites: Sites, driver_url: str, cache_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Rig]:
    runner = asyncio.Runner()
    base = Settings(
        data_dir=tmp_path_factory.mktemp("property"),
        cache_dir=cache_dir,
        browser_args=HOST_RULES,
        session_store="memory://",
        warm_browsers=0,
        firefox_prefs=FIREFOX_PREFS,
    )
    managers = {
        "chromium": BrowserManager(base.model_copy(update={"webdriver_url": driver_url})),
        "firefox": BrowserManager(base),
    }
    found = Rig(runner, sites)
    try:
        for kind, manager in managers.items():
            for role in ("source", "target"):
                live = runner.run(manager.start(kind, pooled=False))  # type: ignore[arg-type]
                found.browsers[(kind, role)] = live  # type: ignore[index]
        yield found
        print(f"\nitems checked per direction: {found.items}")
    finally:
        for manager in managers.values():
            runner.run(manager.close_all())
            manager.stop_local_drivers()
        runner.close()


# -- what hypothesis generates ----------------------------------------------------------------

HOSTILE = st.sampled_from(
    ["\ud800", "\udfff", "\uda7e", "\x00", "😀", "__proto__", "</script>", "\u2028", "é", "你"]
)
STORAGE_TEXT = st.lists(st.one_of(st.text(max_size=6), HOSTILE), max_size=4).map("".join)
COOKIE_CHARS = st.characters(
    exclude_categories=("Cc", "Cs", "Zl", "Zp"), exclude_characters=';,"\\'
)
COOKIE_VALUE = st.text(COOKIE_CHARS, max_size=12).map(lambda v: v.strip(" \t"))
COOKIE_NAME = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789-_.!é你"), min_size=1, max_size=6
)


@st.composite
def cookies(draw: st.DrawFn) -> dict[str, Any]:
    secure = draw(st.booleans())
    same_site = draw(st.sampled_from(["strict", "lax", "default"] + (["none"] if secure else [])))
    days = draw(st.one_of(st.none(), st.integers(1, 500)))
    return {
        "name": draw(COOKIE_NAME),
        "value": draw(COOKIE_VALUE),
        "where": draw(st.sampled_from(["host", "domain", "sub"])),
        "path": draw(st.sampled_from(["/", "/p", "/p/q"])),
        "http_only": draw(st.booleans()),
        "secure": secure,
        "same_site": same_site,
        "expiry": None if days is None else int(NOW) + days * 86400,
        "by_script": draw(st.booleans()),
    }


SITE_DATA = st.fixed_dictionaries(
    {
        "cookies": st.lists(cookies(), max_size=16),
        "local": st.lists(
            st.dictionaries(STORAGE_TEXT, STORAGE_TEXT, max_size=10), min_size=2, max_size=2
        ),
        "session": st.dictionaries(STORAGE_TEXT, STORAGE_TEXT, max_size=6),
    }
)

# -- putting it in, reading it out ------------------------------------------------------------

SET_STORAGE = """(items, session) => {
  for (const [k, v] of JSON.parse(items)) (session ? sessionStorage : localStorage).setItem(k, v);
  return "null";
}"""
DUMP_STORAGE = """(session) => {
  const s = session ? sessionStorage : localStorage;
  const out = [];
  for (let i = 0; i < s.length; i++) { const k = s.key(i); out.push([k, s.getItem(k)]); }
  return JSON.stringify(out);
}"""


def jsonable(items: dict[str, str]) -> str:
    return json.dumps(sorted(items.items()), ensure_ascii=True)


async def put(live: LiveBrowser, data: dict[str, Any], origins: list[str], host: str) -> None:
    """Storage by each origin's page script; cookies by document.cookie or BiDi."""
    for i, origin in enumerate(origins):
        await live.navigate(f"{origin}/__fixture/page")
        await live.evaluate_json(SET_STORAGE, jsonable(data["local"][i]), False)
    await live.evaluate_json(SET_STORAGE, jsonable(data["session"]), True)
    await live.navigate(f"{origins[0]}/__fixture/page")  # the page on ``host``
    for raw in data["cookies"]:
        domain = {"host": host, "domain": "." + host, "sub": "w." + host}[raw["where"]]
        if (
            raw["by_script"]
            and raw["where"] == "host"
            and not raw["http_only"]
            and not raw["secure"]
        ):
            attrs = f"; path={raw['path']}"
            if raw["expiry"] is not None:
                attrs += f"; max-age={raw['expiry'] - int(time.time())}"
            if raw["same_site"] != "default":
                attrs += f"; samesite={raw['same_site']}"
            line = json.dumps(f"{raw['name']}={raw['value']}{attrs}", ensure_ascii=True)
            await live.evaluate_json(f"() => {{ document.cookie = {line}; return 'null'; }}")
            continue
        cookie = Cookie(
            name=raw["name"],
            value=raw["value"],
            domain=domain,
            path=raw["path"],
            http_only=raw["http_only"],
            secure=raw["secure"],
            same_site=raw["same_site"],
            expiry=raw["expiry"],
        )
        await live.conn.send("storage.setCookie", {"cookie": to_bidi(cookie, live.ref.kind)})
    await live.navigate(f"{origins[-1]}/__fixture/page")  # the tab's sessionStorage origin


async def held(live: LiveBrowser, origins: list[str], suffix: str) -> dict[str, Any]:
    """What ``live`` holds for this example: its jar and each origin's storage."""
    jar = (await live.conn.send("storage.getCookies", {}))["cookies"]
    mine = {
        (c["name"], c["domain"], c["path"]): c
        for c in jar
        if c["domain"].lstrip(".").endswith(suffix)
    }
    local = {}
    for origin in origins:
        await live.navigate(f"{origin}/__fixture/page")
        local[origin] = dict(map(tuple, await live.evaluate_json(DUMP_STORAGE, False)))
    session = dict(map(tuple, await live.evaluate_json(DUMP_STORAGE, True)))
    return {"jar": mine, "local": local, "session": session}


# -- the property -----------------------------------------------------------------------------

WIDTH = {
    # How far a cookie travels cross-site, as each browser applies SameSite: Chromium
    # treats unspecified as Lax (its "default" write is stored as lax), Firefox as None.
    "chromium": {"strict": 0, "lax": 1, "default": 1, "none": 3},
    "firefox": {"strict": 0, "lax": 1, "default": 3, "none": 3},
}


def named(reports: list[dict[str, Any]], site: str, cookie: str | None = None) -> bool:
    for r in reports:
        reason = r.get("reason", "")
        if cookie is None and (r["site"] == site or r["site"] in site):
            return True
        if cookie is not None and r["site"] == site and cookie in reason:
            return True
    return False


def same_expiry(before: Any, after: Any) -> bool:
    if before is None or after is None:
        return before == after
    capped = time.time() + MAX_AGE - 300
    return int(before) == int(after) or (before > capped and after > capped)


def check(
    source: BrowserKind,
    target: BrowserKind,
    before: dict[str, Any],
    after: dict[str, Any],
    reports: list[dict[str, Any]],
) -> int:
    """Assert the property; returns how many items were checked."""
    for key, c in before["jar"].items():
        host = c["domain"].lstrip(".").lower()
        got = after["jar"].get(key)
        if got is None:
            assert named(reports, host, cookie_label(*key)), f"cookie {c} lost unnamed: {reports}"
            continue
        assert not named(reports, host, cookie_label(*key)), f"cookie {key} is there but named"
        for attr in ("value", "httpOnly", "secure"):
            assert got[attr] == c[attr], (key, attr, c[attr], got[attr])
        assert same_expiry(c.get("expiry"), got.get("expiry")), key
        assert WIDTH[target][got["sameSite"]] <= WIDTH[source][c["sameSite"]], (key, c, got)
    assert set(after["jar"]) <= set(before["jar"]), "the target holds a cookie the source did not"
    for origin, items in before["local"].items():
        if after["local"][origin] != items:
            diff = {
                k: (items.get(k), after["local"][origin].get(k))
                for k in {*items, *after["local"][origin]}
                if items.get(k) != after["local"][origin].get(k)
            }
            assert named(reports, origin), f"{origin}'s localStorage changed unnamed: {diff!r}"
    if after["session"] != before["session"]:
        assert named(reports, list(before["local"])[-1]), "sessionStorage changed unnamed"
    return len(before["jar"]) + sum(map(len, before["local"].values())) + len(before["session"])


async def round_trip(
    rig: Rig, source: BrowserKind, target: BrowserKind, data: dict[str, Any]
) -> int:
    n = next(rig.numbers)
    host, other = (
        f"c{n}{source[0]}{target[0]}.example.test",
        f"s{n}{source[0]}{target[0]}.other.test",
    )
    origins = [rig.sites.url(host).rstrip("/"), rig.sites.url(other).rstrip("/")]
    a, b = rig.browsers[(source, "source")], rig.browsers[(target, "target")]
    await put(a, data, origins, host)
    before = await held(a, origins, host)
    await a.navigate(f"{origins[-1]}/__fixture/page")

    read = await save_read(a, origins[::-1], deadline=10.0)
    jar = [c for c in settle_jar(a, read.cookies, ()) if cookie_host(c).endswith(host)]
    snapshot, skipped = compose(
        None,
        cookies=jar,
        read=read.local,
        session=read.session,
        not_read=read.not_read,
        visit_order=origins[::-1],
        saved_at=time.time(),
        cap=16 * 1024 * 1024,
    )
    reports = [s.as_json() for s in skipped]
    reports += [
        lost_reason(c).as_json() for c in read.lost_cookies if cookie_host(c).endswith(host)
    ]
    report = await restore(b, load_site_data(dump_site_data(snapshot)), None, now=time.time())
    reports += report.as_json()["skipped"] + report.warnings
    after = await held(b, origins, host)
    return check(source, target, before, after, reports)


CAMPAIGN = settings.get_profile("fidelity-10k")
IN_CAMPAIGN = settings.default.max_examples == CAMPAIGN.max_examples
EXAMPLES = CAMPAIGN.max_examples if IN_CAMPAIGN else 6
"""Six examples per direction in the suite (a few hundred items); the campaign's 125."""

DIRECTIONS = [
    ("chromium", "chromium"),
    ("firefox", "firefox"),
    ("chromium", "firefox"),
    ("firefox", "chromium"),
]


@pytest.mark.parametrize(("source", "target"), DIRECTIONS)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # no shrinking in real browsers
)
@given(data=SITE_DATA)
def test_every_item_comes_back_byte_exact_or_is_named(
    rig: Rig, source: BrowserKind, target: BrowserKind, data: dict[str, Any]
) -> None:
    checked = rig.runner.run(round_trip(rig, source, target, data))
    direction = f"{source}->{target}"
    rig.items[direction] = rig.items.get(direction, 0) + checked
