"""Flows on real Chromium (SPEC §6, §4): a report per step, on_error, one history write at
the end, and a save step that reads the pages reached before it."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from fixtures.sites import Sites
from sitekeep.history import origin_of
from support import WHO, Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: ``on_start`` lives across tests


@pytest.fixture(scope="module")
async def on_start(module_api: Api, sites: Sites) -> Api:
    """Session ``m`` on a page titled "Start", one per browser kind for the module: the
    malformed-flow tests each prove nothing ran, so they can share it."""
    await module_api.open(key="m", url=sites.url("a.example.test", "/__fixture/page?title=Start"))
    return module_api


async def test_a_flow_reports_each_step_and_stops_at_a_failure(api: Api, sites: Sites) -> None:
    await api.open(key="f")
    report = await api.call(
        "POST",
        "/v1/sessions/f/flows",
        {
            "steps": [
                {"op": "navigate", "url": sites.url("a.example.test", "/__fixture/page?title=A")},
                {"op": "assert_text", "text": "A"},
                {"op": "click", "selector": "#missing"},
                {"op": "navigate", "url": sites.url("b.example.test", "/__fixture/page")},
            ]
        },
    )
    assert report["ok"] is False
    assert [s["status"] for s in report["steps"]] == ["ok", "ok", "failed", "not run"]
    failed = report["steps"][2]
    assert failed["error"]["type"] == "not_found" and failed["title"] == "A"
    assert report["title"] == "A"  # where the flow left the browser


async def test_a_failed_step_continued_past_still_enters_its_page_in_the_history(
    api: Api, sites: Sites
) -> None:
    await api.open(key="c")
    moved_to = sites.url("y.example.test", "/__fixture/page?title=Y")
    # It moves on 0.8 s after it starts parsing: well after the navigate step has read
    # where it landed (a slow machine took over 0.1 s), well before the wait gives up.
    wanders = sites.url("x.example.test", f"/__fixture/later?ms=800&to={quote(moved_to)}")
    report = await api.call(
        "POST",
        "/v1/sessions/c/flows",
        {
            "steps": [
                {"op": "navigate", "url": wanders},
                {"op": "wait_for", "text": "never shown", "timeout": 2.5, "on_error": "continue"},
                {"op": "navigate", "url": sites.url("z.example.test", "/__fixture/page?title=Z")},
            ]
        },
    )
    assert [s["status"] for s in report["steps"]] == ["ok", "failed", "ok"]
    assert report["steps"][0]["title"] == "Later"  # the navigate step landed on x
    assert report["steps"][1]["title"] == "Y"  # the page moved on while the step waited
    record = await api.service.views.record(WHO, "c")
    hosts = [origin_of(e.url) for e in record.history]
    assert hosts[:3] == [
        origin_of(sites.url("z.example.test")),
        origin_of(sites.url("y.example.test")),
        origin_of(sites.url("x.example.test")),
    ]


async def test_a_save_step_reads_the_pages_the_flow_reached_before_it(
    api: Api, sites: Sites
) -> None:
    await api.open(key="s")
    report = await api.call(
        "POST",
        "/v1/sessions/s/flows",
        {
            "on_error": "stop",
            "steps": [
                {"op": "navigate", "url": sites.url("m.example.test", "/__fixture/ls?k=dummy-m")},
                {"op": "navigate", "url": sites.url("n.other.test", "/__fixture/ls?k=dummy-n")},
                {"op": "navigate", "url": sites.url("tabs.example.test", "/")},
                {"op": "save_site_data"},
            ],
        },
    )
    assert report["ok"] is True
    saved = report["steps"][3]["saved"]
    assert origin_of(sites.url("m.example.test")) in saved["sites"]
    assert origin_of(sites.url("n.other.test")) in saved["sites"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"steps": []}, "steps"),
        ({"steps": [{"op": "fly"}]}, "steps[0].op"),
        ({"steps": [{"op": "navigate"}]}, "steps[0].url"),
        ({"steps": [{"op": "navigate", "url": "file:///x"}, {"op": "back"}]}, None),
        ({"steps": [{"op": "back", "on_error": "panic"}]}, "steps[0].on_error"),
        ({"steps": [{"op": "back"}], "on_error": "maybe"}, "on_error"),
    ],
)
async def test_a_malformed_flow_is_refused_before_any_step_runs(
    on_start: Api, body: dict[str, object], field: str | None
) -> None:
    api = on_start
    reply = await api.http.post("/v1/sessions/m/flows", json=body)
    if field is None:  # a refused URL is a failed step, not a malformed flow
        assert reply.status_code == 200
        assert reply.json()["steps"][0]["error"]["field"] == "url"
    else:
        assert reply.status_code == 400, reply.text
        assert reply.json()["error"]["field"] == field
    # The session is shared by these cases: no step ran (or, stopped at the failed one,
    # no later step), so it is still on its first page.
    assert (await api.call("GET", "/v1/sessions/m"))["title"] == "Start"
