"""``sitekeep.cookies``: BiDi ``network.Cookie`` ⇄ model, domain matching, expiry.

The raw shapes below are what ``storage.getCookies`` returns on this machine's Chromium and
Firefox (research/bidi-spike.md §1).
"""

from __future__ import annotations

from typing import Any

import pytest

from sitekeep.browser.samesite import SameSiteLog, parse_set_cookie
from sitekeep.cookies import (
    as_stored,
    cookie_host,
    cookie_origin,
    covers_host,
    from_bidi,
    is_unexpired,
    needs_header,
    settle_same_site,
    to_bidi,
    to_set_cookie,
    value_lost,
)
from sitekeep.history import host_of
from sitekeep.model import Cookie, SameSite

PARTITION = {"topLevelSite": "https://example.test", "hasCrossSiteAncestor": True}


def chromium_raw(**overrides: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "name": "sid",
        "value": {"type": "string", "value": "dummy-value"},
        "domain": "a.example.test",
        "path": "/",
        "httpOnly": True,
        "secure": False,
        "sameSite": "none",
        "size": 14,
        "goog:session": True,
        "goog:priority": "Medium",
        "goog:sourceScheme": "NonSecure",
    }
    raw.update(overrides)
    return raw


def cookie(**overrides: Any) -> Cookie:
    fields: dict[str, Any] = {"name": "sid", "value": "dummy-value", "domain": "a.example.test"}
    fields.update(overrides)
    return Cookie(**fields)


# --- from_bidi ----------------------------------------------------------------------------


def test_chromium_unspecified_same_site_reported_as_none_on_an_insecure_cookie_is_default() -> None:
    assert from_bidi(chromium_raw(sameSite="none", secure=False), "chromium").same_site == "default"


def test_same_site_none_on_a_secure_cookie_stays_none() -> None:
    assert from_bidi(chromium_raw(sameSite="none", secure=True), "chromium").same_site == "none"


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        ("strict", "strict"),
        ("lax", "lax"),
        ("Lax", "lax"),
        ("default", "default"),
        ("x", "default"),
    ],
)
def test_same_site_is_read_case_insensitively_and_unknown_values_become_default(
    reported: str, expected: SameSite
) -> None:
    assert from_bidi(chromium_raw(sameSite=reported), "firefox").same_site == expected


def test_from_bidi_reads_every_standard_field() -> None:
    raw = chromium_raw(secure=True, sameSite="strict", expiry=1_800_000_000, path="/app")
    assert from_bidi(raw, "chromium") == Cookie(
        name="sid",
        value="dummy-value",
        domain="a.example.test",
        path="/app",
        http_only=True,
        secure=True,
        same_site="strict",
        expiry=1_800_000_000,
        extras={"goog:priority": "Medium", "goog:sourceScheme": "NonSecure"},
    )


def test_chromium_partition_key_becomes_partition_key_and_not_an_extra() -> None:
    parsed = from_bidi(chromium_raw(**{"goog:partitionKey": PARTITION}), "chromium")
    assert parsed.partition_key == PARTITION
    assert "goog:partitionKey" not in parsed.extras


def test_vendor_fields_are_kept_in_extras_but_size_and_goog_session_are_dropped() -> None:
    extras = from_bidi(chromium_raw(**{"moz:custom": 1}), "chromium").extras
    assert extras == {"goog:priority": "Medium", "goog:sourceScheme": "NonSecure", "moz:custom": 1}


def test_a_base64_value_is_kept_as_is_and_remembered_as_base64() -> None:
    raw = chromium_raw(value={"type": "base64", "value": "AAEC/w=="})
    parsed = from_bidi(raw, "chromium")
    assert parsed.value == "AAEC/w=="
    assert to_bidi(parsed, "chromium")["value"] == {"type": "base64", "value": "AAEC/w=="}
    assert to_bidi(parsed, "firefox")["value"] == {"type": "base64", "value": "AAEC/w=="}


def test_a_float_expiry_becomes_whole_seconds() -> None:
    parsed = from_bidi(chromium_raw(expiry=1_800_000_000.75), "chromium")
    assert parsed.expiry == 1_800_000_000
    assert isinstance(parsed.expiry, int)


