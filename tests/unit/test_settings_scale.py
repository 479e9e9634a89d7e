"""Settings of scale-out (SPEC §13): pool sizes per browser kind, caps, the reaper's times."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sitekeep.config import Settings


@pytest.mark.parametrize(
    ("text", "sizes"),
    [
        ("2", {"chromium": 2}),
        ("0", {"chromium": 0}),
        ("chromium:2,firefox:1", {"chromium": 2, "firefox": 1}),
        (" firefox:1 , chromium:0 ", {"firefox": 1, "chromium": 0}),
        ("firefox:3", {"firefox": 3}),
        ("", {}),
    ],
)
def test_warm_browsers_are_sized_per_kind_or_by_one_number_for_chromium(
    monkeypatch: pytest.MonkeyPatch, text: str, sizes: dict[str, int]
) -> None:
    monkeypatch.setenv("SITEKEEP_WARM_BROWSERS", text)
    assert Settings().warm_browsers == sizes


@pytest.mark.parametrize("text", ["edge:1", "chromium", "chromium:x", "chromium:17", "-1", "2.5"])
def test_a_bad_pool_size_names_the_setting(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("SITEKEEP_WARM_BROWSERS", text)
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert "warm_browsers" in str(caught.value)


def test_caps_are_unset_by_default_and_must_be_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    assert (settings.max_sessions, settings.max_sessions_per_tenant) == (None, None)
    assert settings.browser_idle == 900.0
    monkeypatch.setenv("SITEKEEP_MAX_SESSIONS_PER_TENANT", "0")
    with pytest.raises(ValidationError):
        Settings()
