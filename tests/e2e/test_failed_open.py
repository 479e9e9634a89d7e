"""A failed open leaves no browser (issue #8 item 6): an unsafe port, an oversize URL and
a page slower than the navigation timeout each used to leave a Chromium running that no
session or pool owned. Ten failed first opens must leave the browser count as it was.

Browsers are counted three ways: the Chromium main processes of this test's engine (the
run's chromedriver — other test runs on the machine have their own — or the mapper
engine's browsers in the test's data dir), the manager's live browsers, and the ledger's
open runs.
"""

from __future__ import annotations

import anyio
import pytest

from fixtures.sites import Sites
from processes import local_chromium
from sitekeep import limits
from sitekeep.config import Settings
from support import Api, ApiFactory

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.parametrize("browser", ["chromium"]),  # the bookkeeping is the service's
]


async def settled_count(settings: Settings, want: int) -> int:
    """The count of local Chromium main processes once it reaches ``want`` (a quit
    browser takes a moment to exit), or what it is after 15 s."""
    with anyio.move_on_after(15):
        while (count := len(local_chromium(settings))) != want:
            await anyio.sleep(0.05)
        return count
    return len(local_chromium(settings))


async def test_ten_failed_first_opens_leave_the_browser_count_as_it_was(
    make_api: ApiFactory, sites: Sites
) -> None:
    api: Api = await make_api(navigation_timeout=1.0)
    settings = api.service.parts.settings
    before = len(local_chromium(settings))
    slow = sites.url("app.example.test", "/__fixture/slow?ms=4000")
    oversize = sites.url("app.example.test", "/?q=" + "x" * limits.MAX_URL)
    unsafe = "http://app.example.test:1/"
    # Four start a browser (each costs one start), six are refused before one starts.
    cases = [unsafe, slow, oversize, oversize, unsafe, oversize, slow, oversize, oversize, oversize]
    statuses = []
    for i, url in enumerate(cases):
        reply = await api.http.post("/v1/sessions", json={"key": f"fail-{i}", "url": url})
        statuses.append(reply.status_code)
        assert set(reply.json()) == {"error"}
        assert not api.service.parts.browsers._live, (
            f"open {i} ({reply.status_code}) left a browser"
        )
        assert await api.service.parts.stores.runs.open_runs() == []
        assert await settled_count(settings, before) == before, f"open {i} left a Chromium"
    assert statuses == [502, 503, 400, 400, 502, 400, 503, 400, 400, 400]
