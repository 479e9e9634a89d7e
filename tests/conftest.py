"""Shared fixtures: the fixture sites, one embedded chromedriver for the run, settings."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.sites import Sites, start_sites
from sitekeep.browser.driver import LocalChromedriver
from sitekeep.config import Settings

HOST_RULES = '--host-resolver-rules="MAP *.example.test 127.0.0.1, MAP *.other.test 127.0.0.1"'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sites() -> Iterator[Sites]:
    with start_sites() as running:
        yield running


@pytest.fixture(scope="session")
def driver_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One chromedriver for the whole run; every browser it started goes with it."""
    driver = LocalChromedriver(tmp_path_factory.mktemp("driver"), Path("/usr/bin/chromedriver"))
    url = driver.ensure()
    yield url
    driver.stop()


@pytest.fixture
def settings(tmp_path: Path, driver_url: str) -> Settings:
    """Settings for one test: its own data dir, the run's chromedriver, the host map."""
    return Settings(
        data_dir=tmp_path / "data",
        webdriver_url=driver_url,
        browser_args=HOST_RULES,
        session_store="memory://",
    )


@pytest.fixture(autouse=True)
def _quiet_selenium() -> None:
    logging.getLogger("selenium").setLevel(logging.WARNING)
