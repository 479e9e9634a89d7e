"""A real third-party app: Django's admin. Sign in, save, close, open — still in the admin."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.django_site import DjangoSite, start_django_site
from support import Api

from .test_capture_on_leave import until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ADMIN_TITLE = "Site administration | Django site admin"


@pytest.fixture(scope="module")
def django(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DjangoSite]:
    with start_django_site(Path(tmp_path_factory.mktemp("django"))) as site:
        yield site


async def test_signed_in_to_django_admin_after_save_close_and_open(
    api: Api, django: DjangoSite
) -> None:
    await api.open(key="dj")
    page = await api.go("dj", django.url("/admin/"))
    assert page["title"].startswith("Log in")  # redirected to the login form
    live = await api.browser("dj")
    fill = (
        f"document.querySelector('#id_username').value = {json.dumps(django.username)};"
        f"document.querySelector('#id_password').value = {json.dumps(django.password)};"
        "document.querySelector('#login-form').submit(); 1"
    )
    await live.conn.send(
        "script.evaluate",
        {"expression": fill, "target": {"context": live.context}, "awaitPromise": False},
    )

    async def in_admin() -> bool:
        try:
            return (await live.page_info()).title == ADMIN_TITLE
        except Exception:  # the form's POST is swapping the document
            return False

    await until(in_admin)
    saved = await api.save("dj")
    assert saved["saved"]["cookies"] >= 2  # sessionid and csrftoken
    await api.close("dj")

    opened = await api.open(key="dj", url=django.url("/admin/auth/user/"))
    assert opened["title"].startswith("Select user to change")
    assert "django.example.test" in opened["site_data"]["restored"]
