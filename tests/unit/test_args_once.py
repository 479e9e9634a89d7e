"""An operation's options are written once, in ``sitekeep.args`` (issue #25): the HTTP
bodies, the service and the journal's redaction take them from there, and the Python
client's and the MCP tools' own parameter lists (their documented signatures) match them."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from sitekeep.args import OpenBody, SaveBody
from sitekeep.client import Session
from sitekeep.journal import redact
from sitekeep.mcp import build_server
from sitekeep.model import Principal

pytestmark = pytest.mark.anyio


def test_the_clients_open_and_save_take_exactly_the_models_options() -> None:
    opening = set(inspect.signature(Session.open).parameters) - {"self"}
    assert opening == set(OpenBody.model_fields) - {"key"}  # the handle holds the key
    saving = set(inspect.signature(Session.save_site_data).parameters) - {"self"}
    assert saving == set(SaveBody.model_fields)


async def test_the_mcp_tools_take_the_models_options() -> None:
    who = Principal("t1", "agent")
    server = build_server(lambda: None, lambda _: who)  # type: ignore[arg-type,return-value]
    tools = {tool.name: tool for tool in await server.list_tools()}
    opening: dict[str, Any] = tools["open_session"].input_schema["properties"]
    assert set(opening) == set(OpenBody.model_fields)
    saving = tools["save_site_data"].input_schema["properties"]
    assert set(saving) == set(SaveBody.model_fields) - {"full"} | {"key"}


def test_the_journal_keeps_each_open_option_as_its_model_says() -> None:
    kept = redact.args(
        "open_session",
        {
            "browser": "firefox",
            "url": "https://app.example.test/a?code=dummy-code#frag",
            "profile": "p1",
            "country": "de",
            "fresh": True,
            "keep_user_agent": False,
        },
    )
    assert kept == {
        "browser": "firefox",
        "url": "https://app.example.test/a",
        "profile": "p1",
        "country": "de",
        "fresh": True,
        "keep_user_agent": False,
    }
