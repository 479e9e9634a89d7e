"""No clipboard carries a typed secret to another host (SPEC §7; attacker review H1): in a
session where a secret was typed, ``press`` refuses copy, cut and paste chords — over HTTP
and as a flow step — and the other host's page receives nothing. What reached it is what
the recorder host recorded (``Sites.events``)."""

from __future__ import annotations

import pytest

from fixtures.sites import REC_HOST, REC_OTHER_HOST, TYPED_SECRET, Sites
from support import WHO, Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.parametrize("browser", ["chromium"])]


async def press(api: Api, keys: str) -> tuple[int, dict[str, object]]:
    reply = await api.http.post("/v1/sessions/c/press", json={"keys": keys})
    body = reply.json()
    return reply.status_code, body.get("error", body)


async def test_a_typed_secret_cannot_be_copied_to_another_host(api: Api, sites: Sites) -> None:
    await api.service.secrets.put(WHO.tenant, "clip", "", [REC_HOST], {"short": TYPED_SECRET})
    await api.open(key="c", url=sites.url(REC_HOST, "/"))
    assert (await press(api, "Control+C"))[0] == 200  # no secret typed yet: allowed

    await api.call(
        "POST",
        "/v1/sessions/c/type-secret",
        {"selector": "#rec", "secret": "clip", "field": "short"},
    )
    await api.call("POST", "/v1/sessions/c/click", {"selector": "#rec"})
    assert (await press(api, "Control+A"))[0] == 200  # not a clipboard key
    for chord in ("Control+C", "Meta+c", "Control+x", "Shift+Delete", "Tab Control+Shift+C"):
        status, error = await press(api, chord)
        assert (status, error.get("type"), error.get("field")) == (
            403,
            "clipboard_not_allowed",
            "keys",
        )

    await api.go("c", sites.url(REC_OTHER_HOST, "/"))
    mark = len(sites.events(REC_OTHER_HOST))
    status, error = await press(api, "Control+V")
    assert (status, error.get("type")) == (403, "clipboard_not_allowed")
    flow = await api.call(
        "POST",
        "/v1/sessions/c/flows",
        {"steps": [{"op": "press", "keys": "Meta+V"}, {"op": "press", "keys": "Shift+Delete"}],
         "on_error": "continue"},
    )  # fmt: skip
    assert [s["error"]["type"] for s in flow["steps"]] == ["clipboard_not_allowed"] * 2
    assert sites.events(REC_OTHER_HOST)[mark:] == []  # no key, input or paste event
    assert all(TYPED_SECRET not in e["body"] for e in sites.recorded(REC_OTHER_HOST))


async def test_a_flow_that_types_a_secret_cannot_copy_it_in_a_later_step(
    api: Api, sites: Sites
) -> None:
    await api.service.secrets.put(WHO.tenant, "clip", "", [REC_HOST], {"short": TYPED_SECRET})
    await api.open(key="f", url=sites.url(REC_HOST, "/"))
    flow = await api.call(
        "POST",
        "/v1/sessions/f/flows",
        {"steps": [{"op": "type_secret", "selector": "#rec", "secret": "clip", "field": "short"},
                   {"op": "press", "keys": "Control+A"},
                   {"op": "press", "keys": "Control+C"}],
         "on_error": "continue"},
    )  # fmt: skip
    assert [s["status"] for s in flow["steps"]] == ["ok", "ok", "failed"]
    assert flow["steps"][2]["error"]["type"] == "clipboard_not_allowed"