def test_a_cookie_without_expiry_is_a_session_cookie() -> None:
    assert from_bidi(chromium_raw(), "chromium").expiry is None


def test_a_minimal_firefox_cookie_gets_the_defaults() -> None:
    raw = {"name": "n", "value": {"type": "string", "value": "v"}, "domain": ".example.test"}
    assert from_bidi(raw, "firefox") == Cookie("n", "v", ".example.test")


# --- to_bidi ------------------------------------------------------------------------------


def test_to_bidi_for_chromium_sends_default_which_it_stores_as_lax() -> None:
    # Left out, Chromium would store an unspecified SameSite that rides on cross-site
    # POSTs for two minutes after it is written: a restored cookie would be wider.
    assert to_bidi(cookie(same_site="default"), "chromium")["sameSite"] == "default"


def test_to_bidi_for_chromium_sends_an_insecure_none_as_default() -> None:
    sent = to_bidi(cookie(same_site="none", secure=False), "chromium")
    assert sent["sameSite"] == "default"


@pytest.mark.parametrize("kind", ["chromium", "firefox"])
@pytest.mark.parametrize("same_site", ["strict", "lax"])
def test_to_bidi_sends_an_explicit_strict_or_lax(kind: Any, same_site: SameSite) -> None:
    assert to_bidi(cookie(same_site=same_site), kind)["sameSite"] == same_site


def test_to_bidi_sends_same_site_none_on_a_secure_cookie() -> None:
    assert to_bidi(cookie(same_site="none", secure=True), "chromium")["sameSite"] == "none"


def test_to_bidi_for_chromium_sends_the_partition_key_as_goog_partition_key() -> None:
    sent = to_bidi(cookie(partition_key=PARTITION), "chromium")
    assert sent["goog:partitionKey"] == PARTITION


def test_to_bidi_builds_a_storage_partial_cookie() -> None:
    chromium = cookie(path="/app", http_only=True, secure=True, same_site="lax", expiry=1_900)
    assert to_bidi(chromium, "chromium") == {
        "name": "sid",
        "value": {"type": "string", "value": "dummy-value"},
        "domain": "a.example.test",
        "path": "/app",
        "httpOnly": True,
        "secure": True,
        "sameSite": "lax",
        "expiry": 1_900,
    }


def test_to_bidi_for_firefox_sends_default_as_default() -> None:
    assert to_bidi(cookie(same_site="default"), "firefox")["sameSite"] == "default"
    assert to_bidi(cookie(same_site="none", secure=False), "firefox")["sameSite"] == "default"


def test_to_bidi_for_firefox_sends_no_vendor_fields() -> None:
    saved_in_chromium = from_bidi(
        chromium_raw(**{"goog:partitionKey": PARTITION, "expiry": 1_800_000_000.5}), "chromium"
    )
    sent = to_bidi(saved_in_chromium, "firefox")
    assert not [k for k in sent if ":" in k]
    assert sent["expiry"] == 1_800_000_000


def test_to_bidi_never_sends_size_or_vendor_extras_back() -> None:
    sent = to_bidi(from_bidi(chromium_raw(), "chromium"), "chromium")
    assert set(sent) == {"name", "value", "domain", "path", "httpOnly", "secure", "sameSite"}


# --- covers_host (RFC 6265bis §5.1.3) -----------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "host", "covered"),
    [
        ("a.example.test", "a.example.test", True),
        ("a.example.test", "b.a.example.test", False),
        ("a.example.test", "example.test", False),
        ("A.Example.TEST", "a.example.TEST", True),
        (".example.test", "example.test", True),
        (".example.test", "a.example.test", True),
        (".example.test", "b.a.example.test", True),
        (".example.test", "badexample.test", False),
        (".example.test", "example.test.evil.test", False),
        (".a.example.test", "example.test", False),
        (".Example.Test", "A.EXAMPLE.test", True),
        ("[::1]", "::1", True),  # both jars spell an IPv6 host so; an origin's host is ::1
        ("[::1]", "0:0:0:0:0:0:0:1", True),
        ("[2001:db8::a]", "[2001:DB8:0::A]", True),
        ("[::1]", "::2", False),
    ],
)
def test_covers_host_follows_rfc6265bis_domain_matching(
    domain: str, host: str, covered: bool
) -> None:
    assert covers_host(cookie(domain=domain), host) is covered


