"""The live socket's gates (SPEC §10, §12), against a real ``sitekeep serve`` whose live
sessions stream a real Chromium: another site's page is refused at the upgrade; a socket
lasts only as long as what let it in — revoking the token that asked for the ticket, or
signing out of the admin UI that asked for it, closes the open socket, and a ticket asked
for before cannot open another. ``tests/ui/test_live.py`` has a real browser's page on
another site try the upgrade."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from sitekeep.auth import hash_token, token_id

from .conftest import Served

OPEN_WAIT = 120.0  # s: a bound for a browser to start on a loaded machine, never a pause
CLOSE_WAIT = 20.0  # s: a bound on the socket's close, never a pause


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextmanager
def _socket(served: Served, path: str, ticket: str) -> Iterator[ClientConnection]:
    """The live socket at ``path``, let in by ``ticket``, past its ``ready`` message."""
    with connect(served.url.replace("http://", "ws://") + path, open_timeout=OPEN_WAIT) as ws:
        ws.send(json.dumps({"ticket": ticket}))
        assert _next_message(ws)["type"] == "ready"
        yield ws


def _next_message(ws: ClientConnection, limit: float = OPEN_WAIT) -> dict[str, Any]:
    """The socket's next JSON message (frames skipped), within ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while True:
        raw = ws.recv(timeout=max(0.0, deadline - time.monotonic()))
        if isinstance(raw, str):
            message: dict[str, Any] = json.loads(raw)
            return message


def _closed_reason(ws: ClientConnection) -> str:
    """The reason of the ``closed`` message the server ends the socket with; the socket
    must then close."""
    deadline = time.monotonic() + CLOSE_WAIT
    while (message := _next_message(ws, deadline - time.monotonic()))["type"] != "closed":
        pass
    with pytest.raises(ConnectionClosed):
        _next_message(ws, deadline - time.monotonic())
    reason: str = message["reason"]
    return reason


def _refused(served: Served, path: str, ticket: str, origin: str | None = None) -> dict[str, Any]:
    url = served.url.replace("http://", "ws://") + path
    with connect(url, origin=Origin(origin) if origin else None) as ws:
        ws.send(json.dumps({"ticket": ticket}))
        refusal = _next_message(ws, CLOSE_WAIT)
        with pytest.raises(ConnectionClosed):
            _next_message(ws, CLOSE_WAIT)
        assert ws.close_code == 4401
        return refusal


def test_revoking_the_token_closes_its_open_live_socket_and_spends_its_tickets(
    served: Served,
) -> None:
    viewer = served.token_for("live-viewer")
    boss = served.token_for("live-boss", admin=True)
    with httpx.Client(base_url=served.url, timeout=OPEN_WAIT) as http:
        opened = http.post(
            "/v1/live-sessions", json={"key": "live-revoked"}, headers=_bearer(viewer)
        )
        assert opened.status_code == 200, opened.text
        live = opened.json()
        spare = http.post(f"/v1/live-sessions/{live['id']}/ticket", headers=_bearer(viewer))
        try:
            with _socket(served, live["socket"], live["ticket"]) as ws:
                gone = http.delete(
                    f"/admin/tokens/{token_id(hash_token(viewer))}", headers=_bearer(boss)
                )
                assert gone.status_code == 200, gone.text
                assert _closed_reason(ws) == "revoked"
            refusal = _refused(served, live["socket"], spare.json()["ticket"])
            assert refusal["error"]["type"] == "unauthorized"
            assert viewer not in json.dumps(refusal)
        finally:
            http.delete("/v1/sessions/live-revoked", headers=_bearer(boss))


