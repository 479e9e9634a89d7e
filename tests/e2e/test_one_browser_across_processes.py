"""One session, one browser, across processes (issue #8 item 7; SPEC §13): a real
``sitekeep serve`` and a real ``sitekeep mcp`` on one data dir share the per-session lock
(a lock file in the data dir), so parallel opens of a new key split across the two make one
browser, and parallel navigates of both wait their turn instead of failing."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters

from conftest import HOST_RULES
from fixtures.serve import MARK, SITEKEEP, Serve, browsers, new_mark, sitekeep_env
from fixtures.sites import Sites
from sitekeep.config import Settings
from support import make_token

from .conftest import FIREFOX_PREFS

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def embedded(tmp_path: Path, cache_dir: Path, browser: str) -> Iterator[tuple[dict[str, str], str]]:
    """The environment of an embedded data dir (its own drivers), marked; and a token."""
    mark = new_mark()
    data_dir = tmp_path / "data"
    env = sitekeep_env(
        SITEKEEP_DATA_DIR=str(data_dir),
        SITEKEEP_CACHE_DIR=str(cache_dir),
        SITEKEEP_BROWSER_ARGS=HOST_RULES,
        SITEKEEP_BROWSER=browser,
        SITEKEEP_FIREFOX_PREFS=json.dumps(FIREFOX_PREFS),
        SITEKEEP_WARM_BROWSERS="0",
        **{MARK: mark},
    )
    token = make_token(Settings(data_dir=data_dir), role="admin")
    yield env, token
    subprocess.run([SITEKEEP, "stop"], env=env, capture_output=True, timeout=120)
    assert browsers(mark) == []


async def test_serve_and_mcp_on_one_data_dir_make_one_browser_and_take_turns(
    embedded: tuple[dict[str, str], str], sites: Sites
) -> None:
    env, token = embedded
    mark = env[MARK]
    serve = Serve(env).start()
    params = StdioServerParameters(
        command=SITEKEEP, args=["mcp"], env={**env, "SITEKEEP_TOKEN": token}
    )
    try:
        async with (
            Client(params, read_timeout_seconds=120) as mcp,
            httpx.AsyncClient(
                base_url=serve.url, headers={"Authorization": f"Bearer {token}"}, timeout=120
            ) as http,
        ):
            home = sites.url("app.example.test")

            async def open_http() -> str:
                reply = await http.post("/v1/sessions", json={"key": "shared", "url": home})
                assert reply.status_code == 200, reply.text
                return str(reply.json()["title"])

            async def open_mcp() -> str:
                result = await mcp.call_tool("open_session", {"key": "shared", "url": home})
                assert not result.is_error, result.content
                return str(result.structured_content["title"])  # type: ignore[index]

            titles = await asyncio.gather(*(f() for f in [open_http, open_mcp] * 3))
            assert set(titles) == {"App — signed out"}
            assert len(browsers(mark)) == 1
            runs = (await http.get("/admin/runs")).json()["runs"]
            assert [r["session"] for r in runs] == ["shared"]

            async def go_http(path: str) -> str:
                reply = await http.post(
                    "/v1/sessions/shared/navigate",
                    json={"url": sites.url("tabs.example.test", path)},
                )
                assert reply.status_code == 200, reply.text
                return str(reply.json()["url"])

            async def go_mcp(path: str) -> str:
                url = sites.url("tabs.example.test", path)
                result = await mcp.call_tool("navigate", {"key": "shared", "url": url})
                assert not result.is_error, result.content
                return str(result.structured_content["url"])  # type: ignore[index]

            paths = [f"/?n={i}" for i in range(6)]
            landed = await asyncio.gather(
                *((go_http if i % 2 else go_mcp)(p) for i, p in enumerate(paths))
            )
            assert landed == [sites.url("tabs.example.test", p) for p in paths]
            assert len(browsers(mark)) == 1
    finally:
        serve.stop()