# --- is_unexpired -------------------------------------------------------------------------


def test_a_session_cookie_never_expires() -> None:
    assert is_unexpired(cookie(expiry=None), 4_000_000_000.0)


def test_a_cookie_is_unexpired_strictly_before_its_expiry() -> None:
    assert is_unexpired(cookie(expiry=1_000), 999.5)
    assert not is_unexpired(cookie(expiry=1_000), 1_000.0)
    assert not is_unexpired(cookie(expiry=1_000), 1_001.0)


# --- SameSite: never widened (issue #9 item 3) --------------------------------------------


@pytest.mark.parametrize(
    ("header", "url", "expected"),
    [
        ("d=4; Secure; Path=/", "https://a.test/x/y", (("d", "a.test", "/"), "default")),
        (
            "d=4; Secure; SameSite=unspecified",
            "https://a.test/x/y",
            (("d", "a.test", "/x"), "default"),
        ),
        ("e=5; SameSite=None; Secure", "https://A.test/", (("e", "a.test", "/"), "none")),
        (
            "f=6; samesite=LAX; Domain=.Example.test",
            "http://a.example.test",
            (("f", ".example.test", "/"), "lax"),
        ),
        ("g=7; Path=rel; SameSite=Strict", "http://a.test/p/q", (("g", "a.test", "/p"), "strict")),
        ("novalue", "http://a.test/", None),
        # An IPv6 host as the jar spells it ([::1]); a Domain on an IP makes host-only.
        ("h=8; SameSite=Lax", "http://[0:0::1]:8080/", (("h", "[::1]", "/"), "lax")),
        ("i=9; Domain=::1; SameSite=Lax", "http://[::1]/", (("i", "[::1]", "/"), "lax")),
        (
            "j=1; Domain=127.0.0.1; SameSite=Lax",
            "http://127.0.0.1/",
            (("j", "127.0.0.1", "/"), "lax"),
        ),
    ],
)
def test_a_set_cookie_header_names_its_cookie_and_same_site(
    header: str, url: str, expected: Any
) -> None:
    assert parse_set_cookie(header, url) == expected


def test_the_log_keeps_the_last_header_of_each_cookie_from_response_events() -> None:
    log = SameSiteLog()
    event = {
        "response": {
            "url": "https://a.test/",
            "headers": [
                {"name": "set-cookie", "value": {"type": "string", "value": "d=1; SameSite=None"}},
                {"name": "Set-Cookie", "value": {"type": "string", "value": "d=2; Secure\nx=1"}},
                {"name": "Set-Cookie", "value": {"type": "base64", "value": "eD0x"}},
                {"name": "Content-Type", "value": {"type": "string", "value": "y=2"}},
            ],
        }
    }
    log.on_response_completed(event)
    assert log.said(("d", "a.test", "/")) == "default"
    assert log.said(("x", "a.test", "/")) == "default"
    assert log.said(("y", "a.test", "/")) is None


SECURE = cookie(secure=True)


@pytest.mark.parametrize(
    ("reported", "said", "before", "settled"),
    [
        ("none", None, None, "default"),  # unknown: never wider
        ("none", "default", None, "default"),  # Set-Cookie: d=4; Secure (the input)
        ("none", "none", None, "none"),  # SameSite=None said so
        ("none", None, "none", "none"),  # a reattached socket: the last snapshot's word
        ("none", None, "lax", "default"),
        ("none", "lax", None, "default"),  # set again since, from script
        ("lax", "default", None, "default"),  # restored as default, Chromium says lax
        ("lax", None, "default", "default"),
        ("lax", None, None, "lax"),
        ("lax", "lax", "default", "lax"),
        ("strict", None, "default", "strict"),
    ],
)
def test_chromium_same_site_is_settled_never_wider_than_it_was_set(
    reported: SameSite, said: SameSite | None, before: SameSite | None, settled: SameSite
) -> None:
    previous = cookie(secure=True, same_site=before) if before else None
    got = settle_same_site(cookie(secure=True, same_site=reported), said, previous)
    assert got.same_site == settled


