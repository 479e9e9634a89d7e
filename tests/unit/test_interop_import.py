"""Importing storage state and cookies.txt: every normalisation rule, from fixture files
(tests/fixtures/interop/, dummy values, example.test hosts) (SPEC §15, §17)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sitekeep.cookies import MAX_AGE
from sitekeep.errors import InvalidInput
from sitekeep.interop import Imported, import_text
from sitekeep.model import Cookie

FIXTURES = Path(__file__).parents[1] / "fixtures" / "interop"
NOW = 1_800_000_000
DAY = 86_400
F = NOW + 30 * DAY  # the fixtures' future expiry


def load(name: str, *, strict: bool = False) -> Imported:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return import_text(text, None, NOW, strict=strict)


def by_name(imported: Imported) -> dict[str, Cookie]:
    return {c.name: c for c in imported.site_data.cookies}


def rules(imported: Imported) -> dict[str, set[tuple[str, str]]]:
    """cookie name → {(action, rule)} of its notes."""
    out: dict[str, set[tuple[str, str]]] = {}
    for note in imported.report.notes:
        out.setdefault(note.name, set()).add((note.action, note.rule))
    return out


ALL = sorted(p.name for p in FIXTURES.iterdir())


@pytest.mark.parametrize("fixture", ALL)
def test_an_import_never_drops_a_cookie_without_a_note(fixture: str) -> None:
    imported = load(fixture)
    report = imported.report
    dropped = {n.where for n in report.dropped if n.where.startswith(("cookies[", "line "))}
    assert report.carried["cookies"] + len(dropped) == report.read["cookies"]
    assert len(imported.site_data.cookies) == report.carried["cookies"]


@pytest.mark.parametrize("fixture", ALL)
def test_no_report_holds_a_cookie_or_storage_value(fixture: str) -> None:
    text = json.dumps(load(fixture).report.as_json())
    assert "dummy" not in text


@pytest.mark.parametrize("fixture", ALL)
def test_strict_refuses_an_import_that_would_drop_something(fixture: str) -> None:
    imported = load(fixture)
    if not imported.report.dropped:
        assert load(fixture, strict=True).site_data == imported.site_data
        return
    with pytest.raises(InvalidInput) as caught:
        load(fixture, strict=True)
    assert caught.value.field == imported.report.dropped[0].where
    assert "dummy" not in caught.value.message


def test_same_site_spellings_and_case() -> None:
    imported = load("same_site.json")
    got = {name: c.same_site for name, c in by_name(imported).items()}
    assert got == {
        "canonical_strict": "strict",
        "lower_lax": "lax",
        "upper_none": "none",
        "extension_no_restriction": "none",
        "extension_unspecified": "default",
        "empty": "default",
        "absent": "default",
        "unknown_word": "default",
        "a_number": "default",
        "none_without_secure": "default",
    }
    notes = rules(imported)
    assert "canonical_strict" not in notes and "absent" not in notes and "empty" not in notes
    for name in ("lower_lax", "upper_none", "extension_no_restriction", "extension_unspecified"):
        assert notes[name] == {("changed", "same-site-spelling")}
    assert notes["unknown_word"] == notes["a_number"] == {("changed", "same-site-unknown")}
    assert notes["none_without_secure"] == {("changed", "same-site-none-insecure")}


def test_expiry_forms() -> None:
    imported = load("expiry.json")
    got = {name: c.expiry for name, c in by_name(imported).items()}
    assert got == {
        "session_minus_one": None,
        "session_absent": None,
        "zero": None,
        "negative": None,
        "fraction": F,
        "milliseconds": F,
        "microseconds": F,
        "beyond_400_days": NOW + MAX_AGE,
        "alias_expiration_date": None,
        "cookie_editor_alias": F,
        "session_flag": None,
    }
    notes = rules(imported)
    assert "session_minus_one" not in notes and "session_absent" not in notes
    assert notes["zero"] == {("changed", "expiry-zero")}
    assert notes["negative"] == {("changed", "expiry-negative")}
    assert notes["fraction"] == {("changed", "expiry-fraction")}
    assert notes["milliseconds"] == {("changed", "expiry-milliseconds")}
    assert notes["microseconds"] == {("changed", "expiry-microseconds")}
    assert notes["past"] == {("dropped", "expiry-past")}
    assert notes["past_in_milliseconds"] == {
        ("changed", "expiry-milliseconds"),
        ("dropped", "expiry-past"),
    }
    assert notes["beyond_400_days"] == {("changed", "expiry-capped")}
    assert notes["cookie_editor_alias"] == {
        ("changed", "expiry-alias"),
        ("changed", "expiry-fraction"),
    }
    assert notes["session_flag"] == {("changed", "session-flag")}


def test_an_expiry_one_second_ahead_is_kept_and_one_at_now_is_dropped() -> None:
    state = {"cookies": [{"name": n, "value": "v", "domain": "a.example.test", "expires": e}
                         for n, e in (("ahead", NOW + 1), ("at_now", NOW))]}  # fmt: skip
    imported = import_text(json.dumps(state), "storage-state", NOW)
    assert [c.name for c in imported.site_data.cookies] == ["ahead"]


def test_cookie_name_prefixes() -> None:
    imported = load("prefixes.json")
    got = {n: (c.domain, c.path, c.secure) for n, c in by_name(imported).items()}
    assert got == {
        "__Host-ok": ("app.example.test", "/", True),
        "__Host-with-domain": ("example.test", "/", True),
        "__Host-with-path": ("app.example.test", "/", True),
        "__Host-insecure": ("app.example.test", "/", True),
        "__HOST-upper-all-three": ("example.test", "/", True),
        "__Secure-ok": (".example.test", "/", True),
        "__Secure-insecure": ("app.example.test", "/", True),
        "__secure-lower-insecure": ("app.example.test", "/", True),
    }
    notes = rules(imported)
    assert "__Host-ok" not in notes and "__Secure-ok" not in notes
    assert notes["__Host-with-domain"] == {("changed", "host-prefix-domain")}
    assert notes["__Host-with-path"] == {("changed", "host-prefix-path")}
    assert notes["__Host-insecure"] == {("changed", "host-prefix-secure")}
    assert notes["__HOST-upper-all-three"] == {
        ("changed", "host-prefix-domain"),
        ("changed", "host-prefix-path"),
        ("changed", "host-prefix-secure"),
    }
    assert (
        notes["__Secure-insecure"]
        == notes["__secure-lower-insecure"]
        == {("changed", "secure-prefix")}
    )


def test_domains_leading_dots_host_only_flags_ips_and_dotless_hosts() -> None:
    imported = load("domains.json")
    got = {n: (c.domain, c.path) for n, c in by_name(imported).items()}
    assert got == {
        "host_only": ("app.example.test", "/"),
        "domain_cookie": (".example.test", "/"),
        "upper_case": ("app.example.test", "/"),
        "trailing_dot": ("app.example.test", "/"),
        "idn": ("xn--bcher-kva.example.test", "/"),
        "ip_with_dot": ("127.0.0.1", "/"),
        "ip_host_only": ("127.0.0.1", "/"),
        "ipv6": ("[::1]", "/"),  # as both browsers' jars spell it
        "dotless_domain": ("localhost", "/"),
        "dotless_host": ("localhost", "/"),
        "public_suffix": ("co.uk", "/"),
        "host_only_flag_says_host": ("example.test", "/"),
        "host_only_flag_says_domain": (".example.test", "/"),
        "from_url": ("app.example.test", "/account"),
        "relative_path": ("app.example.test", "/"),
        "no_path": ("app.example.test", "/"),
    }
    notes = rules(imported)
    assert "host_only" not in notes and "domain_cookie" not in notes
    assert notes["upper_case"] == {("changed", "domain-case")}
    assert notes["trailing_dot"] == {("changed", "domain-trailing-dot")}
    assert notes["idn"] == {("changed", "domain-idna")}
    assert notes["ip_with_dot"] == {("changed", "domain-ip")}
    assert "ip_host_only" not in notes and "dotless_host" not in notes
    assert notes["ipv6"] == {("changed", "domain-ipv6")}
    assert (
        notes["dotless_domain"] == notes["public_suffix"] == {("changed", "domain-public-suffix")}
    )
    assert notes["not_a_host"] == notes["a_scheme"] == {("dropped", "domain-invalid")}
    assert notes["host_only_flag_says_host"] == {("changed", "host-only-flag")}
    assert notes["host_only_flag_says_domain"] == {("changed", "host-only-flag")}
    assert notes["from_url"] == {("changed", "domain-from-url")}
    assert notes["relative_path"] == notes["no_path"] == {("changed", "path-default")}


def test_partition_keys() -> None:
    imported = load("partition_keys.json")
    got = {n: (c.partition_key, c.secure) for n, c in by_name(imported).items()}
    site = "https://example.test"
    assert got == {
        "playwright_string": ({"topLevelSite": site, "hasCrossSiteAncestor": True}, True),
        "playwright_no_flag": ({"topLevelSite": site, "hasCrossSiteAncestor": True}, True),
        "bidi_object": ({"topLevelSite": site, "hasCrossSiteAncestor": False}, True),
        "puppeteer_object": ({"topLevelSite": site, "hasCrossSiteAncestor": True}, True),
        "an_origin_not_a_site": ({"topLevelSite": site, "hasCrossSiteAncestor": True}, True),
        "insecure_partitioned": ({"topLevelSite": site, "hasCrossSiteAncestor": True}, True),
        "empty_key": (None, True),
    }
    notes = rules(imported)
    assert "playwright_string" not in notes and "playwright_no_flag" not in notes
    assert notes["bidi_object"] == notes["puppeteer_object"] == {("changed", "partition-key-form")}
    assert notes["an_origin_not_a_site"] == {("changed", "partition-key-site")}
    assert notes["insecure_partitioned"] == {("changed", "partitioned-insecure")}
    assert notes["not_a_site"] == {("dropped", "partition-key-invalid")}


def test_names_values_and_duplicates() -> None:
    imported = load("names_values.json")
    kept = [(c.name, c.path, c.value) for c in imported.site_data.cookies]
    assert kept == [
        ("", "/", "dummy-nameless"),
        ("tab_is_allowed", "/", "dummy\tvalue"),
        ("repeated", "/", "dummy-second"),
        ("repeated", "/other", "dummy-other-path"),
        ("number_flags", "/", "dummy-number_flags"),
    ]
    number_flags = imported.site_data.cookies[-1]
    assert (number_flags.http_only, number_flags.secure) == (True, False)
    drops = {(n.where, n.rule) for n in imported.report.dropped}
    assert drops == {
        ("cookies[0]", "name-empty"),
        ("cookies[2]", "control-character"),
        ("cookies[4]", "too-large"),
        ("cookies[5]", "empty-name-prefix"),
        ("cookies[6]", "duplicate"),
    }
    assert rules(imported)["number_flags"] == {("changed", "flag-number")}


def test_origins_normalised_merged_and_the_session_storage_extension_read() -> None:
    imported = load("origins.json")
    site_data = imported.site_data
    assert {o: dict(s.local) for o, s in site_data.origins.items()} == {
        "https://app.example.test": {
            "token": "dummy-token",
            "k": "dummy-k",
            "later": "dummy-later",
        },
        "http://other.test:8080": {"map": "dummy-map"},
        "https://idb.example.test": {},
    }
    assert site_data.session is not None
    assert (site_data.session.origin, dict(site_data.session.items)) == (
        "https://app.example.test",
        {"step": "dummy-step"},
    )
    notes = {(n.where, n.action, n.rule) for n in imported.report.notes}
    assert notes == {
        ("origins[1]", "changed", "origin-normalised"),
        ("origins[1]", "changed", "origin-repeated"),
        ("origins[2]", "changed", "origin-repeated"),
        ("origins[4]", "dropped", "origin-invalid"),
    }
    assert imported.report.remarks == ["origins[5]: its indexedDB is not imported"]
    assert imported.report.read["origins"] == 6
    assert imported.report.carried["origins"] == 3
    assert imported.report.carried["session_items"] == 1


IMPOSSIBLE_HOSTS = [
    '"><svg onload=alert(1)>',
    "a b",
    "x%2f..%2f..",
    "a..b.example.test",
    "app.example.test:bad:port",
    "under score!",
    "<script>",
    "back\\slash",
]


@pytest.mark.parametrize("host", IMPOSSIBLE_HOSTS)
def test_an_origin_on_a_host_no_browser_would_accept_is_dropped_like_a_cookies_domain(
    host: str,
) -> None:
    """Issue #24: an imported storage state stored origins on impossible hosts (an HTML
    tag, a space, percent-escapes), while a cookie on the same host was refused. Every
    host an import reads goes through the one rule (``rules.canonical_host``): an
    origin's, the sessionStorage extension's, a partition key's site, a cookie's."""
    state = {
        "cookies": [
            {"name": "sid", "value": "dummy", "domain": host, "path": "/"},
            {
                "name": "chip",
                "value": "dummy",
                "domain": "app.example.test",
                "path": "/",
                "secure": True,
                "partitionKey": f"https://{host}",
            },
        ],
        "origins": [
            {"origin": f"https://{host}", "localStorage": [{"name": "k", "value": "v"}]},
            {"origin": f"http://{host}:8080", "localStorage": [{"name": "k", "value": "v"}]},
            {"origin": "https://app.example.test", "localStorage": [{"name": "k", "value": "v"}]},
        ],
        "sitekeep": {
            "sessionStorage": {"origin": f"https://{host}", "items": [{"name": "s", "value": "v"}]}
        },
    }
    imported = import_text(json.dumps(state), None, NOW)
    assert list(imported.site_data.origins) == ["https://app.example.test"]
    assert imported.site_data.session is None and imported.site_data.cookies == ()
    drops = {(n.where, n.rule) for n in imported.report.dropped}
    assert drops == {
        ("cookies[0]", "domain-invalid"),
        ("cookies[1]", "partition-key-invalid"),
        ("origins[0]", "origin-invalid"),
        ("origins[1]", "origin-invalid"),
        ("sitekeep.sessionStorage", "origin-invalid"),
    }
    with pytest.raises(InvalidInput) as refused:
        import_text(json.dumps(state), None, NOW, strict=True)
    assert refused.value.field == "cookies[0]"


@pytest.mark.parametrize(
    ("written", "origin"),
    [
        ("https://Bücher.Example.test", "https://xn--bcher-kva.example.test"),
        ("https://[::1]:8443/", "https://[::1]:8443"),
        ("http://app.example.test.:80", "http://app.example.test"),
        ("https://127.0.0.1", "https://127.0.0.1"),
    ],
)
def test_an_origin_is_kept_as_a_browser_serialises_it(written: str, origin: str) -> None:
    state = {"origins": [{"origin": written, "localStorage": [{"name": "k", "value": "v"}]}]}
    imported = import_text(json.dumps(state), None, NOW)
    assert list(imported.site_data.origins) == [origin]


def test_a_bare_cookie_editor_list_is_read_as_cookies() -> None:
    imported = load("bare_list.json")
    got = {n: (c.domain, c.same_site, c.expiry, c.http_only) for n, c in by_name(imported).items()}
    assert got == {
        "sessionid": (".example.test", "none", F, True),
        "csrftoken": ("app.example.test", "lax", None, False),
    }
    assert imported.report.remarks == [
        "a bare list of cookies was read as a storage state's cookies"
    ]


def test_curl_cookies_txt() -> None:
    imported = load("curl.cookies.txt")
    got = {
        n: (c.domain, c.path, c.secure, c.http_only, c.expiry, c.same_site)
        for n, c in by_name(imported).items()
    }
    assert got == {
        "sessionid": (".example.test", "/", True, True, F, "default"),
        "csrftoken": ("app.example.test", "/", False, False, None, "default"),
        "__Secure-pref": ("app.example.test", "/account", True, False, F, "default"),
    }
    assert imported.report.notes == []


def test_cookies_txt_quirks_are_normalised_and_unreadable_lines_dropped_by_number() -> None:
    imported = load("quirks.cookies.txt")
    got = {n: (c.domain, c.value, c.http_only) for n, c in by_name(imported).items()}
    assert got == {
        "flag_says_domain": (".example.test", "dummy-a", False),
        "flag_says_host": ("example.test", "dummy-b", False),
        "no_value_field": ("app.example.test", "", False),
        "milliseconds": ("app.example.test", "dummy-c", False),
        "http_only": ("app.example.test", "dummy-h", True),
    }
    notes = {(n.where, n.action, n.rule) for n in imported.report.notes}
    assert notes == {
        ("line 2", "changed", "host-only-flag"),
        ("line 3", "changed", "host-only-flag"),
        ("line 5", "changed", "expiry-milliseconds"),
        ("line 6", "dropped", "expiry-past"),
        ("line 7", "dropped", "line-malformed"),
        ("line 8", "dropped", "line-malformed"),
        ("line 9", "dropped", "line-malformed"),
    }
    malformed = [n for n in imported.report.notes if n.rule == "line-malformed"]
    assert all(n.name == "" and n.domain == "" for n in malformed)  # never the line's text


# -- what is refused outright, with the field named ---------------------------------------


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ('{"cookies": [}', "source"),
        ('{"cookies": [], "cookies": []}', "source"),
        ('{"cookies": [{"name": "a", "value": "v", "domain": "x.test", "expires": NaN}]}',
         "source"),
        ('"a string"', "source"),
        ('{"cookies": {}}', "cookies"),
        ('{"cookies": ["x"]}', "cookies[0]"),
        ('{"cookies": [{"value": "v", "domain": "x.test"}]}', "cookies[0].name"),
        ('{"cookies": [{"name": 1, "value": "v", "domain": "x.test"}]}', "cookies[0].name"),
        ('{"cookies": [{"name": "a", "domain": "x.test"}]}', "cookies[0].value"),
        ('{"cookies": [{"name": "a", "value": "v"}]}', "cookies[0] (no domain).url"),
        ('{"cookies": [{"name": "a", "value": "v", "url": "ftp://x.test/"}]}', "cookies[0].url"),
        ('{"cookies": [{"name": "a", "value": "v", "domain": "x.test", "expires": "soon"}]}',
         "cookies[0].expires"),
        ('{"cookies": [{"name": "a", "value": "v", "domain": "x.test", "expires": true}]}',
         "cookies[0].expires"),
        ('{"cookies": [{"name": "a", "value": "v", "domain": "x.test", "secure": "yes"}]}',
         "cookies[0].secure"),
        ('{"cookies": [{"name": "a", "value": "v", "domain": "x.test", "httpOnly": 2}]}',
         "cookies[0].httpOnly"),
        ('{"cookies": [{"name": "a", "value": "v", "domain": "x.test", "partitionKey": 3}]}',
         "cookies[0].partitionKey"),
        ('{"origins": {}}', "origins"),
        ('{"origins": [{"localStorage": []}]}', "origins[0].origin"),
        ('{"origins": [{"origin": "https://x.test", "localStorage": [{"name": "k"}]}]}',
         "origins[0].localStorage[0].value"),
        ('{"origins": [{"origin": "https://x.test", "localStorage": "k=v"}]}',
         "origins[0].localStorage"),
        ('{"sitekeep": {"sessionStorage": {"items": []}}}', "sitekeep.sessionStorage.origin"),
    ],
)  # fmt: skip
def test_a_broken_document_is_refused_naming_the_field(document: str, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        import_text(document, "storage-state", NOW)
    assert caught.value.field == field


def test_a_json_error_says_where_without_quoting_the_text() -> None:
    text = '{"cookies": [{"name": "a", "value": "dummy-secret-value" "domain": "x.test"}]}'
    with pytest.raises(InvalidInput) as caught:
        import_text(text, None, NOW)
    assert "line 1 column" in caught.value.message
    assert "dummy-secret-value" not in caught.value.message


def test_an_empty_document_imports_nothing() -> None:
    for text, fmt in (("{}", "storage-state"), ("", "cookies-txt"), ("[]", None)):
        imported = import_text(text, fmt, NOW)  # type: ignore[arg-type]
        assert imported.site_data.cookies == () and imported.site_data.origins == {}


def _raw(**kw: Any) -> str:
    return json.dumps({"cookies": [{"name": "a", "value": "v", "domain": "x.example.test", **kw}]})


def test_the_snapshot_time_is_the_import_time() -> None:
    assert import_text(_raw(), None, NOW).site_data.saved_at == NOW


# -- issue #26 item 6: what other tools read the same way ---------------------------------


def test_a_cookies_txt_line_with_an_empty_expiry_is_a_session_cookie_as_mozilla_reads_it(
    tmp_path: Path,
) -> None:
    from http.cookiejar import MozillaCookieJar

    text = (
        "# Netscape HTTP Cookie File\n"
        "app.example.test\tFALSE\t/\tFALSE\t\tempty\tdummy-empty\n"
        ".example.test\tTRUE\t/\tTRUE\t \tspaced\tdummy-spaced\n"
        "#HttpOnly_app.example.test\tFALSE\t/\tFALSE\t\thttp_only\tdummy-h\n"
    )
    jar_file = tmp_path / "cookies.txt"  # MozillaCookieJar takes the empty field only
    jar_file.write_text(text.replace("\t \t", "\t\t"), encoding="utf-8")
    jar = MozillaCookieJar()
    jar.load(str(jar_file), ignore_discard=True)
    mozilla = {c.name: (c.expires, c.discard) for c in jar}
    assert mozilla["empty"] == (None, True)  # the reference reading: a session cookie

    imported = import_text(text, None, NOW)
    got = {n: (c.domain, c.expiry, c.http_only) for n, c in by_name(imported).items()}
    assert got == {  # was: each dropped as "line-malformed"
        "empty": ("app.example.test", None, False),
        "spaced": (".example.test", None, False),
        "http_only": ("app.example.test", None, True),
    }
    assert imported.report.notes == []


@pytest.mark.parametrize(
    "spelled", ["::1", "[::1]", "0:0:0:0:0:0:0:1", "0000::0001", "[0:0::1]", ".::1"]
)
def test_an_ipv6_domain_is_one_host_however_it_is_spelled(spelled: str) -> None:
    state = {
        "cookies": [
            {"name": "v6", "value": "dummy-v6", "domain": spelled, "path": "/", "expires": F},
            {"name": "v6", "value": "dummy-later", "domain": "::1", "path": "/", "expires": F},
        ]
    }
    imported = import_text(json.dumps(state), None, NOW)
    assert [(c.domain, c.value) for c in imported.site_data.cookies] == [("[::1]", "dummy-later")]
    notes = {(n.where, n.rule) for n in imported.report.notes}
    assert ("cookies[0]", "duplicate") in notes  # was: two cookies for one host


@pytest.mark.parametrize(
    ("spelled", "canonical"),
    [
        ("2001:DB8::A", "[2001:db8::a]"),
        ("[2001:0db8:0000:0000:0000:0000:0000:000a]", "[2001:db8::a]"),
        ("::FFFF:7F00:1", "[::ffff:7f00:1]"),
    ],
)
def test_an_ipv6_domain_is_kept_as_a_browser_serialises_it(spelled: str, canonical: str) -> None:
    line = f"{spelled}\tFALSE\t/\tFALSE\t0\tv6\tdummy-v6\n"
    imported = import_text(line, "cookies-txt", NOW)
    assert [c.domain for c in imported.site_data.cookies] == [canonical]
    origin = f"https://{canonical}:8443"
    state = {"origins": [{"origin": f"https://[{spelled.strip('[]')}]:8443/", "localStorage": []}]}
    state["origins"][0]["localStorage"] = [{"name": "k", "value": "dummy-k"}]
    assert list(import_text(json.dumps(state), None, NOW).site_data.origins) == [origin]
