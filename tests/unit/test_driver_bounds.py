"""Every wait on a WebDriver server or its process is bounded (the proxy test's hang:
geckodriver and Firefox idle, the run held for 75 minutes).

The servers here stand for a wedged driver: a listening socket that accepts a request
and never answers, and a process that ignores SIGTERM."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from sitekeep.browser import chromedriver, geckodriver, processes, servers
from sitekeep.browser.webdriver import SessionSpec, create_session
from sitekeep.errors import BrowserUnavailable


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An HTTP endpoint that accepts connections and requests but never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    for conn in held:
        conn.close()


HANG = 30.0
"""Seconds after which a call counts as hung (its own bound is a second or less)."""


def _returns(call: Callable[[], Any]) -> BaseException | None:
    """Run ``call`` in a thread; fail the test if it is still running after ``HANG``
    seconds (instead of hanging the run); the exception it raised, if any."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG)
    assert outcome, f"still waiting after {HANG:.0f} s: the wait is unbounded"
    return outcome[0]


def test_a_new_session_the_driver_never_answers_fails_after_the_timeout(
    silent_endpoint: str,
) -> None:
    spec = SessionSpec("firefox", None)
    raised = _returns(lambda: create_session(silent_endpoint, spec, timeout=1))
    assert isinstance(raised, BrowserUnavailable) and "gave no browser" in str(raised)
    # The error reaches API callers: it never names the driver or Grid (SPEC §21).
    assert urlsplit(silent_endpoint).netloc not in str(raised)


def _ignores_sigterm() -> int:
    """A child in a process group of its own that ignores SIGTERM, as a wedged driver."""
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    pid = servers.spawn_detached([sys.executable, "-c", code])
    time.sleep(0.5)  # it set its handler
    return pid


def test_a_driver_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    pid = _ignores_sigterm()
    try:
        assert _returns(lambda: processes.end_group(pid, grace=0.3)) is None
        assert not processes.alive(pid)  # killed and reaped
    finally:
        if processes.alive(pid):
            os.killpg(pid, 9)
            os.waitpid(pid, 0)


def test_a_geckodriver_too_busy_to_answer_is_still_stopped_with_its_group(
    tmp_path: Path,
) -> None:
    """A geckodriver busy ending its session (waiting for a Firefox to quit) does not
    answer ``/status``; it was then left running with its browser. Its command line still
    names its port, so it is ended — and a process on another port never is."""
    gecko = geckodriver.LocalGeckodriver(tmp_path, None)
    port, other = servers.free_port(), servers.free_port()
    code = "import time; time.sleep(300)"  # never answers HTTP, as a busy driver
    busy = servers.spawn_detached([sys.executable, "-c", code, f"--port={port}"])
    stranger = servers.spawn_detached([sys.executable, "-c", code, f"--port={other}"])
    try:
        (tmp_path / "geckodriver").mkdir()
        elsewhere = next(p for p in iter(servers.free_port, 0) if p not in (port, other))
        gecko._write_state(f"http://127.0.0.1:{port}", pid=busy)
        gecko._write_state(f"http://127.0.0.1:{elsewhere}", pid=stranger)  # a reused pid
        assert gecko.stop(f"http://127.0.0.1:{port}")
        assert not processes.alive(busy)
        assert not gecko.stop_all()  # the pid recorded for another port is not a driver
        assert processes.alive(stranger)
    finally:
        for pid in (busy, stranger):
            if processes.alive(pid):
                os.killpg(pid, 9)
                os.waitpid(pid, 0)


def test_a_group_left_with_only_a_zombie_counts_as_gone() -> None:
    """An exited browser helper stays a zombie until init reaps it (every 2 s on the CI
    machine's init; never under one that does not reap); waiting for it cost 1.5 s of
    every Firefox close. Here the zombie is our own unreaped child, so it stays."""
    pid = servers.spawn_detached(["/bin/sh", "-c", "exit 0"])
    try:
        while (
            Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
            != "Z"
        ):
            time.sleep(0.01)
        assert _returns(lambda: processes.wait_group_gone(pid, 600.0)) is None
        assert Path(f"/proc/{pid}").exists()  # still there, a zombie: it was not waited for
    finally:
        os.waitpid(pid, 0)


