"""What the mapper engine's launch gives its Node process, and what it leaves on disk
(``browser.mapper``), read without starting one: ``_launch_driver`` is replaced by a
recorder. The real processes are in ``tests/e2e/test_mapper_attacks.py``.

The attacker here is another local user: it reads every process's command line
(``/proc/<pid>/cmdline``), every file the umask left readable, and binds any free port.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from sitekeep.browser import mapper
from sitekeep.browser.mapper import MAPPER_DIR, LocalMapper
from sitekeep.errors import BrowserUnavailable

Env = Mapping[str, str]
Fds = Mapping[int, int]


class Launched:
    """What the recorder saw of the one launch: argv, env, and the child's fd 3 as
    ``(family, type, listening address)``."""

    argv: list[str]
    env: dict[str, str]
    fd3: tuple[int, int, tuple[str, int]]


PINS = {"chromium-bidi": "157.0.8090-0", "ws": "8.23.0"}


def _write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


def _install(folder: Path, pinned: Mapping[str, str], installed: Mapping[str, str]) -> None:
    """A fake mapper_node: ``package.json`` pinning ``pinned``, and ``node_modules``
    holding ``installed`` (name → version; each only its ``package.json``)."""
    _write_json(folder / "package.json", {"name": "fake", "dependencies": dict(pinned)})
    for name, version in installed.items():
        _write_json(folder / "node_modules" / name / "package.json", {"version": version})


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Launched]:
    seen = Launched()
    installed = tmp_path / "mapper_node"
    _install(installed, PINS, PINS)
    monkeypatch.setattr(mapper, "MAPPER_DIR", installed)

    def record(argv: list[str], url: str, _: float, env: Env, tmp: Path, fds: Fds) -> int:
        seen.argv, seen.env = argv, dict(env)
        made.append(tmp)
        with socket.socket(fileno=os.dup(fds[3])) as child:
            seen.fd3 = (child.family, child.type, child.getsockname())
            assert url == f"http://127.0.0.1:{child.getsockname()[1]}"
        return 4242

    made: list[Path] = []
    monkeypatch.setattr(mapper, "launch_driver", record)
    yield seen
    for folder in made:  # the driver's private TMPDIR, made in the real temp dir
        shutil.rmtree(folder, ignore_errors=True)


def _launch(data_dir: Path) -> Any:
    chromium = data_dir / "chromium"
    chromium.parent.mkdir(parents=True, exist_ok=True)
    chromium.touch()
    return LocalMapper(data_dir, node="/usr/bin/node").launch(chromium)


def test_the_session_id_reaches_node_in_its_environment_never_its_argv(
    launched: Launched, tmp_path: Path
) -> None:
    """The session id is the BiDi socket's only secret; argv is world-readable."""
    ref = _launch(tmp_path)
    assert not any(ref.session_id in arg for arg in launched.argv), launched.argv
    config = json.loads(launched.env["BIDI_MAPPER_CONFIG"])
    assert config["session"] == ref.session_id
    assert ref.ws_url.endswith(f"/session/{ref.session_id}")
    assert not any(name.startswith("SITEKEEP_") for name in launched.env)


def test_node_is_handed_a_socket_already_listening_on_the_loopback_port(
    launched: Launched, tmp_path: Path
) -> None:
    """Bound before Node starts: no local process can take the port in between and
    answer sitekeep's ready check (and then receive every restored cookie)."""
    ref = _launch(tmp_path)
    family, kind, (host, port) = launched.fd3
    assert (family, kind, host) == (socket.AF_INET, socket.SOCK_STREAM, "127.0.0.1")
    assert ref.endpoint == f"http://127.0.0.1:{port}" and f"--port={port}" in launched.argv


def test_state_and_profiles_are_readable_by_this_user_only_whatever_the_umask(
    launched: Launched, tmp_path: Path
) -> None:
    folder = tmp_path / "mapper"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)  # left by an older sitekeep
    old = os.umask(0)
    try:
        ref = _launch(tmp_path)
    finally:
        os.umask(old)
    state = folder / f"{ref.endpoint.rsplit(':', 1)[1]}.json"
    recorded = json.loads(state.read_text(encoding="utf-8"))
    assert recorded["session"] == ref.session_id and recorded["pid"] == 4242
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (folder, state)}
    assert modes == {"mapper": 0o700, state.name: 0o600}
    assert stat.S_IMODE(Path(recorded["profile"]).stat().st_mode) == 0o700


def test_a_stale_chromium_bidi_left_by_an_older_checkout_is_refused_naming_the_set_up(
    launched: Launched, tmp_path: Path
) -> None:
    """A pull past an upgrade leaves the old package in node_modules: refused before
    anything starts, with what to run, rather than an old mapper failing mid-session."""
    _install(mapper.MAPPER_DIR, PINS, {**PINS, "chromium-bidi": "17.0.2"})
    with pytest.raises(BrowserUnavailable) as raised:
        _launch(tmp_path)
    message = str(raised.value)
    assert "chromium-bidi 17.0.2" in message and "157.0.8090-0" in message
    assert "scripts/setup-mapper.sh" in message
    assert not hasattr(launched, "argv") and not (tmp_path / "mapper").exists()


def test_a_missing_npm_package_is_refused_naming_the_package_and_the_set_up(
    launched: Launched, tmp_path: Path
) -> None:
    shutil.rmtree(mapper.MAPPER_DIR / "node_modules" / "ws")
    with pytest.raises(BrowserUnavailable, match=r"ws is not installed.*setup-mapper\.sh"):
        _launch(tmp_path)
    assert not hasattr(launched, "argv")


def test_the_real_package_json_pins_exact_versions_the_check_can_compare() -> None:
    """``check_installed`` compares versions as strings: a range (``^``, ``~``) in the
    real package.json would refuse every install."""
    manifest = json.loads((MAPPER_DIR / "package.json").read_text(encoding="utf-8"))
    for name, version in manifest["dependencies"].items():
        assert version[0].isdigit() and " " not in version, (name, version)
