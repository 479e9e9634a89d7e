"""Live sessions' tickets and records (SPEC §10) through the real app in-process, no
browser: a ticket is single use, short-lived and bound to its live session and owner; one
live session per owner. ``tests/ui/test_live.py`` streams a real browser."""

from __future__ import annotations

from typing import Any

import pytest

from sitekeep.errors import Unauthorized
from sitekeep.model import Principal
from sitekeep.service.live import TICKET_TTL
from support import WHO, Api

pytestmark = pytest.mark.anyio

OTHER = Principal(WHO.tenant, "someone-else", "member")


async def test_a_ticket_is_spent_by_its_first_use(api: Api) -> None:
    live, issued = await api.service.live._start(WHO, "s1")
    who, found, _ = await api.service.live.redeem(issued["ticket"], live.id)
    assert who == WHO and found == live
    with pytest.raises(Unauthorized):
        await api.service.live.redeem(issued["ticket"], live.id)


async def test_a_ticket_opens_only_its_own_live_session_and_only_in_time(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    live, issued = await api.service.live._start(WHO, "s1")
    theirs, _ = await api.service.live._start(OTHER, "s2")
    with pytest.raises(Unauthorized):  # another owner's live session
        await api.service.live.redeem(issued["ticket"], theirs.id)
    for ticket in (None, "", 7, "lt_forged", "x" * 300):
        with pytest.raises(Unauthorized):
            await api.service.live.redeem(ticket, live.id)
    late = await api.service.live.ticket(WHO, live.id)
    now = api.service.live._clock()
    monkeypatch.setattr(api.service.live, "_clock", lambda: now + TICKET_TTL + 1)
    with pytest.raises(Unauthorized):
        await api.service.live.redeem(late["ticket"], live.id)


async def test_one_live_session_per_owner_and_an_ended_one_takes_no_ticket(api: Api) -> None:
    first, early = await api.service.live._start(WHO, "s1")
    second, _ = await api.service.live._start(WHO, "s2")
    assert await api.service.live.why_over(first) == "replaced"
    assert await api.service.live.why_over(second) is None
    with pytest.raises(Unauthorized):  # a replaced live session's ticket opens nothing
        await api.service.live.redeem(early["ticket"], first.id)
    await api.call("POST", f"/v1/live-sessions/{first.id}/ticket", status=404)
    fresh = await api.call("POST", f"/v1/live-sessions/{second.id}/ticket")
    assert fresh["ticket"].startswith("lt_")
    ended = await api.call("DELETE", f"/v1/live-sessions/{second.id}")
    assert ended == {"id": second.id, "key": "s2", "ended": True}
    assert await api.service.live.why_over(second) == "ended"
    await api.call("POST", f"/v1/live-sessions/{second.id}/ticket", status=404)
    with pytest.raises(Unauthorized):
        await api.service.live.redeem(fresh["ticket"], second.id)


async def test_a_live_session_is_its_owners_alone(api: Api) -> None:
    theirs, _ = await api.service.live._start(OTHER, "s2")
    await api.call("POST", f"/v1/live-sessions/{theirs.id}/ticket", status=404)
    await api.call("DELETE", f"/v1/live-sessions/{theirs.id}", status=404)
    assert await api.service.live.why_over(theirs) is None


async def test_a_live_session_expires_after_its_ttl(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    live, _ = await api.service.live._start(WHO, "s1")
    later = live.expires_at + 1
    monkeypatch.setattr(api.service.live, "_clock", lambda: later)
    assert await api.service.live.why_over(live) == "expired"
    assert await api.service.live.current(WHO.tenant, WHO.subject) is None


async def test_bad_bodies_are_400_naming_the_field(api: Api) -> None:
    bad: Any = await api.call(
        "POST", "/v1/live-sessions", {"url": "file:///etc/passwd"}, status=400
    )
    assert bad["error"]["field"] == "url"
    bad = await api.call("POST", "/v1/live-sessions", {"keyz": "x"}, status=400)
    assert "keyz" in str(bad["error"])
