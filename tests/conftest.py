"""Shared fixtures: the fixture sites, one embedded chromedriver for the run, settings."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings

from fixtures.databases import fresh_postgres_database
from fixtures.sites import SECRET_VALUES, Sites, start_sites
from sitekeep.api.app import create_app
from sitekeep.browser.chromedriver import LocalChromedriver
from sitekeep.config import Settings
from sitekeep.service import Service
from support import WHO, Api, ApiFactory

# `--hypothesis-profile fidelity-10k` runs the 10,000-item campaign of
# tests/e2e/test_fidelity_property.py (125 examples per direction); other hypothesis tests
# keep their own settings, this profile only raises their example counts too.
hypothesis_settings.register_profile(
    "fidelity-10k",
    max_examples=125,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    # Shrinking would replay examples in real browsers for many minutes: a failure is
    # reported as generated (each assertion names its item).
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)

ENGINE_ENV = "SITEKEEP_TEST_CHROMIUM_BIDI"
"""``mapper``: every test that starts local Chromium (in-process apps and the ``sitekeep``
processes of :func:`chromium_engine_env`) runs it on the opt-in mapper engine
(``SITEKEEP_CHROMIUM_BIDI=mapper``) instead of the run's chromedriver."""


def on_mapper() -> bool:
    """Whether this run puts local Chromium on the mapper engine (:data:`ENGINE_ENV`)."""
    return os.environ.get(ENGINE_ENV) == "mapper"


def chromium_engine_env(driver_url: str) -> dict[str, str]:
    """The ``SITEKEEP_*`` variables that pick this run's local Chromium engine for a
    ``sitekeep`` process: the run's chromedriver, or the mapper engine."""
    if on_mapper():
        return {"SITEKEEP_CHROMIUM_BIDI": "mapper"}
    return {"SITEKEEP_WEBDRIVER_URL": driver_url}


HOST_RULES = '--host-resolver-rules="MAP *.example.test 127.0.0.1, MAP *.other.test 127.0.0.1"'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sites() -> Iterator[Sites]:
    with start_sites() as running:
        yield running


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL database of this run's own on the shared server, dropped at the end."""
    with fresh_postgres_database() as url:
        yield url


@pytest.fixture(scope="session")
def driver_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One chromedriver for the whole run; every browser it started goes with it."""
    driver = LocalChromedriver(tmp_path_factory.mktemp("driver"), Path("/usr/bin/chromedriver"))
    url = driver.ensure()
    yield url
    driver.stop()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache dir for the run: a Firefox profile template is prepared once."""
    return tmp_path_factory.mktemp("cache")


def base_settings(data_dir: Path, driver_url: str, cache_dir: Path) -> Settings:
    """Settings of a test's app: ``data_dir``, the run's chromedriver (or the mapper engine,
    :data:`ENGINE_ENV`) and cache dir, the host map, memory stores, no warm pool."""
    settings = Settings(
        data_dir=data_dir,
        cache_dir=cache_dir,
        webdriver_url=driver_url,
        browser_args=HOST_RULES,
        session_store="memory://",
        warm_browsers=0,  # the pool has its own test; elsewhere it would only add load
    )
    if on_mapper():
        return settings.model_copy(update={"webdriver_url": None, "chromium_bidi": "mapper"})
    return settings


@pytest.fixture
def settings(tmp_path: Path, driver_url: str, cache_dir: Path) -> Settings:
    """Settings for one test: its own data dir, the run's chromedriver and cache dir,
    the host map."""
    return base_settings(tmp_path / "data", driver_url, cache_dir)


@pytest.fixture(autouse=True)
def _quiet_selenium() -> None:
    logging.getLogger("selenium").setLevel(logging.WARNING)


class _Capture(logging.Handler):
    """Every log record of the run, formatted, to look for secret values in."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        self.lines.append(text)


@pytest.fixture(scope="session", autouse=True)
def _no_secret_value_in_any_log_line() -> Iterator[None]:
    """SPEC §7, §12: sitekeep logs at every level during the whole run, and no line may
    hold a secret value."""
    capture = _Capture()
    logger = logging.getLogger("sitekeep")
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(capture)
    yield
    logging.getLogger().removeHandler(capture)
    logger.setLevel(previous)
    leaked = [line for line in capture.lines if any(v in line for v in SECRET_VALUES)]
    assert not leaked, f"{len(leaked)} log lines hold a secret value"


async def _no_secret_value_in(response: httpx.Response) -> None:
    body = (await response.aread()).decode("utf-8", "replace")
    assert not any(v in body for v in SECRET_VALUES), f"{response.url.path} returned a secret"


async def open_api(settings: Settings, stack: AsyncExitStack) -> Api:
    """An :class:`Api` on the real app of ``settings``, its lifespan run, with a member
    token of tenant ``t1``; ``stack`` closes its browsers, client and lifespan, in that
    order."""
    app = create_app(settings)
    await stack.enter_async_context(app.router.lifespan_context(app))
    service: Service = app.state.service
    token = await service.catalogue.create_token(WHO.tenant, WHO.subject, WHO.role)
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://sitekeep.test",
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
        event_hooks={"response": [_no_secret_value_in]},
    )
    stack.push_async_callback(http.aclose)

    async def close_browsers() -> None:
        await service.parts.browsers.close_all()
        service.parts.browsers.stop_local_drivers()

    stack.push_async_callback(close_browsers)
    return Api(http, service)


@pytest.fixture
async def make_api(settings: Settings) -> AsyncIterator[ApiFactory]:
    """``await make_api(**setting overrides)`` → an :class:`Api` on the real app, its
    lifespan run, with a member token of tenant ``t1``; browsers closed at teardown."""
    async with AsyncExitStack() as stack:

        async def make(**overrides: Any) -> Api:
            return await open_api(settings.model_copy(update=overrides), stack)

        yield make


@pytest.fixture
async def api(make_api: ApiFactory) -> Api:
    result: Api = await make_api()
    return result
