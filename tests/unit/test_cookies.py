"""``sitekeep.cookies``: BiDi ``network.Cookie`` ⇄ model, domain matching, expiry.

The raw shapes below are what ``storage.getCookies`` returns on this machine's Chromium and
Firefox (research/bidi-spike.md §1).
"""

from __future__ import annotations

from typing import Any

import pytest

from sitekeep.cookies import covers_host, from_bidi, is_unexpired, to_bidi
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


def test_to_bidi_for_chromium_omits_same_site_default() -> None:
    sent = to_bidi(cookie(same_site="default"), "chromium")
    assert "sameSite" not in sent


def test_to_bidi_for_chromium_omits_same_site_none_on_an_insecure_cookie() -> None:
    sent = to_bidi(cookie(same_site="none", secure=False), "chromium")
    assert "sameSite" not in sent


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
    assert set(sent) == {"name", "value", "domain", "path", "httpOnly", "secure"}


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
