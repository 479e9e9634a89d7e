"""``import sitekeep``: the public names (issue #14), each resolving, none imported before use."""

from __future__ import annotations

import subprocess
import sys

import sitekeep


def test_all_is_sorted_and_every_public_name_resolves() -> None:
    assert sitekeep.__all__ == sorted(sitekeep.__all__)
    for name in sitekeep.__all__:
        assert getattr(sitekeep, name) is not None, name
    assert {"Client", "AsyncClient", "restore_into", "save_from"} <= set(sitekeep.__all__)


def test_importing_sitekeep_imports_neither_the_client_nor_the_engine() -> None:
    probe = "import sys, sitekeep; print('httpx' in sys.modules, 'sitekeep.attach' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
