"""``sitekeep.policy`` (navigation policy and keys, SPEC §12) and ``sitekeep.sites``."""

from __future__ import annotations

import pytest

from sitekeep.errors import InvalidInput, OwnAddress
from sitekeep.history import origin_of
from sitekeep.limits import MAX_URL
from sitekeep.policy import as_browsers_read, check_key, check_url
from sitekeep.sites import group_by_site, site_of

OWN = ["http://127.0.0.1:8700", "http://localhost:8700"]

# --- check_url ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://a.example.test/",
        "http://a.example.test:8080/p?q=1#f",
        "HTTPS://A.Example.TEST/",
        "about:blank",
        "  https://a.example.test/  ",
        "http://127.0.0.1:8701/",
    ],
)
def test_agents_may_open_http_pages_and_about_blank(url: str) -> None:
    assert check_url(url, own_origins=OWN) == url.strip()


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "chrome://settings",
        "chrome-extension://abc/page.html",
        "about:config",
        "about:blank#not-quite",
        "javascript:alert(1)",
        " JavaScript:alert(1)",
        "data:text/html,<script>1</script>",
        "view-source:https://a.example.test/",
        "ftp://a.example.test/",
        "/relative/path",
        "a.example.test/no-scheme",
        "https://",  # no host (``https:///x`` has one: a browser reads it as https://x/)
        "http://a b.example.test/",  # what no browser takes
        "http://[::1/",
        "",
        "   ",
        "https://a.example.test/?" + "x" * MAX_URL,  # the bound of every facade
        "https://a.example.test/\ud800",  # a lone surrogate: no text
    ],
)
def test_refused_urls_are_invalid_input_naming_the_url_field(url: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_url(url, own_origins=OWN)
    assert caught.value.field == "url"


def test_the_field_name_can_be_chosen_by_the_caller() -> None:
    with pytest.raises(InvalidInput) as caught:
        check_url("file:///x", field="steps.2.url")
    assert caught.value.field == "steps.2.url"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8700/admin",
        "http://localhost:8700/",
        "HTTP://LOCALHOST:8700/v1/sessions",
        "http://user@127.0.0.1:8700/",
    ],
)
def test_the_servers_own_origins_are_refused(url: str) -> None:
    with pytest.raises(OwnAddress) as caught:
        check_url(url, own_origins=OWN)
    assert caught.value.field == "url"


def test_own_origins_on_a_default_port_are_refused() -> None:
    with pytest.raises(OwnAddress):
        check_url("http://localhost/admin", own_origins=["http://localhost:80"])


# --- check_key ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["a", "0", "agent-1.session_2", "A" * 64])
def test_a_valid_session_key_is_returned(key: str) -> None:
    assert check_key(key) == key


@pytest.mark.parametrize(
    "key", ["", "-lead", ".lead", "_lead", "a" * 65, "has space", "a/b", "a\n", "é"]
)
def test_a_bad_session_key_is_invalid_input_naming_the_field(key: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_key(key)
    assert caught.value.field == "key"


# --- sites --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "site"),
    [
        ("https://a.example.test", "https://example.test"),
        ("https://x.y.example.test:8443", "https://example.test"),
        ("http://a.example.test", "http://example.test"),
        ("https://A.Example.TEST", "https://example.test"),
        ("https://a.b.co.uk", "https://b.co.uk"),
        ("https://a.github.io", "https://a.github.io"),
        ("http://localhost:3000", "http://localhost"),
        ("http://127.0.0.1:8000", "http://127.0.0.1"),
    ],
)
def test_site_of_is_the_scheme_and_registrable_domain(origin: str, site: str) -> None:
    assert site_of(origin) == site


def test_origins_of_one_registrable_domain_are_grouped_in_first_seen_order() -> None:
    groups = group_by_site(
        [
            "https://a.example.test",
            "https://b.other.test",
            "https://example.test:8443",
            "https://c.d.example.test",
        ]
    )
    assert groups == {
        "https://example.test": [
            "https://a.example.test",
            "https://example.test:8443",
            "https://c.d.example.test",
        ],
        "https://other.test": ["https://b.other.test"],
    }


def test_the_scheme_splits_a_site() -> None:
    groups = group_by_site(["https://a.example.test", "http://a.example.test"])
    assert list(groups.values()) == [["https://a.example.test"], ["http://a.example.test"]]


def test_hosts_under_a_private_public_suffix_are_separate_sites() -> None:
    groups = group_by_site(["https://a.github.io", "https://b.github.io"])
    assert list(groups.values()) == [["https://a.github.io"], ["https://b.github.io"]]


def test_ip_addresses_and_localhost_are_each_their_own_site() -> None:
    origins = [
        "http://127.0.0.1:8000",
        "http://127.0.0.2:8000",
        "http://[::1]:8000",
        "http://[::2]:8000",
        "http://localhost:8000",
        "http://a.localhost:8000",
    ]
    # "localhost" is not on the Public Suffix List, so like any unknown TLD it is a suffix
    # and a.localhost is a site of its own (as in Chromium's schemeful site).
    assert list(group_by_site(origins).values()) == [[o] for o in origins]


def test_ports_of_an_ip_address_share_its_site() -> None:
    groups = group_by_site(["http://127.0.0.1:8000", "http://127.0.0.1:9000"])
    assert list(groups.values()) == [["http://127.0.0.1:8000", "http://127.0.0.1:9000"]]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8700\\@a.example.test/",  # urlsplit: a.example.test:80
        "http://127.0.0.1:8700\\admin",  # urlsplit: a bad port
        "http:127.0.0.1:8700/",  # urlsplit: no host
        "http:\\\\localhost:8700/",
        "http:/127.0.0.1:8700/",
        "http://127.0.\t0.1:87\n00/",
        "http://a.example.test@127.0.0.1:08700/",
        "http://127.0.0.1%2e:8700/",
        " \x01http://127.1:8700/ ",
    ],
)
def test_urls_are_read_as_a_browser_reads_them(url: str) -> None:
    """Issue #24 (attacked afresh): each of these is the server's origin to a browser
    (WHATWG URL), whatever Python's urlsplit makes of it."""
    with pytest.raises(OwnAddress):
        check_url(url, own_origins=OWN)
    read = as_browsers_read(url)
    assert read is not None and origin_of(read) in OWN, read
