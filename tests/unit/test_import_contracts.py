"""The import contracts in pyproject.toml keep up with the package (issue #25 item 6):
a facade may not import any module below the service, however many are added, and every
package has its ``own-init`` contract (which, with ``acyclic_siblings``, forbids every
cycle: docs/architecture.md)."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import sitekeep

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def _layer(spec: str) -> set[str]:
    return {name.strip() for name in spec.replace("|", ":").split(":")}


def test_a_facade_may_import_the_service_and_the_vocabulary_only() -> None:
    contracts = _contracts()
    layers = [_layer(spec) for spec in contracts["layers"]["layers"]]
    assert layers[1] == {"service"}
    facades = contracts["facades"]
    sources = {name.removeprefix("sitekeep.") for name in facades["source_modules"]}
    children = {m.name for m in pkgutil.iter_modules(sitekeep.__path__)}
    allowed = sources | {"service"} | layers[-1]
    assert {"api", "cli", "mcp"} <= sources
    assert {"args", "errors", "model", "config"} <= layers[-1]
    forbidden = {name.removeprefix("sitekeep.") for name in facades["forbidden_modules"]}
    assert forbidden == children - allowed


def test_every_package_has_its_own_init_contract() -> None:
    packages = ["sitekeep"] + [
        m.name for m in pkgutil.walk_packages(sitekeep.__path__, "sitekeep.") if m.ispkg
    ]
    kept = {
        c["forbidden_modules"][0]
        for c in _contracts().values()
        if c["type"] == "forbidden"
        and c.get("as_packages") is False
        and c["source_modules"] == [f"{c['forbidden_modules'][0]}.**"]
    }
    assert len(packages) > 8
    assert sorted(set(packages) - kept) == []
