"""The state preview and a capture's cookie selection (SPEC §9)."""

from __future__ import annotations

import json

import pytest

from sitekeep.errors import InvalidInput
from sitekeep.model import Cookie
from sitekeep.state_preview import default_selection, select_cookies, state_preview

NOW = 1_800_000_000.0
DAY = 86_400

COOKIES = [
    Cookie("sessionid", "dummy-session-value", "app.example.test", http_only=True,
           secure=True, same_site="lax", expiry=int(NOW) + 14 * DAY),
    Cookie("_ga", "dummy-ga-value", ".example.test", expiry=int(NOW) + 300 * DAY),
    Cookie("csrftoken", "dummy-csrf-value", "app.example.test", expiry=int(NOW) + DAY),
    Cookie("csrftoken", "dummy-csrf-old", "app.example.test", path="/admin",
           expiry=int(NOW) - 1),
    Cookie("theme", "dummy-theme", "app.example.test"),
    Cookie("sid", "dummy-sid-value", ".other.test", http_only=True,
           partition_key={"topLevelSite": "https://example.test",
                          "hasCrossSiteAncestor": True}),
]  # fmt: skip


def test_the_preview_groups_cookies_by_domain_without_a_leading_dot_and_shows_no_value() -> None:
    preview = state_preview(COOKIES, NOW)
    assert preview["now"] == NOW
    assert [d["domain"] for d in preview["domains"]] == [
        "app.example.test",
        "example.test",
        "other.test",
    ]
    text = json.dumps(preview)
    assert "dummy" not in text
    app = preview["domains"][0]["cookies"]
    assert [(c["name"], c["path"]) for c in app] == [
        ("csrftoken", "/"),
        ("csrftoken", "/admin"),
        ("sessionid", "/"),
        ("theme", "/"),
    ]


def test_the_preview_gives_flags_expiry_and_the_default_selection() -> None:
    rows = {
        (d["domain"], c["name"], c["path"]): c
        for d in state_preview(COOKIES, NOW)["domains"]
        for c in d["cookies"]
    }
    session = rows["app.example.test", "sessionid", "/"]
    assert session == {
        "name": "sessionid",
        "path": "/",
        "host_only": True,
        "expiry": int(NOW) + 14 * DAY,
        "expired": False,
        "http_only": True,
        "secure": True,
        "same_site": "lax",
        "partitioned": False,
        "selected": True,
        "signal": "http_only",
    }
    ga = rows["example.test", "_ga", "/"]
    assert (ga["host_only"], ga["selected"], ga["signal"]) == (False, False, "deny_list")
    assert rows["app.example.test", "csrftoken", "/"]["selected"]
    assert not rows["app.example.test", "theme", "/"]["selected"]
    assert rows["other.test", "sid", "/"]["partitioned"]
    assert rows["app.example.test", "theme", "/"]["expiry"] is None


def test_an_expired_cookie_is_shown_expired_and_never_selected() -> None:
    rows = state_preview(COOKIES, NOW)["domains"][0]["cookies"]
    old = next(c for c in rows if c["path"] == "/admin")
    assert old["expired"] and not old["selected"]
    assert old["signal"] == "name"  # it would be selected if it were alive
    # the same cookie a second before its expiry is live and selected
    later = state_preview(COOKIES, NOW - 2)["domains"][0]["cookies"]
    assert next(c for c in later if c["path"] == "/admin")["selected"]


def test_the_default_selection_is_the_unexpired_sign_in_cookies() -> None:
    picked = default_selection(COOKIES, NOW)
    assert [(c.name, c.path) for c in picked] == [
        ("sessionid", "/"),
        ("csrftoken", "/"),
        ("sid", "/"),
    ]


def test_no_selection_captures_every_unexpired_cookie() -> None:
    kept = select_cookies(COOKIES, None, NOW)
    assert len(kept) == len(COOKIES) - 1
    assert all(c.path != "/admin" for c in kept)


def test_a_selection_matches_domain_in_any_spelling_and_every_path() -> None:
    kept = select_cookies(
        COOKIES,
        [
            {"domain": "APP.example.test", "name": "csrftoken"},
            {"domain": ".other.test", "name": "sid"},
        ],
        NOW,
    )
    assert [(c.domain, c.name, c.path) for c in kept] == [
        ("app.example.test", "csrftoken", "/"),
        (".other.test", "sid", "/"),
    ]


@pytest.mark.parametrize(
    "selection",
    [
        [{"domain": "app.example.test", "name": "nope"}],
        [{"domain": "elsewhere.test", "name": "sessionid"}],
        [{"domain": "app.example.test", "name": "csrftoken"}][:0],
    ],
    ids=["unknown-name", "other-domain", "empty"],
)
def test_a_selection_matching_nothing_is_refused(selection: list[dict[str, str]]) -> None:
    with pytest.raises(InvalidInput) as caught:
        select_cookies(COOKIES, selection, NOW)
    assert caught.value.field == "cookies"


def test_a_selection_of_only_expired_cookies_is_refused() -> None:
    expired_only = [c for c in COOKIES if c.path == "/admin"]
    with pytest.raises(InvalidInput):
        select_cookies(expired_only, [{"domain": "app.example.test", "name": "csrftoken"}], NOW)


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"name": "sid"}, "cookies[0].domain"),
        ({"domain": ".", "name": "sid"}, "cookies[0].domain"),
        ({"domain": "example.test"}, "cookies[0].name"),
        ({"domain": "example.test", "name": 3}, "cookies[0].name"),
    ],
)
def test_a_selection_item_without_domain_or_name_names_the_field(
    item: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        select_cookies(COOKIES, [item], NOW)
    assert caught.value.field == field
