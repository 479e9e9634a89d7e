"""``sitekeep.history``: origins, URL trimming and the bump rules of SPEC §4."""

from __future__ import annotations

import pytest

from sitekeep.history import bump, bump_many, origin_of, trim_url
from sitekeep.model import HistoryEntry

NOW = 1_700_000_000.0
DAY = 86_400.0
TTL = DAY
CAP = 100


def entry(origin: str, path: str = "/", at: float = NOW - 60) -> HistoryEntry:
    return HistoryEntry(origin=origin, url=origin + path, at=at)


def origins(history: tuple[HistoryEntry, ...]) -> list[str]:
    return [e.origin for e in history]


# --- origin_of ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://a.example.test/p?q=1#f", "https://a.example.test"),
        ("https://a.example.test:443/", "https://a.example.test"),
        ("http://a.example.test:80/", "http://a.example.test"),
        ("http://a.example.test:443/", "http://a.example.test:443"),
        ("https://a.example.test:80/", "https://a.example.test:80"),
        ("https://a.example.test:8443/x", "https://a.example.test:8443"),
        ("HTTPS://A.Example.TEST/Path", "https://a.example.test"),
        ("https://user:secret@a.example.test/", "https://a.example.test"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
        ("http://[::1]:80/", "http://[::1]"),
        ("https://[2001:DB8::1]/", "https://[2001:db8::1]"),
        ("http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080"),  # one host, one origin
        ("https://[2001:0DB8:0000::0001]/", "https://[2001:db8::1]"),
    ],
)
def test_origin_of_serialises_scheme_host_and_non_default_port(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "about:blank",
        "data:text/html,<p>hi</p>",
        "file:///etc/hosts",
        "javascript:alert(1)",
        "blob:https://a.example.test/0b5e",
        "ftp://a.example.test/",
        "https:///no-host",
        "/relative/path",
        "https://a.example.test:99999/",
        "",
    ],
)
def test_pages_with_no_tuple_origin_have_none(url: str) -> None:
    assert origin_of(url) is None


# --- trim_url -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "trimmed"),
    [
        ("https://a.example.test/cb?code=abc&state=x#frag", "https://a.example.test/cb"),
        ("https://a.example.test/reset#token=abc", "https://a.example.test/reset"),
        ("https://a.example.test:8443/a/b", "https://a.example.test:8443/a/b"),
        ("https://a.example.test", "https://a.example.test"),
    ],
)
def test_trim_url_keeps_origin_and_path_only(url: str, trimmed: str) -> None:
    assert trim_url(url) == trimmed


# --- bump ---------------------------------------------------------------------------------


def test_bump_adds_a_new_origin_on_top_with_its_whole_url_and_time() -> None:
    history = (entry("https://a.example.test"),)
    bumped = bump(history, "https://b.example.test/p?q=1#f", NOW, ttl=TTL, cap=CAP)
    assert bumped[0] == HistoryEntry(
        "https://b.example.test", "https://b.example.test/p?q=1#f", NOW
    )
    assert origins(bumped) == ["https://b.example.test", "https://a.example.test"]


def test_bump_moves_a_known_origin_to_the_top_keeping_one_entry_per_origin() -> None:
    history = (
        entry("https://a.example.test"),
        entry("https://b.example.test"),
        entry("https://c.example.test"),
    )
    bumped = bump(history, "https://c.example.test/new", NOW, ttl=TTL, cap=CAP)
    assert origins(bumped) == [
        "https://c.example.test",
        "https://a.example.test",
        "https://b.example.test",
    ]
    assert bumped[0].url == "https://c.example.test/new"
    assert bumped[0].at == NOW


def test_bump_treats_another_port_of_a_host_as_another_origin() -> None:
    history = (entry("https://a.example.test"),)
    bumped = bump(history, "https://a.example.test:8443/", NOW, ttl=TTL, cap=CAP)
    assert origins(bumped) == ["https://a.example.test:8443", "https://a.example.test"]


def test_bump_trims_query_and_fragment_of_the_entry_it_pushes_down() -> None:
    top = HistoryEntry("https://a.example.test", "https://a.example.test/cb?code=abc#t", NOW - 5)
    bumped = bump((top,), "https://b.example.test/?q=1", NOW, ttl=TTL, cap=CAP)
    assert bumped[0].url == "https://b.example.test/?q=1"
    assert bumped[1] == HistoryEntry("https://a.example.test", "https://a.example.test/cb", NOW - 5)


