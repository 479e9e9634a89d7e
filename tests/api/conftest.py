"""A live ``sitekeep serve`` for the tests of the Python client and the pytest plugin."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import HOST_RULES, chromium_engine_env
from fixtures.serve import Serve, create_token, sitekeep_env


@dataclass(frozen=True)
class Served:
    """A running server: its URL, a member token (tenant t1, subject agent), its env."""

    url: str
    token: str
    env: dict[str, str]

    def token_for(self, subject: str, *, admin: bool = False) -> str:
        return create_token(self.env, "t1", subject, admin=admin)


@pytest.fixture(scope="session")
def served(
    tmp_path_factory: pytest.TempPathFactory, driver_url: str, cache_dir: Path
) -> Iterator[Served]:
    """One ``sitekeep serve`` on a free loopback port for the run, on the run's
    chromedriver (or the mapper engine), its own data dir."""
    env = sitekeep_env(
        SITEKEEP_DATA_DIR=str(tmp_path_factory.mktemp("served")),
        SITEKEEP_CACHE_DIR=str(cache_dir),
        SITEKEEP_BROWSER_ARGS=HOST_RULES,
        SITEKEEP_WARM_BROWSERS="0",
        **chromium_engine_env(driver_url),
    )
    serve = Serve(env)
    probe = Served(serve.url, "", env)
    token = probe.token_for("agent")
    serve.start()
    try:
        yield Served(serve.url, token, env)
    finally:
        serve.stop()
