"""The journal wired into the seam, on real Chromium through the real app (SPEC §8):
every call journaled begin → finish with redacted arguments, the refs a finish names, the
admin timeline, and the journal gone with its session."""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx
import pytest

from fixtures.sites import FORM_USER, Sites
from sitekeep.journal import JournalKey
from sitekeep.service import Service
from support import WHO, Api, ApiFactory

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.parametrize("browser", ["chromium"])]

TYPED = "dummy-typed-text-41"
REDIS = "redis://127.0.0.1:6379/0"


async def lines(service: Service, key: str) -> list[dict[str, Any]]:
    """The session's journal, record by record, as its backend holds it."""
    entries = await service.parts.journal.backend.entries(
        JournalKey(WHO.tenant, key), after=None, limit=10_000
    )
    return [json.loads(e.data) for e in entries]


def ref_of(snapshot: dict[str, Any], role: str, name: str) -> str:
    return next(
        str(e["ref"]) for e in snapshot["elements"] if (e["role"], e["name"]) == (role, name)
    )


async def admin_client(api: Api, tenant: str = WHO.tenant) -> httpx.AsyncClient:
    token = await api.service.catalogue.create_token(tenant, "boss", "admin")
    return httpx.AsyncClient(
        transport=api.http._transport,
        base_url="http://sitekeep.test",
        headers={"Authorization": f"Bearer {token}"},
    )


async def test_every_call_is_journaled_redacted_with_its_refs_and_the_timeline_shows_it(
    api: Api, sites: Sites
) -> None:
    login = sites.url("form.example.test", "/login")
    await api.open(key="j", url=login)
    await api.go("j", login + "?code=dummy-oauth-code#frag")
    snap = await api.call("POST", "/v1/sessions/j/snapshot")
    await api.call(
        "POST", "/v1/sessions/j/type", {"ref": ref_of(snap, "textbox", "Username"), "text": TYPED}
    )
    await api.call("POST", "/v1/sessions/j/read", {})
    flow = await api.call(
        "POST",
        "/v1/sessions/j/flows",
        {"steps": [{"op": "type", "selector": "#pass", "text": TYPED}, {"op": "save_site_data"}]},
    )
    assert flow["ok"] is True

    written = await lines(api.service, "j")
    raw = json.dumps(written)
    assert TYPED not in raw and "dummy-oauth-code" not in raw and "frag" not in raw
    kinds = [(r["type"], r["op"], r.get("mark")) for r in written]
    assert kinds[:4] == [
        ("begin", "open_session", None),
        ("mark", None, "opened"),
        ("finish", "open_session", None),
        ("begin", "navigate", None),
    ]
    finishes = {r["op"]: r for r in written if r["type"] == "finish"}
    snapshot_record = next(r for r in written if r["type"] == "snapshot")
    assert finishes["snapshot"]["effects"]["refs"] == {
        "status": "replaced",
        "snapshot": snapshot_record["id"],
    }
    assert snapshot_record["count"] == len(snap["elements"])
    assert finishes["read"]["effects"]["refs"]["status"] == "reused"
    assert finishes["navigate"]["effects"]["page"] == login  # no query, no fragment
    steps = [r for r in written if r["call"] == written[-1]["call"] and r["type"] != "mark"]
    assert [(r["type"], r["op"], r["step"]) for r in steps] == [
        ("begin", "run_flow", None),
        ("begin", "type", 0),
        ("finish", "type", 0),
        ("begin", "save_site_data", 1),
        ("finish", "save_site_data", 1),
        ("finish", "run_flow", None),
    ]
    # The save's counts ride on its finish: no separate mark, one fsync less (issue #15).
    save_finish = next(r for r in steps if r["type"] == "finish" and r["op"] == "save_site_data")
    assert set(save_finish["effects"]["saved"]) == {"cookies", "sites", "skipped"}
    assert all(isinstance(v, int) for v in save_finish["effects"]["saved"].values())
    assert not any(r.get("mark") == "saved" for r in written)
    state = (await api.service.parts.journal.replay(JournalKey(WHO.tenant, "j"))).state
    assert state.last_save is not None and state.last_save.record == save_finish["id"]
    for record in written[1:]:
        assert record["parent"] is not None  # one branch, each on the one before
    assert [r["parent"] for r in written[1:]] == [r["id"] for r in written[:-1]]

    admin = await admin_client(api)
    page = (await admin.get("/admin/sessions/j/journal", params={"limit": 3})).json()
    # Three records: a begin and its finish make one row, the mark another.
    assert [(row["op"], row.get("mark")) for row in page["rows"]] == [
        ("open_session", None),
        (None, "opened"),
    ]
    assert page["rows"][0]["outcome"] == "ok" and page["rows"][0]["url"] == login
    rest = (await admin.get("/admin/sessions/j/journal", params={"after": page["next"]})).json()
    typed = next(row for row in rest["rows"] if row.get("op") == "type")
    assert typed["args"]["text"] == {"length": len(TYPED)} and typed["duration"] >= 0
    assert rest["next"] is None and TYPED not in json.dumps(rest)

    member = await api.http.get("/admin/sessions/j/journal")
    assert member.status_code == 403
    assert (await admin.get("/admin/sessions/nope/journal")).status_code == 404
    bad = await admin.get("/admin/sessions/j/journal", params={"limit": 0})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "limit"
    intruder = await admin_client(api, "t2")
    assert (await intruder.get("/admin/sessions/j/journal")).status_code == 404

    await api.call("DELETE", "/v1/sessions/j")
    assert await api.service.parts.journal.backend.head(JournalKey(WHO.tenant, "j")) is None
    assert (await admin.get("/admin/sessions/j/journal")).status_code == 404


@pytest.mark.parametrize("journal", ["files", "redis"])
async def test_a_failed_operation_is_finished_as_failed_and_a_new_browser_invalidates_refs(
    make_api: ApiFactory, sites: Sites, journal: str
) -> None:
    """Over both backends: the Redis Streams one is what several replicas share."""
    url = REDIS + f"?prefix=sitekeep-test-{secrets.token_hex(6)}:"
    api: Api = await make_api(**({"journal_url": url} if journal == "redis" else {}))
    await api.open(key="f", url=sites.url("form.example.test", "/login"))
    snap = await api.call("POST", "/v1/sessions/f/snapshot")
    missing = await api.http.post("/v1/sessions/f/click", json={"selector": "#nothing-here"})
    assert missing.status_code == 404
    failed = [r for r in await lines(api.service, "f") if r["type"] == "finish"][-1]
    assert failed["op"] == "click" and failed["outcome"] == "failed"
    assert failed["error"]["type"] == "not_found"

    await api.close("f")  # the next call reopens silently: a new browser generation
    reply = await api.http.post(
        "/v1/sessions/f/click", json={"ref": ref_of(snap, "button", "Sign in")}
    )
    assert reply.status_code == 409 and reply.json()["error"]["type"] == "stale_ref"
    written = await lines(api.service, "f")
    reopened = next(r for r in written if r.get("mark") == "reopened")
    assert reopened["generation"] != written[1]["generation"]  # opened's
    state = (await api.service.parts.journal.replay(JournalKey(WHO.tenant, "f"))).state
    assert state.refs is None and state.settled and state.generation == reopened["generation"]
    assert FORM_USER not in json.dumps(written)
    await api.call("DELETE", "/v1/sessions/f")  # and its journal with it (Redis keys too)
    assert await api.service.parts.journal.backend.keys(WHO.tenant) == []
