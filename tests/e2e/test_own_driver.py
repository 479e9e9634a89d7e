"""Your own Selenium WebDriver, signed in (issue #14 item 4): ``sitekeep.save_from`` reads a
Chromium the user started with Selenium (BiDi enabled), ``sitekeep.restore_into`` signs a
second one in — the service's own engine, no service running."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator

import pytest
from selenium import webdriver

import sitekeep
from conftest import HOST_RULES
from fixtures.sites import Sites
from sitekeep.browser.webdriver import CHROMIUM_ARGS
from sitekeep.errors import InvalidInput

pytestmark = pytest.mark.e2e

SIGNED_IN = "App — signed in as alice"


@pytest.fixture
def start_chromium(driver_url: str) -> Iterator[object]:
    """``start_chromium()`` → a Selenium ``Remote`` Chromium with BiDi on, as a user
    starts one; every one is quit at teardown."""
    started: list[webdriver.Remote] = []

    def start(*, bidi: bool = True) -> webdriver.Remote:
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for arg in (*CHROMIUM_ARGS, *shlex.split(HOST_RULES)):
            options.add_argument(arg)
        if os.geteuid() == 0:
            options.add_argument("--no-sandbox")
        options.enable_bidi = bidi
        driver = webdriver.Remote(command_executor=driver_url, options=options)
        started.append(driver)
        return driver

    yield start
    for driver in started:
        driver.quit()


def test_a_snapshot_saved_from_one_own_driver_signs_another_in(
    start_chromium: object, sites: Sites
) -> None:
    first = start_chromium()  # type: ignore[operator]
    first.get(sites.url("app.example.test", "/login"))
    assert first.title == SIGNED_IN
    snapshot = sitekeep.save_from(first)
    assert "app_session" in {cookie.name for cookie in snapshot.cookies}

    second = start_chromium()  # type: ignore[operator]
    second.get(sites.url("app.example.test", "/"))
    assert second.title == "App — signed out"
    report = sitekeep.restore_into(
        second, sitekeep.dump_snapshot(snapshot), land=sites.url("app.example.test", "/")
    )
    assert "app.example.test" in report["restored"]
    assert second.title == SIGNED_IN  # Selenium's own session sees the restored browser


def test_a_driver_without_bidi_is_refused_naming_the_driver(start_chromium: object) -> None:
    plain = start_chromium(bidi=False)  # type: ignore[operator]
    with pytest.raises(InvalidInput) as refused:
        sitekeep.save_from(plain)
    assert refused.value.field == "driver" and "enable_bidi" in refused.value.message
