"""End-to-end tests: real browsers through the real HTTP app (fixtures: tests/conftest.py).

Every test here runs once per browser kind: ``settings`` (and so every app and service
the test makes) opens that kind by default.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from conftest import base_settings, on_mapper, open_api
from fixtures.grid import Grid, start_grid
from sitekeep.config import Settings
from support import Api

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
    with ``grid`` to run through a Selenium Grid, or with ``mapper`` (Chromium only) to
    run on the opt-in mapper engine (``SITEKEEP_CHROMIUM_BIDI=mapper``)."""
    return "local"


def for_browser(settings: Settings, browser: str, grid: Grid | None = None) -> Settings:
    """``settings`` for browsers of kind ``browser``: Chromium through the run's
    chromedriver; Firefox through sitekeep's own geckodrivers (one per browser, in the data
    dir); or both through ``grid``."""
    if grid is not None:
        return settings.model_copy(
            update={"browser": browser, "firefox_prefs": FIREFOX_PREFS, "webdriver_url": grid.url}
        )
    if browser == "firefox":
        return settings.model_copy(
            update={"browser": browser, "firefox_prefs": FIREFOX_PREFS, "webdriver_url": None}
        )
    return settings


@pytest.fixture
def settings(
    settings: Settings, browser: str, via: str, request: pytest.FixtureRequest
) -> Settings:
    """Chromium through the run's chromedriver; Firefox through sitekeep's own geckodrivers
    (one per browser, in the test's data dir); or both through the Grid."""
    grid: Grid | None = request.getfixturevalue("grid") if via == "grid" else None
    if via == "local" and browser == "chromium" and on_mapper():
        via = "mapper"
    if via == "mapper":  # the opt-in engine: sitekeep's own Chromium beside the mapper
        assert browser == "chromium", "the mapper engine drives Chromium only"
        return settings.model_copy(update={"webdriver_url": None, "chromium_bidi": "mapper"})
    return for_browser(settings, browser, grid)


@pytest.fixture(scope="module", params=BROWSERS)
async def module_api(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    driver_url: str,
    cache_dir: Path,
) -> AsyncIterator[Api]:
    """One app for a whole module, per browser kind, for tests that only look and change
    nothing (bad input refused): a browser opened in it serves every such test of the
    module instead of one each. A module using it sets ``anyio_backend`` to module scope."""
    data = tmp_path_factory.mktemp("module-api") / "data"
    settings = for_browser(base_settings(data, driver_url, cache_dir), request.param)
    async with AsyncExitStack() as stack:
        yield await open_api(settings, stack)