def _csrf(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None, page.text
    return found.group(1)


def test_signing_out_of_the_admin_ui_closes_the_live_socket_it_opened(served: Served) -> None:
    boss = served.token_for("live-ui-boss", admin=True)
    own = {"Origin": served.url}
    with httpx.Client(base_url=served.url, timeout=OPEN_WAIT, headers=own) as http:
        signed = http.post("/admin/sign-in", data={"token": boss})
        assert signed.status_code == 303, signed.text
        csrf = _csrf(http.get("/admin/ui/live"))
        form = {"key": "live-ui", "browser": "chromium", "url": "", "csrf": csrf}
        opened = http.post("/admin/ui/live", data=form)
        assert opened.status_code == 303, opened.text
        id_ = opened.headers["location"].rsplit("/", 1)[-1]
        asked = http.post(f"/admin/ui/live/{id_}/ticket", data={"csrf": csrf})
        spare = http.post(f"/admin/ui/live/{id_}/ticket", data={"csrf": csrf})
        assert asked.status_code == spare.status_code == 200, asked.text
        path = f"/v1/live-sessions/{id_}/socket"
        try:
            with _socket(served, path, asked.json()["ticket"]) as ws:
                out = http.post("/admin/sign-out", data={"csrf": csrf})
                assert out.status_code == 303, out.text
                assert _closed_reason(ws) == "signed_out"
            assert _refused(served, path, spare.json()["ticket"])["error"]["type"] == "unauthorized"
        finally:
            http.delete("/v1/sessions/live-ui", headers=_bearer(boss))


def test_another_sites_origin_is_refused_at_the_upgrade_and_no_origin_or_our_own_passes(
    served: Served,
) -> None:
    path = "/v1/live-sessions/0123456789abcdef/socket"
    url = served.url.replace("http://", "ws://") + path
    for foreign in ("http://evil.other.test", served.url + ".evil.test", "null"):
        with pytest.raises(InvalidStatus) as caught:
            connect(url, origin=Origin(foreign))
        assert caught.value.response.status_code == 403, foreign
    # Past the upgrade, the ticket decides: a forged one is refused with 4401.
    for origin in (None, served.url):
        refusal = _refused(served, path, "lt_forged", origin)
        assert refusal["error"]["type"] == "unauthorized", origin


def test_a_binary_first_message_is_refused_like_a_missing_ticket(served: Served) -> None:
    # It crashed the handler (KeyError in receive_text): no refusal, no close frame.
    url = served.url.replace("http://", "ws://") + "/v1/live-sessions/0123456789abcdef/socket"
    with connect(url) as ws:
        ws.send(json.dumps({"ticket": "lt_forged"}).encode())
        refusal = _next_message(ws, CLOSE_WAIT)
        with pytest.raises(ConnectionClosed):
            _next_message(ws, CLOSE_WAIT)
        assert ws.close_code == 4401
    assert refusal["error"]["type"] == "unauthorized"


@pytest.mark.parametrize(
    "first",
    [
        '{"ticket": "lt_\\ud800"}',  # a lone surrogate: its SHA-256 crashed the handler
        '{"ticket": "\\udc00\\ud800"}',
        '{"ticket": "lt_' + "\\ud800" * 200 + '"}',
        '{"ticket": ' + "9" * 5000 + "}",  # past Python's int conversion limit
        '{"ticket": "lt_x", "extra": ' + "9" * 5000 + "}",
    ],
    ids=["surrogate", "two-halves", "many", "huge-number", "huge-beside"],
)
def test_a_ticket_that_is_no_text_is_refused_with_an_error_message(
    served: Served, first: str
) -> None:
    url = served.url.replace("http://", "ws://") + "/v1/live-sessions/0123456789abcdef/socket"
    with connect(url) as ws:
        ws.send(first)
        refusal = _next_message(ws, CLOSE_WAIT)
        with pytest.raises(ConnectionClosed):
            _next_message(ws, CLOSE_WAIT)
        assert ws.close_code == 4401
    assert refusal["type"] == "error" and refusal["error"]["type"] == "unauthorized"


def test_a_live_session_whose_browser_was_closed_is_refused_naming_the_session(
    served: Served,
) -> None:
    with httpx.Client(base_url=served.url, timeout=OPEN_WAIT) as http:
        opened = http.post(
            "/v1/live-sessions", json={"key": "live-closed"}, headers=_bearer(served.token)
        )
        assert opened.status_code == 200, opened.text
        live = opened.json()
        try:
            closed = http.delete("/v1/sessions/live-closed/browser", headers=_bearer(served.token))
            assert closed.status_code == 200, closed.text
            url = served.url.replace("http://", "ws://") + live["socket"]
            with connect(url) as ws:
                ws.send(json.dumps({"ticket": live["ticket"]}))
                refusal = _next_message(ws, CLOSE_WAIT)
                with pytest.raises(ConnectionClosed):
                    _next_message(ws, CLOSE_WAIT)
                assert ws.close_code == 4404
        finally:
            http.delete("/v1/sessions/live-closed", headers=_bearer(served.token))
    assert refusal["error"] == {
        "type": "not_found",
        "message": "session 'live-closed' has no live browser: open it again",
    }
