"""Local Firefox browsers start in copies of a prepared profile template: each its own,
none holding another's site data, each gone with its browser."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.sites import Sites
from sitekeep.browser.geckodriver import PROFILE_SITE_DATA
from sitekeep.config import Settings
from support import Api

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.parametrize("browser", ["firefox"])]


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: (size, mtime in ns), by relative path."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


async def test_each_firefox_runs_in_its_own_template_copy_and_no_site_data_crosses(
    api: Api, sites: Sites, settings: Settings
) -> None:
    await api.open(key="a")
    assert (await api.go("a", sites.url("app.example.test", "/login")))["title"] == (
        "App — signed in as alice"
    )
    assert (await api.go("a", sites.url("token.example.test", "/login")))["title"] == (
        "Token — signed in as bob"
    )

    templates = [p for p in (settings.cache_dir / "firefox-templates").iterdir() if p.is_dir()]
    assert len(templates) == 1, templates  # one Firefox build, one template, no work dirs left
    template = templates[0]
    assert (template / "startupCache").is_dir(), "the template lacks what makes it fast"
    assert not [name for name in PROFILE_SITE_DATA if (template / name).exists()]
    before = tree(template)

    endpoint_a = (await api.browser("a")).ref.endpoint
    profile_a = settings.data_dir / "geckodriver" / f"{endpoint_a.rsplit(':', 1)[-1]}.profile"
    assert profile_a.is_dir(), "browser a does not run in a template copy"

    # A second browser, another session: nothing of a's sign-ins.
    opened = await api.open(key="b", url=sites.url("app.example.test"))
    assert opened["title"] == "App — signed out"
    assert (await api.go("b", sites.url("token.example.test")))["title"] == "Token — signed out"
    live_b = await api.browser("b")
    assert (await live_b.conn.send("storage.getCookies", {}))["cookies"] == []
    endpoint_b = live_b.ref.endpoint
    assert endpoint_b != endpoint_a
    profile_b = settings.data_dir / "geckodriver" / f"{endpoint_b.rsplit(':', 1)[-1]}.profile"
    assert profile_b.is_dir()

    await api.close("a")
    await api.close("b")
    assert not profile_a.exists() and not profile_b.exists(), "a profile copy outlived its browser"
    assert tree(template) == before, "a browser wrote into the template"
