"""The facades' modules import downwards only (issue #25): the HTTP app composes its
routers and the admin UI, and none of them imports the app back."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import sitekeep.api
import sitekeep.api.ui

INCLUDED = sorted(
    module.name
    for package in (sitekeep.api, sitekeep.api.ui)
    for module in pkgutil.iter_modules(package.__path__, f"{package.__name__}.")
    if module.name != "sitekeep.api.app"
)


def test_no_router_or_ui_module_imports_the_app_that_includes_it() -> None:
    probe = f"import sys, {', '.join(INCLUDED)}; print('sitekeep.api.app' in sys.modules)"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert loaded == ["False"]
