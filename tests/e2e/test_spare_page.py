"""The spare page's same-site frames, in a real browser (SPEC §3, issue #15)."""

from __future__ import annotations

import pytest

from fixtures.sites import Sites
from sitekeep.browser.scripts import ACKS, inline_write
from sitekeep.browser.spare import SparePage, SpareResponder
from support import Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

BOXES = """() => JSON.stringify([...document.querySelectorAll("iframe")].map((f) => {
  const r = f.getBoundingClientRect();
  return [r.width, r.height, getComputedStyle(f).display];
}))"""


async def test_the_spare_frames_run_their_writes_but_take_no_layout(api: Api, sites: Sites) -> None:
    await api.open(key="f")
    live = await api.browser("f")
    origins = [sites.url(f"f{i}.example.test", "").rstrip("/") for i in range(3)]
    pages = {
        o: SparePage(script=inline_write({"local": {"k": f"dummy-{i}"}}, top=i == 0))
        for i, o in enumerate(origins)
    }
    async with SpareResponder(live.conn, [live.context]) as spare:
        await live.replace(spare.url(origins[0], origins[1:], pages))
        acks = await live.evaluate_json(ACKS, len(origins), 5000, await_promise=True)
        boxes = await live.evaluate_json(BOXES)
    assert acks == dict.fromkeys(origins, "ok"), "every frame should have written and answered"
    assert boxes == [[0, 0, "none"], [0, 0, "none"]], "the frames should take no layout"
