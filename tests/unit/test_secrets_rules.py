"""``sitekeep.secrets``: names, key names, host patterns, limits and ``host_allowed`` (SPEC §7)."""

from __future__ import annotations

import dataclasses

import pytest

from sitekeep.errors import InvalidInput
from sitekeep.secrets import (
    MAX_DESCRIPTION,
    MAX_HOSTS,
    MAX_KEYS,
    MAX_VALUE_CHARS,
    SecretInfo,
    check_description,
    check_hosts,
    check_key_name,
    check_name,
    check_pattern,
    check_values,
    host_allowed,
)

VALUE = "dummy-pass-7f3a"


@pytest.mark.parametrize("name", ["a", "github", "Prod.DB_admin-2", "0", "x" * 64])
def test_a_good_secret_name_passes_unchanged(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "-a", ".a", "_a", "a b", "a/b", "a:b", "é", "a\n", "x" * 65, "a@b"]
)
def test_a_bad_secret_name_is_refused_naming_the_field(name: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_name(name)
    assert caught.value.field == "name"


def test_a_bad_secret_name_names_the_field_the_caller_chose() -> None:
    with pytest.raises(InvalidInput) as caught:
        check_name("no good", "secret")
    assert caught.value.field == "secret"


@pytest.mark.parametrize("key", ["username", "password", "otp.seed", "-", "_x", "A" * 64])
def test_a_good_key_name_passes(key: str) -> None:
    assert check_key_name(key, "values") == key


@pytest.mark.parametrize("key", ["", "pass word", "a/b", "clé", "k" * 65, "a=b"])
def test_a_bad_key_name_is_refused(key: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_key_name(key, "values")
    assert caught.value.field == "values"


@pytest.mark.parametrize(
    ("pattern", "normalised"),
    [
        ("app.example.test", "app.example.test"),
        ("*.example.test", "*.example.test"),
        ("*.a.b.example.test", "*.a.b.example.test"),
        ("APP.Example.TEST", "app.example.test"),
        ("localhost", "localhost"),
        ("127.0.0.1", "127.0.0.1"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("*.example.co.uk", "*.example.co.uk"),
    ],
)
def test_a_good_pattern_is_kept_in_lowercase(pattern: str, normalised: str) -> None:
    assert check_pattern(pattern) == normalised


@pytest.mark.parametrize(
    "pattern",
    [
        "",
        "https://app.example.test",
        "app.example.test:8443",
        "app.example.test/login",
        "user@app.example.test",
        "app.example.test?x=1",
        "*",
        "*.",
        "**.example.test",
        "*.*.example.test",
        "*example.test",
        "app*.example.test",
        "a.*.example.test",
        "app.example.*",
        ".example.test",
        "example.test.",
        "a..example.test",
        "-app.example.test",
        "app-.example.test",
        "app_1.example.test",
        "app example.test",
        "[::1]",
        "bücher.example",
        ("a" * 64) + ".example.test",
        ".".join(["a" * 60] * 5),
        "*.test",
        "*.com",
        "*.co.uk",
        "*.github.io",
        "*.0.0.1",
    ],
)
def test_a_bad_pattern_is_refused_naming_the_field(pattern: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_pattern(pattern, "hosts[3]")
    assert caught.value.field == "hosts[3]"


def test_hosts_name_the_index_of_the_first_bad_pattern() -> None:
    with pytest.raises(InvalidInput) as caught:
        check_hosts(["app.example.test", "*.example.test", "https://x.example.test"])
    assert caught.value.field == "hosts[2]"


@pytest.mark.parametrize(
    "hosts", [[], ["a.example.test"] * (MAX_HOSTS + 1), "app.example.test", b"x.test"]
)
def test_hosts_must_be_a_list_of_one_to_thirty_two_patterns(hosts: list[str]) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_hosts(hosts)
    assert caught.value.field == "hosts"


def test_hosts_are_lowercased_and_deduplicated_in_order() -> None:
    assert check_hosts(["B.example.test", "*.example.test", "b.example.test"]) == (
        "b.example.test",
        "*.example.test",
    )
    assert len(check_hosts([f"h{i}.example.test" for i in range(MAX_HOSTS)])) == MAX_HOSTS


def test_good_values_are_copied_in_order() -> None:
    values = {"username": "dummy-user", "password": VALUE}
    checked = check_values(values)
    assert checked == values and list(checked) == ["username", "password"]
    assert checked is not values
    assert check_values({"k": "x" * MAX_VALUE_CHARS}) == {"k": "x" * MAX_VALUE_CHARS}


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({}, "values"),
        ({f"k{i}": "v" for i in range(MAX_KEYS + 1)}, "values"),
        ({"pass word": VALUE}, "values"),
        ({"password": ""}, "values.password"),
        ({"password": 1234}, "values.password"),
        ({"password": None}, "values.password"),
        ({"password": VALUE + "x" * MAX_VALUE_CHARS}, "values.password"),
        (["password", VALUE], "values"),
    ],
)
def test_bad_values_are_refused_naming_the_field_and_never_the_value(
    values: dict[str, str], field: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_values(values)
    assert caught.value.field == field
    assert VALUE not in caught.value.message and VALUE not in str(caught.value)


def test_a_bad_key_name_is_not_echoed_it_may_be_a_pasted_value() -> None:
    with pytest.raises(InvalidInput) as caught:
        check_values({f"{VALUE} ": "x"})
    assert VALUE not in caught.value.message and caught.value.field == "values"


def test_a_description_is_text_of_at_most_five_hundred_characters() -> None:
    assert check_description("") == ""
    assert check_description("d" * MAX_DESCRIPTION) == "d" * MAX_DESCRIPTION
    for bad in ("d" * (MAX_DESCRIPTION + 1), None):
        with pytest.raises(InvalidInput) as caught:
            check_description(bad)  # type: ignore[arg-type]
        assert caught.value.field == "description"


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("app.example.test", True),
        ("APP.Example.Test", True),
        ("other.example.test", False),
        ("a.app.example.test", False),
        ("app.example.test.evil.test", False),
        ("app.example.test.", False),
        ("", False),
    ],
)
def test_an_exact_pattern_allows_that_host_only(host: str, allowed: bool) -> None:
    assert host_allowed(host, ["app.example.test"]) is allowed


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("a.example.test", True),
        ("a.b.example.test", True),
        ("x.y.z.example.test", True),
        ("A.EXAMPLE.TEST", True),
        ("example.test", False),
        ("evilexample.test", False),
        ("a.evilexample.test", False),
        ("example.test.evil.test", False),
        ("a.example.test.evil.test", False),
        (".example.test", False),
        ("a..example.test", False),
        ("a.example.test.", False),
        ("example.other.test", False),
    ],
)
def test_a_wildcard_allows_subdomains_at_any_depth_but_not_the_apex(
    host: str, allowed: bool
) -> None:
    assert host_allowed(host, ["*.example.test"]) is allowed


def test_any_matching_pattern_allows_and_none_refuses() -> None:
    patterns = ["login.other.test", "*.example.test"]
    assert host_allowed("login.other.test", patterns)
    assert host_allowed("app.example.test", patterns)
    assert not host_allowed("other.test", patterns)
    assert not host_allowed("app.example.test", [])


def test_secret_info_is_frozen_and_has_no_place_for_values() -> None:
    info = SecretInfo("gh", "", ("github.com",), ("username", "password"), 1.0)
    assert [f.name for f in dataclasses.fields(info)] == [
        "name",
        "description",
        "hosts",
        "keys",
        "updated_at",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.name = "other"  # type: ignore[misc]
