"""No value anywhere (SPEC §7, §12; issue #8 "Done when"): a whole run of a real
``sitekeep serve`` at DEBUG — sign in with a secret, a token in localStorage, save, a new
browser restored, read, a flow, the session and its site data — and then every log line it
wrote, every response it gave and every file in its data dir are searched for every secret
value typed and every cookie and storage value the sites issued."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import httpx
import pytest

from fixtures.serve import MARK, SITEKEEP, Serve, browsers, new_mark, sitekeep_env
from fixtures.sites import FORM_PASSWORD, FORM_USER, Sites
from sitekeep.config import Settings
from support import make_token

pytestmark = [pytest.mark.e2e, pytest.mark.parametrize("browser", ["chromium"])]

HOST_RULES = '--host-resolver-rules="MAP *.example.test 127.0.0.1"'


@pytest.fixture
def serve(tmp_path: Path, cache_dir: Path, browser: str) -> Iterator[tuple[Serve, str, Path]]:
    """A ``sitekeep serve`` at DEBUG on its own data dir, its output in a file; an admin
    token (the catalogue is written over HTTP too)."""
    data_dir = tmp_path / "data"
    mark = new_mark()
    env = sitekeep_env(
        SITEKEEP_DATA_DIR=str(data_dir),
        SITEKEEP_CACHE_DIR=str(cache_dir),
        SITEKEEP_BROWSER_ARGS=HOST_RULES,
        SITEKEEP_BROWSER=browser,
        SITEKEEP_WARM_BROWSERS="0",
        **{MARK: mark},
    )
    token = make_token(Settings(data_dir=data_dir), role="admin")
    running = Serve(env, log_level="debug", log_file=tmp_path / "serve.log").start()
    yield running, token, data_dir
    running.stop()
    subprocess.run([SITEKEEP, "stop"], env=env, capture_output=True, timeout=120)
    assert browsers(mark) == []


def forms(value: str) -> set[str]:
    """A value as it may be written: as is, percent-encoded, JSON-escaped."""
    return {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}


def test_no_secret_cookie_or_storage_value_in_any_log_line_response_or_file(
    serve: tuple[Serve, str, Path], sites: Sites
) -> None:
    running, token, data_dir = serve
    responses: list[bytes] = []

    def keep(response: httpx.Response) -> None:
        response.read()
        responses.append(json.dumps(dict(response.headers)).encode() + response.content)

    with running.client(token, event_hooks={"response": [keep]}) as http:

        def call(method: str, path: str, body: object = None) -> dict[str, object]:
            reply = http.request(method, path, json=body)
            assert reply.status_code == 200, reply.text
            result: dict[str, object] = reply.json()
            return result

        call(
            "PUT",
            "/v1/secrets/login",
            {
                "description": "carol",
                "hosts": ["form.example.test"],
                "values": {"username": FORM_USER, "password": FORM_PASSWORD},
            },
        )
        call(
            "POST", "/v1/sessions", {"key": "run", "url": sites.url("form.example.test", "/login")}
        )
        for field, selector in (("username", "#user"), ("password", "#pass")):
            call(
                "POST",
                "/v1/sessions/run/type-secret",
                {"selector": selector, "secret": "login", "field": field},
            )
        call("POST", "/v1/sessions/run/click", {"selector": "button"})
        call(
            "POST", "/v1/sessions/run/navigate", {"url": sites.url("token.example.test", "/login")}
        )
        call("POST", "/v1/sessions/run/snapshot")
        call("POST", "/v1/sessions/run/save-site-data")
        call("DELETE", "/v1/sessions/run/browser")
        reopened = call(
            "POST", "/v1/sessions", {"key": "run", "url": sites.url("form.example.test", "/")}
        )
        assert reopened["title"] == "Form — signed in as ••• (plan free)"
        call("POST", "/v1/sessions/run/read", {})
        call(
            "POST",
            "/v1/sessions/run/flows",
            {"steps": [{"op": "snapshot"}, {"op": "read"}, {"op": "assert_text", "text": "no"}]},
        )
        call("GET", "/v1/sessions/run")
        call("GET", "/v1/sessions/run/site-data")
        call("GET", "/v1/secrets")
    running.stop()

    issued = sites.issued()
    assert any(v.startswith("dummy-form-") for v in issued), "the sign-in issued no cookie"
    assert any(v.startswith("dummy-token-") for v in issued), "no token went to localStorage"
    needles = {form.encode() for value in (FORM_PASSWORD, *issued) for form in forms(value)}
    logs = running.log_file.read_bytes() if running.log_file else b""
    assert b"DEBUG" in logs, "the server did not log at DEBUG"
    files = {p: p.read_bytes() for p in data_dir.rglob("*") if p.is_file()}
    assert files, "the data dir is empty"
    places = {
        "log": [logs],
        "responses": responses,
        **{str(p.relative_to(data_dir)): [data] for p, data in files.items()},
    }
    found = sorted(
        where for where, texts in places.items() for t in texts if any(n in t for n in needles)
    )
    assert found == [], f"a value was found in: {found}"