def test_ending_a_driver_another_process_started_does_not_wait_on_its_zombie(
    tmp_path: Path,
) -> None:
    """``sitekeep stop`` ends a chromedriver that a running ``sitekeep serve`` started:
    dead, it stays a zombie until serve reaps it (never). That counts as ended."""
    note = tmp_path / "child.pid"
    code = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    os._exit(0)\n"
        f"open({str(note)!r}, 'w').write(str(child))\n"
        "time.sleep(300)\n"
    )
    parent = servers.spawn_detached([sys.executable, "-c", code])
    try:
        while not (note.exists() and note.read_text()):
            time.sleep(0.01)
        zombie = int(note.read_text())
        while not processes.zombie(zombie):
            time.sleep(0.01)
        assert _returns(lambda: processes.end_group(zombie, grace=600.0)) is None
    finally:
        os.killpg(parent, 9)
        os.waitpid(parent, 0)


def test_a_stale_ref_whose_port_went_to_another_browser_never_ends_that_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A geckodriver that died (crash, machine restart) leaves its file; the port is
    given again to a new driver of another tenant's browser. Ending the dead browser by
    its ref (a dead process's warm pool, the reaper, a session's record) must not kill
    the new one, nor hand the new one the dead one's profile."""
    gecko = geckodriver.LocalGeckodriver(tmp_path, Path(sys.executable))
    port = servers.free_port()
    url = f"http://127.0.0.1:{port}"
    folder = tmp_path / "geckodriver"
    folder.mkdir()
    stale_profile = folder / f"{port}.profile"
    stale_profile.mkdir()
    (stale_profile / "cookies.sqlite").write_text("dummy", encoding="utf-8")
    dead = {"pid": 2**22 + 1, "profile": str(stale_profile), "session": "dead-session"}
    (folder / f"{port}.json").write_text(json.dumps(dead), encoding="utf-8")
    code = "import time; time.sleep(300)"
    new = servers.spawn_detached([sys.executable, "-c", code, f"--port={port}"])
    monkeypatch.setattr(servers, "free_port", lambda: port)
    monkeypatch.setattr(servers, "launch_driver", lambda *a, **k: new)
    try:
        assert gecko._launch(1.0) == url
        assert gecko.profile(url) is None  # not the dead browser's profile
        gecko.record_session(url, "new-session")
        assert not gecko.stop(url, "dead-session")
        assert processes.alive(new) and not processes.exited(new)
        assert gecko.stop(url, "new-session")
        assert not processes.alive(new) or processes.exited(new)
    finally:
        if processes.alive(new) and not processes.exited(new):
            os.killpg(new, 9)
            os.waitpid(new, 0)


def test_a_driver_and_its_browsers_get_no_sitekeep_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The master key, scrape token, database URL live in ``SITEKEEP_*``: a driver's
    browsers inherit its environment, so none of them may reach it; ``env`` does."""
    monkeypatch.setenv("SITEKEEP_MASTER_KEY", "dummy-master-key-value")
    monkeypatch.setenv("SITEKEEP_METRICS_TOKEN", "dummy-scrape-token-value")
    out = tmp_path / "environ"
    code = f"import os; open({str(out)!r}, 'w').write(repr(dict(os.environ)))"
    pid = servers.spawn_detached([sys.executable, "-c", code], {"MOZ_EXAMPLE": "1"})
    os.waitpid(pid, 0)
    seen = out.read_text(encoding="utf-8")
    assert "dummy-master-key-value" not in seen and "SITEKEEP_" not in seen
    assert "MOZ_EXAMPLE" in seen and "PATH" in seen


def test_a_chromedriver_keeps_its_browsers_profiles_in_a_private_tmp_removed_with_it(
    tmp_path: Path,
) -> None:
    """chromedriver makes each browser's profile in ``TMPDIR`` and sometimes leaves it
    (the CI run where ``sitekeep stop`` left ``org.chromium.Chromium.scoped_dir.*``): its
    TMPDIR is a private folder, gone when it stops — and when it died, with the next start."""
    local = chromedriver.LocalChromedriver(tmp_path, Path("/usr/bin/chromedriver"))
    local.ensure()
    state = json.loads((tmp_path / "chromedriver.json").read_text(encoding="utf-8"))
    first = Path(state["tmp"])
    environ = Path(f"/proc/{state['pid']}/environ").read_bytes().split(b"\0")
    assert f"TMPDIR={first}".encode() in environ
    assert first.is_dir() and oct(first.stat().st_mode & 0o777) == "0o700"
    (first / "org.chromium.Chromium.scoped_dir.example").mkdir()  # a profile left behind

    os.killpg(state["pid"], 9)  # the driver dies with its browsers
    os.waitpid(state["pid"], 0)
    local.ensure()
    second = Path(json.loads((tmp_path / "chromedriver.json").read_text("utf-8"))["tmp"])
    assert not first.exists() and second.is_dir() and second != first
    local.stop()
    assert not second.exists()


@pytest.mark.parametrize(
    "recorded", ["{root}/outside", "{tmp}/not-ours", "{tmp}/../sitekeep-driver-x"]
)
def test_a_state_file_naming_any_other_folder_removes_nothing(
    tmp_path: Path, recorded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state file is data: only a folder :func:`servers.driver_tmp` could have made is
    ever removed — a tampered file naming a folder outside the temp dir, one inside it
    not named so, or a path climbing out of it removes nothing. Every folder here lies in
    ``tmp_path``: a test of a guard never names a real system folder (this one named
    ``/etc`` once, and broken on purpose it removed the machine's ``/etc``)."""
    system = tmp_path / "system"
    system.mkdir()
    monkeypatch.setattr(servers.tempfile, "tempdir", str(system))
    victims = [tmp_path / "outside", system / "not-ours", tmp_path / "sitekeep-driver-x"]
    for victim in victims:
        victim.mkdir()
        (victim / "kept").write_text("dummy", encoding="utf-8")
    state = tmp_path / "1.json"
    path = recorded.format(root=tmp_path, tmp=system)
    state.write_text(json.dumps({"pid": 2**22 + 7, "tmp": path}), encoding="utf-8")
    servers.stop_recorded(state, "http://127.0.0.1:1")
    assert all((victim / "kept").is_file() for victim in victims)


