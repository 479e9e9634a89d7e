"""Every import path refuses a lone surrogate or an unbounded number — a 400 (the CLI: exit
2) naming the field — and stores nothing (issue #24): storage state and cookies.txt, into
a session and a profile, over HTTP, from the CLI and through the Python API. The files come
from hypothesis (``tests/poison.py``), one poison placed anywhere in each; they used to
end in a 500 (``UnicodeEncodeError`` at the store, ``ValueError`` past 4,300 digits).

The one place a lone surrogate is data, not poison: a Web Storage name or value, which a
page may write and a browser keeps. Those are imported, kept and exported losslessly (an
export used to crash on one with a ``UnicodeEncodeError``)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from poison import Poisoned, page_surrogates, poisoned
from sitekeep.args import CreateBody
from sitekeep.cli import app
from sitekeep.config import Settings
from sitekeep.errors import InvalidInput
from sitekeep.interop import export_site_data, import_text
from sitekeep.model import Principal
from sitekeep.service import Service
from support import WHO, Api, cli_data_dir, on_service

from .test_admin_http import HISTORY, SNAPSHOT, seed

GOOD = json.dumps(
    {
        "cookies": [
            {
                "name": "sid",
                "value": "dummy-good",
                "domain": "app.example.test",
                "path": "/",
                "expires": -1,
                "httpOnly": True,
                "secure": True,
            }
        ],
        "origins": [],
    }
).encode()


def examples(count: int) -> settings:
    return settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def over_http(poison: Poisoned) -> str:
    """The field HTTP must name: the poisoned place as the file's reader names it; a
    cookies.txt whose surrogate is raw bytes is no UTF-8 text (``body``)."""
    if poison.fmt == "cookies-txt" and poison.kind == "surrogate":
        return "body"
    return poison.field


async def session_and_profile(api: Api, name: str) -> list[str]:
    """A session ``name`` with a snapshot and a profile ``name`` of the caller: their paths."""
    await seed(api.service, name, HISTORY, SNAPSHOT)
    profile = await api.call("POST", "/v1/profiles", {"name": name})
    return [f"/v1/profiles/{profile['id']}", f"/v1/sessions/{name}"]


@pytest.mark.anyio
async def test_http_imports_refuse_every_poison_naming_the_field_and_store_nothing(
    api: Api,
) -> None:
    targets = await session_and_profile(api, "poisoned")
    await api.call("PUT", f"{targets[0]}/storage-state", json.loads(GOOD))

    async def state() -> list[Any]:
        found = [await api.call("GET", targets[0])]
        for target in targets:
            reply = await api.http.get(f"{target}/storage-state")
            assert reply.status_code == 200, reply.text
            found.append(reply.content)
        return found

    before = await state()

    @examples(60)
    @given(
        poison=poisoned,
        target=st.sampled_from(targets),
        content_type=st.sampled_from(["application/json", "text/plain"]),
    )
    def refused(poison: Poisoned, target: str, content_type: str) -> None:
        reply = anyio.from_thread.run(
            lambda: api.http.put(
                f"{target}/storage-state",
                content=poison.wire,
                headers={"content-type": content_type},
            )
        )
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert error["type"] == "invalid_input", error
        assert error["field"] == over_http(poison), (error, poison)

    await anyio.to_thread.run_sync(refused)
    assert await state() == before


def test_the_python_api_refuses_every_poison_naming_the_field() -> None:
    @examples(300)
    @given(poison=poisoned, strict=st.booleans())
    def refused(poison: Poisoned, strict: bool) -> None:
        with pytest.raises(InvalidInput) as caught:
            import_text(poison.text, None, 1_800_000_000.0, strict=strict)
        assert caught.value.field == poison.field, (caught.value.message, poison)
        assert caught.value.message.startswith(poison.field)

    refused()


@pytest.mark.anyio
async def test_a_pages_lone_surrogates_in_web_storage_are_imported_kept_and_exported(
    api: Api,
) -> None:
    targets = await session_and_profile(api, "page")

    @examples(25)
    @given(state=page_surrogates(), target=st.sampled_from(targets))
    def kept(state: tuple[str, Any, Any], target: str) -> None:
        text, local, session = state

        async def round_trip() -> Any:
            put = await api.http.put(
                f"{target}/storage-state",
                content=text.encode(),
                headers={"content-type": "application/json"},
            )
            assert put.status_code == 200, put.text
            got = await api.http.get(f"{target}/storage-state")
            assert got.status_code == 200, got.text
            return json.loads(got.content)

        exported = anyio.from_thread.run(round_trip)
        [origin] = exported["origins"]
        assert {i["name"]: i["value"] for i in origin["localStorage"]} == local[origin["origin"]]
        items = exported["sitekeep"]["sessionStorage"]["items"]
        assert {i["name"]: i["value"] for i in items} == session

    await anyio.to_thread.run_sync(kept)


def test_the_python_api_keeps_a_pages_lone_surrogates_through_export_and_import() -> None:
    @examples(150)
    @given(state=page_surrogates())
    def kept(state: tuple[str, Any, Any]) -> None:
        text, local, session = state
        site_data = import_text(text, None, 1_800_000_000.0).site_data
        assert {o: dict(s.local) for o, s in site_data.origins.items()} == local
        assert site_data.session is not None and dict(site_data.session.items) == session
        exported = export_site_data(site_data, "storage-state").data
        again = import_text(exported.decode(), None, 1_800_000_000.0).site_data
        assert (again.origins, again.session) == (site_data.origins, site_data.session)

    kept()


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path: Path = cli_data_dir(monkeypatch, tmp_path / "data")
    return path


def over_cli(poison: Poisoned) -> str:
    """The field the CLI must name: a cookies.txt whose surrogate is raw bytes is no
    UTF-8 (``source``); else the poisoned place."""
    return "source" if poison.fmt == "cookies-txt" and poison.kind == "surrogate" else poison.field


def test_cli_imports_refuse_every_poison_naming_the_field_and_write_nothing(
    data_dir: Path, tmp_path: Path
) -> None:
    settings_ = Settings(data_dir=data_dir)
    boss = Principal(WHO.tenant, "cli", "admin")

    async def prepare(svc: Service) -> str:
        await seed(svc, "poisoned", HISTORY, SNAPSHOT)
        made = await svc.profiles.create(boss, CreateBody(name="poisoned", visibility="private"))
        await svc.interop.import_profile_state(boss, made["id"], GOOD)
        return str(made["id"])

    ident = on_service(settings_, prepare)

    async def state(svc: Service) -> tuple[Any, ...]:
        profile = await svc.interop.export_profile_state(boss, ident)
        return profile, await svc.interop.export_session_state(boss, "poisoned")

    before = on_service(settings_, state)
    ends = {
        "profile": ["--profile", ident, "--tenant", WHO.tenant],
        "session": ["--session", "poisoned", "--tenant", WHO.tenant],
        "file": ["--to", "out.json"],
    }

    @examples(24)
    @given(poison=poisoned, end=st.sampled_from(sorted(ends)))
    def refused(poison: Poisoned, end: str) -> None:
        folder = tmp_path / secrets.token_hex(4)
        folder.mkdir()
        source = folder / ("state.json" if poison.fmt == "storage-state" else "cookies.txt")
        source.write_bytes(poison.wire)
        args = [a.replace("out.json", str(folder / "out.json")) for a in ends[end]]
        result = CliRunner().invoke(app, ["import", "--from", str(source), *args])
        assert result.exit_code == 2, (result.output, result.exception)
        assert over_cli(poison) in result.output, (result.output, poison)
        assert sorted(p.name for p in folder.iterdir()) == [source.name], "nothing written"

    refused()
    assert on_service(settings_, state) == before
