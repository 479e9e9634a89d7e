"""HTTP for people and tools (issue #14 item 6): ``GET /``, ``GET /v1/sessions``,
``/metrics`` in the Prometheus format, JSON logs."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from fixtures.sites import Sites
from sitekeep import __version__
from sitekeep.cli.logs import configure_logging
from support import Api, ApiFactory

SIGNED_IN = "App — signed in as alice"


SCRAPE = "scrape-dummy-0123456789abcdef"
"""The test's SITEKEEP_METRICS_TOKEN."""


def _anonymous(api: Api) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=api.http._transport, base_url="http://sitekeep.test")


def _scraper(api: Api, token: str = SCRAPE) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=api.http._transport,
        base_url="http://sitekeep.test",
        headers={"Authorization": f"Bearer {token}"},
    )


@pytest.fixture
async def scraped(make_api: ApiFactory) -> Api:
    """An :class:`Api` whose server has the scrape token :data:`SCRAPE`."""
    result: Api = await make_api(metrics_token=SecretStr(SCRAPE))
    return result


@pytest.mark.anyio
async def test_the_root_names_the_service_its_version_and_links(api: Api) -> None:
    reply = await _anonymous(api).get("/")
    assert reply.status_code == 200
    body = reply.json()
    assert (body["name"], body["version"]) == ("sitekeep", __version__)
    for link in ("/openapi.json", "/healthz", "/metrics", "/v1/sessions"):
        assert link in body["links"].values()
        assert (await _anonymous(api).get(link)).status_code in (200, 401), link


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.anyio
async def test_metrics_count_sessions_browsers_saves_restores_and_errors(
    scraped: Api, sites: Sites
) -> None:
    api = scraped
    await api.open(key="m1", url=sites.url("app.example.test", "/login"))
    await api.save("m1")
    await api.close("m1")
    assert (await api.open(key="m1"))["title"] == SIGNED_IN  # restored
    await api.call("GET", "/v1/sessions/nope", status=404)
    await api.call("POST", "/v1/sessions", {"key": "../x"}, status=400)
    reply = await _scraper(api).get("/metrics")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    got = _samples(reply.text)
    assert got[("sitekeep_sessions", ())] == 1
    assert got[("sitekeep_browsers", (("browser", "chromium"),))] == 1
    assert got[("sitekeep_save_seconds_count", (("outcome", "ok"),))] == 1
    assert got[("sitekeep_restore_seconds_count", (("outcome", "ok"),))] == 1
    assert got[("sitekeep_sessions_opened_total", ())] == 2
    assert got[("sitekeep_errors_total", (("type", "not_found"),))] == 1
    assert got[("sitekeep_errors_total", (("type", "invalid_input"),))] == 1
    assert "m1" not in reply.text and "app.example.test" not in reply.text


@pytest.mark.anyio
async def test_a_flood_of_metrics_requests_counts_the_sessions_once(
    scraped: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A leaked scrape token must be no lever: the gauge counts every session of every
    # tenant, by the store's count, never by listing the keys.
    api = scraped
    store = api.service.parts.stores.sessions
    scans: list[str] = []
    count, keys = store.count, store.keys

    async def counted(prefix: str) -> int:
        scans.append(prefix)
        return await count(prefix)

    async def listed(prefix: str) -> list[str]:
        scans.append("keys " + prefix)
        return await keys(prefix)

    monkeypatch.setattr(store, "count", counted)
    monkeypatch.setattr(store, "keys", listed)
    replies = await asyncio.gather(*(_scraper(api).get("/metrics") for _ in range(8)))
    replies.append(await _scraper(api).get("/metrics"))
    assert [r.status_code for r in replies] == [200] * 9
    assert scans == ["session/"]
    assert len({_samples(r.text)[("sitekeep_sessions", ())] for r in replies}) == 1


@pytest.mark.anyio
async def test_metrics_need_the_scrape_token_and_are_closed_without_one(
    api: Api, scraped: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its counts span every tenant (SPEC §12): no tenant's token, nor anyone, reads them
    # unless the operator set a scrape token; a refused scrape reads no store.
    admin = await scraped.service.catalogue.create_token("t1", "boss", "admin")
    scans: list[str] = []
    for served in (api, scraped):
        monkeypatch.setattr(
            served.service.parts.stores.sessions, "keys", lambda prefix: scans.append(prefix)
        )
    closed = await _anonymous(api).get("/metrics")
    assert closed.status_code == 401
    assert "SITEKEEP_METRICS_TOKEN" in closed.json()["error"]["message"]
    assert (await _scraper(api).get("/metrics")).status_code == 401  # not set here
    for header in (None, f"Bearer {admin}", f"Bearer {SCRAPE[:-1]}", f"Basic {SCRAPE}"):
        headers = {"Authorization": header} if header else {}
        refused = await _anonymous(scraped).get("/metrics", headers=headers)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "unauthorized"
        assert SCRAPE not in refused.text and admin not in refused.text
    assert scans == []
    assert repr(scraped.service.parts.settings).count(SCRAPE) == 0


@pytest.mark.anyio
async def test_the_sessions_list_holds_the_tenants_sessions_only(api: Api, sites: Sites) -> None:
    await api.open(key="mine", url=sites.url("app.example.test", "/"))
    other = await api.service.catalogue.create_token("t2", "agent", "member")
    theirs = await _anonymous(api).get("/v1/sessions", headers={"Authorization": f"Bearer {other}"})
    assert theirs.json() == {"sessions": []}
    (row,) = (await api.call("GET", "/v1/sessions"))["sessions"]
    assert (row["key"], row["owner"], row["url"]) == (
        "mine",
        "agent",
        sites.url("app.example.test"),
    )
    assert row["browser"] == {"kind": "chromium", "live": True}


@pytest.fixture
def root_handlers() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


@pytest.mark.usefixtures("root_handlers")
def test_the_http_client_logs_no_request_line_at_info() -> None:
    """httpx logs every request with its URL at INFO — a line per driver status poll, and
    a Grid URL's password (``http://user:pass@grid…``) with it."""
    stream = io.StringIO()
    configure_logging("info", "text", stream=stream)
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).info("HTTP Request: GET http://user:dummy-pass@grid.example.test/")
    logging.getLogger("sitekeep.test").info("kept")
    assert "dummy-pass" not in stream.getvalue() and "kept" in stream.getvalue()


@pytest.mark.usefixtures("root_handlers")
def test_json_logs_are_one_object_a_line_and_leave_an_exceptions_message_out() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream=stream)
    log = logging.getLogger("sitekeep.test")
    log.info("opened %s", "a session")
    try:
        raise ValueError("cookie value dummy-value-123")
    except ValueError:
        log.exception("a library failed")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "opened a session" and first["level"] == "INFO"
    assert second["exception"]["type"] == "builtins.ValueError"
    assert "dummy-value-123" not in stream.getvalue()
