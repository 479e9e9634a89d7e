"""Ending what a browser left running (``browser.processes``; issue #24), on real processes
the test starts: a "browser" here is a Python process whose command line names a folder,
as Chromium names its ``--user-data-dir``, with a child of its own, as its renderers."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitekeep.browser import processes, servers


@pytest.fixture
def started() -> Iterator[list[int]]:
    """Process groups the test starts; whatever is left of them goes at teardown."""
    groups: list[int] = []
    yield groups
    for pgid in groups:
        if processes.group_running(pgid):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):  # the leader is our child
            os.waitpid(pgid, 0)


def browser(folder: Path, started: list[int], *, leader_exits: bool = False) -> tuple[int, int]:
    """A process group of its own whose leader (``pid``) names ``folder`` on its command
    line and forks a child naming it too; with ``leader_exits`` the leader exits once the
    child runs (a driver that died, its browser left). Returns (leader, child)."""
    code = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)',"
        " sys.argv[1]])\n"
        "open(sys.argv[2], 'w').write(str(child.pid))\n"
        f"time.sleep({0 if leader_exits else 300})\n"
    )
    note = folder.parent / f"child-{len(started)}"
    leader = servers.spawn_detached(
        [sys.executable, "-c", code, f"--user-data-dir={folder}/profile", str(note)]
    )
    started.append(leader)
    deadline = time.monotonic() + 10
    while not note.exists() or not note.read_text():
        assert time.monotonic() < deadline, "the child did not start"
        time.sleep(0.02)
    return leader, int(note.read_text())


def wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while processes.alive(pid) and not processes.zombie(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_browser_that_does_not_end_is_ended_with_its_whole_tree(
    tmp_path: Path, started: list[int]
) -> None:
    leader, child = browser(tmp_path / "profiles", started)
    assert processes.end_tree(leader, tmp_path / "profiles", grace=0.2) is True
    assert processes.exited(leader) or wait_gone(leader)
    assert wait_gone(child), "the browser's child outlived it"


def test_a_process_that_names_another_folder_is_never_signalled(
    tmp_path: Path, started: list[int]
) -> None:
    """A pid reused by another program (or a note pointing elsewhere) is left alone."""
    leader, child = browser(tmp_path / "theirs", started)
    assert processes.end_tree(leader, tmp_path / "ours") is False
    assert processes.end_tree(leader, tmp_path / "the") is False  # a prefix, not a folder
    assert processes.alive(leader) and processes.alive(child)
    assert not processes.zombie(leader)


def test_what_a_dead_driver_left_in_its_group_is_ended_when_it_names_the_folder(
    tmp_path: Path, started: list[int]
) -> None:
    leader, child = browser(tmp_path / "tmp", started, leader_exits=True)
    os.waitpid(leader, 0)  # the driver is dead; its browser runs on in its group
    assert processes.group_running(leader)
    assert processes.end_leftovers(leader, [tmp_path / "elsewhere"]) == 0
    assert processes.alive(child), "a group naming none of the folders was signalled"
    assert processes.end_leftovers(leader, [tmp_path / "tmp"]) == 1
    assert wait_gone(child) and not processes.group_running(leader)
