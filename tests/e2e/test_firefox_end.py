"""Ending a sitekeep-run Firefox (SPEC §2): its geckodriver's whole process group goes,
with its profile copy — after a close, and after a start whose wiring failed (that one
used to leave the geckodriver and its Firefox running)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sitekeep.browser.manager import BrowserManager
from sitekeep.config import Settings
from sitekeep.errors import BidiError

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.parametrize("browser", ["firefox"]),  # only Firefox has a driver per browser
]


def _processes_under(folder: Path) -> list[int]:
    """Processes whose command line names ``folder`` (each geckodriver's Firefox runs in
    a profile copy there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if str(folder).encode() in argv and int(entry.name) != os.getpid():
                found.append(int(entry.name))
    return found


async def test_a_closed_firefox_leaves_no_process_and_no_profile(settings: Settings) -> None:
    manager = BrowserManager(settings)
    folder = settings.data_dir / "geckodriver"
    live = await manager.start("firefox")
    assert _processes_under(folder), "no Firefox ran from the data dir: nothing to prove"
    await manager.close(live.ref)
    assert _processes_under(folder) == []
    assert list(folder.iterdir()) == []
    await manager.aclose()


async def test_a_firefox_whose_wiring_failed_leaves_no_process(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = BrowserManager(settings)
    folder = settings.data_dir / "geckodriver"
    seen: list[int] = []

    async def fail(*args: object, **kwargs: object) -> None:
        seen.extend(_processes_under(folder))
        raise BidiError("unknown error", "session.subscribe", "injected")

    monkeypatch.setattr(manager, "_open_live", fail)
    with pytest.raises(BidiError):
        await manager.start("firefox")
    assert seen, "no Firefox was running when the wiring failed: nothing to prove"
    assert _processes_under(folder) == []
    assert list(folder.iterdir()) == []
    await manager.aclose()
