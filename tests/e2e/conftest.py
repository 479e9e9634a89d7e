"""End-to-end tests: real browsers through the real HTTP app (fixtures: tests/conftest.py).

Every test here runs once per browser kind: ``settings`` (and so every app and service
the test makes) opens that kind by default.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures.grid import Grid, start_grid
from sitekeep.config import Settings

BROWSERS = ("chromium", "firefox")

FIREFOX_PREFS = {"network.dns.forceResolve": "127.0.0.1"}
"""Firefox has no --host-resolver-rules: every test host resolves to the loopback server."""


@pytest.fixture(params=BROWSERS)
def browser(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture(scope="session")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grid]:
    """A real Selenium Grid standalone with a Chromium and a Firefox node, for the run."""
    running = start_grid(tmp_path_factory.mktemp("grid"))
    yield running
    running.stop()


@pytest.fixture
def via() -> str:
    """Where browsers run: ``local`` (sitekeep's own drivers); a test parametrises it
    with ``grid`` to run through a Selenium Grid."""
    return "local"


@pytest.fixture
def settings(
    settings: Settings, browser: str, via: str, request: pytest.FixtureRequest
) -> Settings:
    """Chromium through the run's chromedriver; Firefox through sitekeep's own geckodrivers
    (one per browser, in the test's data dir); or both through the Grid."""
    if via == "grid":
        grid: Grid = request.getfixturevalue("grid")
        return settings.model_copy(
            update={"browser": browser, "firefox_prefs": FIREFOX_PREFS, "webdriver_url": grid.url}
        )
    if browser == "firefox":
        return settings.model_copy(
            update={"browser": browser, "firefox_prefs": FIREFOX_PREFS, "webdriver_url": None}
        )
    return settings
