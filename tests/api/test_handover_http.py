"""The handed-out WebDriver endpoints over HTTP, without a browser (SPEC §21).

They take no bearer token (the grant in the path is the credential), answer in W3C
WebDriver's own error shape, refuse another site's page, and are not in the OpenAPI
document (they are WebDriver's protocol, not sitekeep's API).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from support import Api

pytestmark = pytest.mark.anyio

GRANT = "wd_" + "A" * 43


@pytest.fixture
async def anonymous(api: Api) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        transport=api.http._transport, base_url="http://sitekeep.test"
    ) as client:
        yield client


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", f"/v1/webdriver/{GRANT}/session/0123/url", 404, "invalid session id"),
        ("GET", "/v1/webdriver/not-a-grant/session/0123/url", 404, "invalid session id"),
        ("GET", f"/v1/webdriver/{GRANT}/sessions", 404, "unknown command"),
        ("POST", f"/v1/webdriver/{GRANT}/session", 500, "session not created"),
        ("GET", f"/v1/webdriver/{GRANT}", 404, "unknown command"),
        (
            "GET",
            f"/v1/webdriver/{GRANT}/session/0123/%2e%2e/%2e%2e/sessions",
            400,
            "invalid argument",
        ),
        ("GET", f"/v1/webdriver/{GRANT}/status?x=1", 400, "invalid argument"),
    ],
)
async def test_a_handover_path_answers_w3c_errors_without_a_token(
    anonymous: httpx.AsyncClient, method: str, path: str, status: int, code: str
) -> None:
    reply = await anonymous.request(method, path)
    assert reply.status_code == status, reply.text
    assert reply.json()["value"]["error"] == code
    assert reply.json()["value"]["stacktrace"] == ""
    assert reply.headers["cache-control"] == "no-store"


async def test_status_is_answered_by_the_handover_itself(anonymous: httpx.AsyncClient) -> None:
    reply = await anonymous.get(f"/v1/webdriver/{GRANT}/status")
    assert reply.status_code == 200
    assert reply.json()["value"]["ready"] is False


async def test_another_sites_page_is_refused(anonymous: httpx.AsyncClient) -> None:
    for headers in ({"Origin": "http://evil.example.test"}, {"Sec-Fetch-Site": "cross-site"}):
        reply = await anonymous.get(f"/v1/webdriver/{GRANT}/status", headers=headers)
        assert reply.status_code == 403 and reply.json()["value"]["error"] == "unknown error"


async def test_the_handover_endpoints_are_no_part_of_the_openapi_document(api: Api) -> None:
    paths = (await api.call("GET", "/openapi.json"))["paths"]
    assert not [p for p in paths if p.startswith("/v1/webdriver")]
    assert "/v1/sessions/{key}/webdriver" in paths