def test_a_folder_driver_tmp_made_is_removed_from_a_state_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard's other side: a folder :func:`servers.driver_tmp` made goes with its state."""
    monkeypatch.setattr(servers.tempfile, "tempdir", str(tmp_path))
    made = servers.driver_tmp()
    state = tmp_path / "1.json"
    state.write_text(json.dumps({"pid": 2**22 + 7, "tmp": str(made)}), encoding="utf-8")
    servers.stop_recorded(state, "http://127.0.0.1:1")
    assert made.parent == tmp_path and not made.exists() and not state.exists()


def test_a_sweep_removes_only_profiles_no_live_browser_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sweep_profiles`` keeps a profile whose ``SingletonLock`` names a live pid (a
    browser running long) and one younger than a start takes; removes the others."""
    monkeypatch.setattr(servers.tempfile, "tempdir", str(tmp_path))
    private = servers.driver_tmp()
    (tmp_path / "data").mkdir()
    state = {"pid": 2**22 + 7, "port": 1, "tmp": str(private)}
    (tmp_path / "data" / "chromedriver.json").write_text(json.dumps(state), encoding="utf-8")
    past = time.time() - 3600
    profiles = {}
    for name, lock, age in (
        ("live", f"example-host-{os.getpid()}", past),
        ("dead", "example-host-999999999", past),
        ("unlocked", None, past),
        ("starting", None, None),
    ):
        profile = profiles[name] = private / f"org.chromium.Chromium.scoped_dir.{name}"
        (profile / "Default").mkdir(parents=True)
        if lock is not None:
            (profile / "SingletonLock").symlink_to(lock)
        if age is not None:
            os.utime(profile, (age, age))
    local = chromedriver.LocalChromedriver(tmp_path / "data", Path("/usr/bin/chromedriver"))
    assert local.sweep_profiles() == 2
    assert {name for name, p in profiles.items() if p.exists()} == {"live", "starting"}


def test_a_driver_inherits_no_descriptor_but_its_stdio_and_the_ones_handed_to_it(
    tmp_path: Path,
) -> None:
    """A descriptor this process was started with (``flock``'s lock: a leaked chromedriver
    held the test machine's lock for 25 minutes) is not the driver's: closed in the child,
    while a socket handed over in ``fds`` arrives at its number."""
    stray_read, stray = os.pipe()
    given_read, given = os.pipe()
    os.set_inheritable(stray, True)  # as a descriptor from our parent is
    out = tmp_path / "fds"
    code = (
        "import os, sys\n"
        "def is_open(fd):\n"
        "    try:\n"
        "        os.fstat(fd)\n"
        "    except OSError:\n"
        "        return False\n"
        "    return True\n"
        f"os.write(3, b'given')\n"
        f"open({str(out)!r}, 'w').write(repr((is_open({stray}), is_open(3))))\n"
    )
    try:
        pid = servers.spawn_detached([sys.executable, "-c", code], fds={3: given})
        os.waitpid(pid, 0)
        assert out.read_text(encoding="utf-8") == "(False, True)"
        assert os.read(given_read, 16) == b"given"
        assert os.get_inheritable(stray)  # ours stays open and as it was
    finally:
        for fd in (stray_read, stray, given_read, given):
            os.close(fd)


def test_every_driver_state_file_is_readable_by_this_user_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data dir made before sitekeep (a service's state folder, mode 0755) must not let
    another local user read a driver's file: geckodriver's names the session it runs, the
    key to drive that signed-in browser over the driver's unauthenticated port."""
    private = tmp_path / "private"
    private.mkdir()
    monkeypatch.setattr(servers, "driver_tmp", lambda: private)
    monkeypatch.setattr(servers, "launch_driver", lambda *a, **k: 2**22 + 1)
    old = os.umask(0o022)
    try:
        gecko = geckodriver.LocalGeckodriver(tmp_path, Path(sys.executable))
        url = gecko._launch(1.0)
        gecko.record_session(url, "dummy-session")
        chrome = chromedriver.LocalChromedriver(tmp_path, Path(sys.executable))
        chrome._start(1.0)
    finally:
        os.umask(old)
    states = [*(tmp_path / "geckodriver").glob("*.json"), tmp_path / "chromedriver.json"]
    assert len(states) == 2
    assert {p.name: p.stat().st_mode & 0o777 for p in states} == {p.name: 0o600 for p in states}


def test_the_warm_pool_file_is_readable_by_this_user_only(tmp_path: Path) -> None:
    """It names each warm browser's endpoint and WebDriver session: whoever reads it can
    drive the browser a session is later handed."""
    from types import SimpleNamespace

    from sitekeep.browser.manager import BrowserManager

    ref = SimpleNamespace(endpoint="http://127.0.0.1:9", session_id="dummy-session")
    pool = tmp_path / "warm" / "1.json"
    old = os.umask(0o022)
    try:
        BrowserManager._save_pool(  # type: ignore[arg-type]
            SimpleNamespace(_warm={"chromium": [SimpleNamespace(ref=ref)]}, _pool_file=pool)
        )
    finally:
        os.umask(old)
    assert json.loads(pool.read_text(encoding="utf-8")) == [[ref.endpoint, ref.session_id]]
    assert pool.stat().st_mode & 0o777 == 0o600
    assert pool.parent.stat().st_mode & 0o777 == 0o700


def test_a_firefox_profile_copy_is_in_a_folder_only_this_user_can_enter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Firefox keeps cookie values in the profile's cookies.sqlite (mode 0644): the copy a
    browser runs in must sit in folders no other local user can enter, even in a data dir
    made before sitekeep with mode 0755."""
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    template = tmp_path / "template"
    template.mkdir(mode=0o755)
    (template / "prefs.js").write_text("// dummy\n", encoding="utf-8")
    private = tmp_path / "private"
    private.mkdir()
    monkeypatch.setattr(servers, "driver_tmp", lambda: private)
    monkeypatch.setattr(servers, "launch_driver", lambda *a, **k: 2**22 + 1)
    gecko = geckodriver.LocalGeckodriver(data, Path(sys.executable))
    monkeypatch.setattr(gecko, "template", lambda firefox: template)
    old = os.umask(0o022)
    try:
        url = gecko.spawn(Path(sys.executable), timeout=1.0)
    finally:
        os.umask(old)
    profile = gecko.profile(url)
    assert profile is not None and (profile / "prefs.js").is_file()
    assert (data / "geckodriver").stat().st_mode & 0o777 == 0o700
    assert profile.stat().st_mode & 0o777 == 0o700


def test_a_port_for_a_driver_is_free_and_never_one_the_kernel_hands_out_itself() -> None:
    """Ports handed to a driver or to Firefox's remote agent lie below the ephemeral range,
    so no bind(0) or outgoing connection takes one before the program binds it."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [servers.free_port() for _ in range(20)]
    assert all(1024 <= p < low for p in ports), ports
    assert len(set(ports)) > 15, "a random pick keeps launches apart"
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[0]))  # free when handed out
