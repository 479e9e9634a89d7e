"""Real faults for the journal tests: a full file system and a failing disk.

ENOSPC from a tmpfs mounted with a size limit; EIO from ext4 on a loop device whose backing
file sits on a tmpfs too small for it (the kernel reports the failed block writes as EIO
at fsync). Mounting needs root (as on CI); without it the tests using these skip and say so.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, timeout=60)


def mount_or_skip(*command: str) -> None:
    try:
        run(*command)
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        pytest.skip(f"cannot mount here (needs root): {detail.decode(errors='replace').strip()}")


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB file system."""
    where = tmp_path / "small"
    where.mkdir()
    mount_or_skip("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(where))
    yield where
    run("umount", "-l", str(where))


@pytest.fixture
def failing_disk(tmp_path: Path) -> Iterator[tuple[Path, Callable[[], Path]]]:
    """ext4 on a loop device backed by a 32 MiB sparse file on a 3 MiB tmpfs: writes past
    3 MiB fail in the block layer and reach the journal as EIO. The second value remounts
    the disk with room to spare and returns the mount point, to read what reached it."""
    back, mnt = tmp_path / "back", tmp_path / "mnt"
    back.mkdir()
    mnt.mkdir()
    mount_or_skip("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(back))
    image = back / "disk.img"
    loops: list[str] = []
    try:
        with image.open("wb") as out:
            out.truncate(32 * 1024 * 1024)
        run("mkfs.ext4", "-q", str(image))
        loops.append(_attach(image))
        run("mount", loops[-1], str(mnt))

        def remount() -> Path:
            run("umount", str(mnt))
            run("losetup", "-d", loops.pop())
            run("mount", "-o", "remount,size=64m", str(back))
            loops.append(_attach(image))
            run("mount", loops[-1], str(mnt))
            return mnt

        yield mnt, remount
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        for loop in loops:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        subprocess.run(["umount", "-l", str(back)], capture_output=True)


def _attach(image: Path) -> str:
    found = subprocess.run(
        ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
    )
    return found.stdout.strip()
