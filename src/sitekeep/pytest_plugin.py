"""The pytest plugin (entry point ``pytest11``): a signed-in browser in one line.

A test asks for ``sitekeep_session`` and gets a :class:`sitekeep.client.Session` whose
browser was just opened from a saved session (its snapshot restored into a new browser)
or from a profile, on a running ``sitekeep serve``::

    import pytest

    @pytest.mark.sitekeep(session="app-login", url="https://app.example.org/")
    def test_dashboard(sitekeep_session):
        assert "Dashboard" in sitekeep_session.read()["text"]

What to open comes from the test's ``sitekeep`` marker, else the command line
(``--sitekeep-session KEY`` or ``--sitekeep-profile ID``). The server and token come from
``--sitekeep-url`` / ``--sitekeep-token``, else ``SITEKEEP_URL`` / ``SITEKEEP_TOKEN``.

- ``session=KEY``: the saved session ``KEY`` in a new browser (``fresh``), its snapshot
  restored; at teardown its browser is closed without its automatic save (SPEC §18). Its
  record and snapshot stay as they were (unless the test saves).
- ``profile=ID``: a new session opened from the profile (SPEC §9), deleted at teardown.

Marker keywords ``url`` (where to land) and ``browser`` (``chromium``/``firefox``) apply to
both. A saved session with nothing to restore fails the test's set-up: it would not be
signed in.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from sitekeep.client import Client, Session

__all__ = ["pytest_addoption", "pytest_configure", "sitekeep_client", "sitekeep_session"]

_KEYWORDS = frozenset({"session", "profile", "url", "browser"})


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sitekeep", "signed-in browsers from a sitekeep server")
    group.addoption("--sitekeep-url", help="The server (default: SITEKEEP_URL).")
    group.addoption("--sitekeep-token", help="A bearer token (default: SITEKEEP_TOKEN).")
    group.addoption("--sitekeep-session", help="Saved session to open when no marker names one.")
    group.addoption("--sitekeep-profile", help="Profile to open when no marker names one.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sitekeep(session=KEY | profile=ID, url=None, browser=None): what the "
        "sitekeep_session fixture opens",
    )


@pytest.fixture(scope="session")
def sitekeep_client(pytestconfig: pytest.Config) -> Iterator[Client]:
    """A :class:`sitekeep.Client` of the server the options or environment name."""
    from sitekeep.client import Client

    url = pytestconfig.getoption("sitekeep_url")
    token = pytestconfig.getoption("sitekeep_token")
    with Client(url, token) as client:
        yield client


def _choice(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("sitekeep")
    chosen: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    unknown = set(chosen) - _KEYWORDS
    if unknown:
        raise pytest.UsageError(f"sitekeep marker: unknown keyword(s) {sorted(unknown)}")
    if "session" not in chosen and "profile" not in chosen:
        config = request.config
        chosen["session"] = config.getoption("sitekeep_session")
        chosen["profile"] = config.getoption("sitekeep_profile")
    if bool(chosen.get("session")) == bool(chosen.get("profile")):
        raise pytest.UsageError(
            "sitekeep_session needs exactly one of session or profile: "
            "@pytest.mark.sitekeep(session=KEY) or --sitekeep-session KEY "
            "(or profile= / --sitekeep-profile)"
        )
    return chosen


@pytest.fixture
def sitekeep_session(request: pytest.FixtureRequest, sitekeep_client: Client) -> Iterator[Session]:
    """A signed-in session: a new browser opened from the saved session or profile the
    ``sitekeep`` marker or the options name (see the module docstring)."""
    chosen = _choice(request)
    land = {"url": chosen.get("url"), "browser": chosen.get("browser")}
    if chosen.get("session"):
        from sitekeep.errors import NotFound

        session = sitekeep_client.session(str(chosen["session"]))
        try:
            session.current()  # opening an unknown key would make an empty session
        except NotFound as exc:
            pytest.fail(f"sitekeep: {exc.message}", pytrace=False)
        opened = session.open(fresh=True, **land)
        if not (opened.get("site_data") or {}).get("restored"):
            session.close_browser(autosave=False)
            pytest.fail(
                f"sitekeep session {chosen['session']!r} has no saved site data to restore: "
                "sign in and save_site_data first",
                pytrace=False,
            )
        yield session
        session.close_browser(autosave=False)  # what the test did stays out of the session
        return
    session = sitekeep_client.session(f"pytest-{secrets.token_hex(4)}")
    session.open(profile=str(chosen["profile"]), **land)
    yield session
    session.delete()