def test_a_chromium_default_is_checked_as_the_lax_it_stores() -> None:
    written = cookie(same_site="default")
    assert as_stored(written, 0, "chromium") == as_stored(cookie(same_site="lax"), 0)
    assert as_stored(written, 0, "firefox") != as_stored(cookie(same_site="lax"), 0)


def test_a_partitioned_cookie_stored_without_its_partition_is_not_as_saved() -> None:
    """A CHIPS cookie written back unpartitioned (chromium-bidi 17.0.2, the mapper engine's
    until 157.0.8090-0, dropped ``goog:partitionKey`` on ``storage.setCookie``) would be sent
    on every site: the restore's check must see it as changed, and one in another partition
    too."""
    site = {"topLevelSite": "http://example.test", "hasCrossSiteAncestor": True}
    saved = cookie(secure=True, same_site="none", partition_key=site)
    assert as_stored(saved, 0, "chromium") == as_stored(
        cookie(secure=True, same_site="none", partition_key=dict(reversed(site.items()))), 0
    )
    for stored in (None, {**site, "hasCrossSiteAncestor": False}):
        got = cookie(secure=True, same_site="none", partition_key=stored)
        assert as_stored(saved, 0, "chromium") != as_stored(got, 0)


def test_a_spare_response_never_sets_an_unspecified_same_site_in_chromium() -> None:
    header = to_set_cookie(cookie(value="v"), "chromium")
    assert header is not None and header.endswith("SameSite=Lax")
    assert "SameSite" not in (to_set_cookie(cookie(value="v"), "firefox") or "SameSite")


# --- values beyond Latin-1, bytes that are not UTF-8 (issue #9 items 1, 2) -----------------


@pytest.mark.parametrize(
    ("value", "name", "header"),
    [
        ("你好", "cjk", True),
        ("a 😀 b", "emoji", True),
        ("ü", "latin", False),  # base64 of its Latin-1 bytes does it
        ("ascii", "plain", False),
        ("x", "nämé", True),
    ],
)
def test_firefox_needs_a_header_for_text_beyond_latin_1(
    value: str, name: str, header: bool
) -> None:
    assert needs_header(cookie(name=name, value=value), "firefox") is header
    assert needs_header(cookie(name=name, value=value), "chromium") is False


def test_firefox_headers_carry_unicode_but_never_a_split_or_a_surrounding_space() -> None:
    assert to_set_cookie(cookie(name="cjk", value="a 你好 b"), "firefox") == (
        "cjk=a 你好 b; Path=/"
    )
    for value in ("x;y", " x", "x ", "x\ny", "x\udc00"):
        assert to_set_cookie(cookie(value=value), "firefox") is None, value
    assert to_set_cookie(cookie(name="a=b", value="v"), "firefox") is None
    assert to_set_cookie(cookie(value="你好"), "chromium") is None


def test_chromium_reports_a_value_with_its_non_utf8_bytes_dropped_and_size_tells() -> None:
    # Set-Cookie: raw_bad=x\xffy came back as "xy" with size 10 (7 + 3 bytes).
    lost = chromium_raw(name="raw_bad", value={"type": "string", "value": "xy"}, size=10)
    assert value_lost(lost, "chromium")
    kept = chromium_raw(name="raw_utf8", value={"type": "string", "value": "你好"}, size=14)
    assert not value_lost(kept, "chromium")
    assert not value_lost(lost, "firefox")  # Firefox counts UTF-16 units, and holds U+FFFD


@pytest.mark.parametrize("spelled", ["[::1]", "::1", "0:0:0:0:0:0:0:1", "[0000::0001]"])
def test_an_ipv6_cookie_host_is_one_host_however_it_is_spelled(spelled: str) -> None:
    held = cookie(domain=spelled)
    assert cookie_host(held) == "::1" == host_of("http://[::1]:8080")
    assert cookie_origin(held) == "http://[::1]"