def test_bump_of_the_same_origin_keeps_the_new_whole_url() -> None:
    top = HistoryEntry("https://a.example.test", "https://a.example.test/x?old=1", NOW - 5)
    bumped = bump((top,), "https://a.example.test/y?new=1#f", NOW, ttl=TTL, cap=CAP)
    assert bumped == (
        HistoryEntry("https://a.example.test", "https://a.example.test/y?new=1#f", NOW),
    )


def test_bump_drops_entries_older_than_the_ttl() -> None:
    history = (
        entry("https://a.example.test", at=NOW - TTL),
        entry("https://b.example.test", at=NOW - TTL - 1),
    )
    bumped = bump(history, "https://c.example.test/", NOW, ttl=TTL, cap=CAP)
    assert origins(bumped) == ["https://c.example.test", "https://a.example.test"]


def test_bump_keeps_the_top_entry_however_old_when_it_is_the_one_bumped() -> None:
    old_top = HistoryEntry("https://a.example.test", "https://a.example.test/", NOW - 10 * TTL)
    bumped = bump((old_top,), "https://a.example.test/again", NOW, ttl=TTL, cap=CAP)
    assert bumped == (HistoryEntry("https://a.example.test", "https://a.example.test/again", NOW),)


def test_bump_caps_the_history_keeping_the_newest() -> None:
    history = tuple(entry(f"https://h{i}.example.test", at=NOW - i) for i in range(5))
    bumped = bump(history, "https://new.example.test/", NOW, ttl=TTL, cap=3)
    assert origins(bumped) == [
        "https://new.example.test",
        "https://h0.example.test",
        "https://h1.example.test",
    ]


def test_bump_of_a_url_with_no_origin_changes_nothing() -> None:
    top = HistoryEntry("https://a.example.test", "https://a.example.test/cb?code=1", NOW - 10 * TTL)
    history = (top, entry("https://b.example.test", at=NOW - 10 * TTL))
    assert bump(history, "about:blank", NOW, ttl=TTL, cap=1) == history
    assert bump((), "data:text/plain,x", NOW, ttl=TTL, cap=CAP) == ()


def test_bump_onto_an_empty_history_makes_one_entry() -> None:
    assert bump((), "https://a.example.test/p#f", NOW, ttl=TTL, cap=CAP) == (
        HistoryEntry("https://a.example.test", "https://a.example.test/p#f", NOW),
    )


# --- bump_many ----------------------------------------------------------------------------


def test_bump_many_applies_urls_in_order_so_the_last_is_on_top() -> None:
    history = (entry("https://a.example.test"),)
    bumped = bump_many(
        history,
        [
            "https://b.example.test/1?x=1",
            "https://a.example.test/2?y=2",
            "https://c.example.test/3#z",
        ],
        NOW,
        ttl=TTL,
        cap=CAP,
    )
    assert [(e.origin, e.url) for e in bumped] == [
        ("https://c.example.test", "https://c.example.test/3#z"),
        ("https://a.example.test", "https://a.example.test/2"),
        ("https://b.example.test", "https://b.example.test/1"),
    ]


def test_bump_many_skips_urls_with_no_origin_and_keeps_the_rest() -> None:
    bumped = bump_many(
        (),
        ["https://a.example.test/?q", "about:blank", "data:,x"],
        NOW,
        ttl=TTL,
        cap=CAP,
    )
    assert bumped == (HistoryEntry("https://a.example.test", "https://a.example.test/?q", NOW),)


def test_bump_many_equals_bumping_one_url_at_a_time() -> None:
    history = (
        entry("https://a.example.test", "/a?k=1"),
        entry("https://b.example.test", at=NOW - 2 * TTL),
    )
    urls = ["https://c.example.test/?c", "https://a.example.test/?a", "https://d.example.test/?d"]
    one_by_one = history
    for url in urls:
        one_by_one = bump(one_by_one, url, NOW, ttl=TTL, cap=3)
    assert bump_many(history, urls, NOW, ttl=TTL, cap=3) == one_by_one


def test_bump_many_with_only_originless_urls_changes_nothing() -> None:
    history = (entry("https://a.example.test", "/?k=1", at=NOW - 10 * TTL),)
    assert bump_many(history, ["about:blank", "javascript:void(0)"], NOW, ttl=TTL, cap=CAP) == (
        history
    )
