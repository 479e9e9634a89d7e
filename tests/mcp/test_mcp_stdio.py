"""``sitekeep mcp`` as a real stdio subprocess, driven by the SDK's client (SPEC §5): the
agent signs in, saves and closes; a second process on the same data dir comes back signed in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from conftest import HOST_RULES, chromium_engine_env
from fixtures.sites import FORM_PASSWORD, FORM_USER, Sites
from sitekeep.config import Settings
from support import call_tool as call
from support import make_token

pytestmark = pytest.mark.e2e

SITEKEEP = str(Path(sys.executable).parent / "sitekeep")


def mcp_env(data_dir: Path, driver_url: str, **extra: str) -> dict[str, str]:
    """The environment an MCP client config would give ``sitekeep mcp``."""
    return {
        "SITEKEEP_DATA_DIR": str(data_dir),
        **chromium_engine_env(driver_url),
        "SITEKEEP_BROWSER_ARGS": HOST_RULES,
        "SITEKEEP_WARM_BROWSERS": "0",
        **extra,
    }


def token_in(data_dir: Path) -> str:
    return make_token(Settings(data_dir=data_dir))


def stdio_client(env: dict[str, str]) -> Client:
    params = StdioServerParameters(command=SITEKEEP, args=["mcp"], env=env)
    return Client(params, read_timeout_seconds=60)


@pytest.mark.anyio
async def test_a_restarted_mcp_process_comes_back_signed_in(
    tmp_path: Path, driver_url: str, sites: Sites
) -> None:
    data_dir = tmp_path / "data"
    env = mcp_env(data_dir, driver_url, SITEKEEP_TOKEN=token_in(data_dir))
    async with stdio_client(env) as client:
        opened = await call(client, "open_session", url=sites.url("form.example.test", "/login"))
        assert (opened["key"], opened["title"]) == ("default", "Form — sign in")
        await call(client, "type", selector="#user", text=FORM_USER)
        landed = await call(client, "type", selector="#pass", text=FORM_PASSWORD, submit=True)
        assert landed["title"] == f"Form — welcome {FORM_USER}"
        assert (await call(client, "save_site_data"))["saved"]["cookies"] == 2
        assert (await call(client, "close_session"))["closed"] is True

    async with stdio_client(env) as client:  # a new process: only the data dir remains
        back = await call(client, "open_session", url=sites.url("form.example.test", "/"))
        assert back["title"] == f"Form — signed in as {FORM_USER} (plan free)"
        await call(client, "close_session")


@pytest.mark.anyio
async def test_the_session_env_names_the_default_session(
    tmp_path: Path, driver_url: str, sites: Sites
) -> None:
    data_dir = tmp_path / "data"
    env = mcp_env(data_dir, driver_url, SITEKEEP_TOKEN=token_in(data_dir), SITEKEEP_SESSION="work")
    async with stdio_client(env) as client:
        opened = await call(client, "open_session", url=sites.url("form.example.test", "/login"))
        assert opened["key"] == "work"
        read = await client.read_resource("sitekeep://sessions/work/current")
        text = read.contents[0]
        assert json.loads(getattr(text, "text"))["title"] == "Form — sign in"  # noqa: B009
        await call(client, "close_session")


@pytest.mark.parametrize(
    ("token", "says"), [("", "set SITEKEEP_TOKEN"), ("sk_unknown", "is unknown")]
)
def test_without_a_known_token_mcp_exits_2_saying_what_to_do(
    tmp_path: Path, driver_url: str, token: str, says: str
) -> None:
    env = {"PATH": "/usr/bin:/bin", **mcp_env(tmp_path / "data", driver_url)}
    if token:
        env["SITEKEEP_TOKEN"] = token
    done = subprocess.run(
        [SITEKEEP, "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # stdout belongs to the protocol
    assert says in " ".join(done.stderr.split())
