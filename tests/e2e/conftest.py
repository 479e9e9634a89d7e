"""End-to-end tests: real browsers through the real HTTP app (fixtures: tests/conftest.py).

Every test here runs once per browser kind: ``settings`` (and so every app and service
the test makes) opens that kind by default.
"""

from __future__ import annotations

import pytest

from sitekeep.config import Settings

BROWSERS = ("chromium", "firefox")

FIREFOX_PREFS = {"network.dns.forceResolve": "127.0.0.1"}
"""Firefox has no --host-resolver-rules: every test host resolves to the loopback server."""


@pytest.fixture(params=BROWSERS)
def browser(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def settings(settings: Settings, browser: str) -> Settings:
    """Chromium through the run's chromedriver; Firefox through sitekeep's own geckodrivers
    (one per browser, in the test's data dir)."""
    if browser == "firefox":
        return settings.model_copy(
            update={"browser": browser, "firefox_prefs": FIREFOX_PREFS, "webdriver_url": None}
        )
    return settings
