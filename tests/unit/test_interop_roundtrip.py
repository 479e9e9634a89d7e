"""Exports, and round trips through both formats (SPEC §15)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitekeep.interop import export_site_data, import_text
from sitekeep.model import Cookie, OriginStorage, SessionStorage, SiteData

FIXTURES = Path(__file__).parents[1] / "fixtures" / "interop"
NOW = 1_800_000_000
DAY = 86_400
F = NOW + 30 * DAY
PARTITION = {"topLevelSite": "https://example.test", "hasCrossSiteAncestor": True}

SITE_DATA = SiteData(
    cookies=(
        Cookie("sessionid", "dummy-sessionid", "app.example.test", http_only=True, secure=True,
               same_site="lax", expiry=F),
        Cookie("csrftoken", "dummy-csrftoken", ".example.test", same_site="strict"),
        Cookie("plain", "dummy-plain", "app.example.test", path="/account", expiry=F),
        Cookie("cross", "dummy-cross", ".example.test", secure=True, same_site="none"),
        Cookie("chips", "dummy-chips", "widget.other.test", secure=True, same_site="none",
               expiry=F, partition_key=PARTITION),
        Cookie("prio", "dummy-prio", "app.example.test", extras={"goog:priority": "High"}),
        Cookie("bytes", "ZHVtbXk=", "app.example.test", extras={"bidi:valueType": "base64"}),
    ),
    origins={
        "https://app.example.test": OriginStorage(local={"token": "dummy-token", "ü": "dummy-ü"}),
        "http://other.test:8080": OriginStorage(local={}),
    },
    session=SessionStorage("https://app.example.test", {"step": "dummy-step"}),
    saved_at=NOW,
)  # fmt: skip


def test_a_storage_state_export_is_playwrights_shape_with_session_storage_as_an_extension() -> None:
    exported = export_site_data(SITE_DATA, "storage-state")
    state = json.loads(exported.data)
    assert set(state) == {"cookies", "origins", "sitekeep"}
    first = state["cookies"][0]
    assert first == {
        "name": "sessionid",
        "value": "dummy-sessionid",
        "domain": "app.example.test",
        "path": "/",
        "expires": F,
        "httpOnly": True,
        "secure": True,
        "sameSite": "Lax",
    }
    by_name = {c["name"]: c for c in state["cookies"]}
    assert by_name["csrftoken"]["expires"] == -1 and by_name["csrftoken"]["sameSite"] == "Strict"
    assert by_name["plain"]["sameSite"] == "Lax"  # the browser's default, never wider
    assert by_name["chips"]["partitionKey"] == "https://example.test"
    assert by_name["chips"]["_crHasCrossSiteAncestor"] is True
    assert "bytes" not in by_name
    assert state["origins"][0] == {
        "origin": "https://app.example.test",
        "localStorage": [
            {"name": "token", "value": "dummy-token"},
            {"name": "ü", "value": "dummy-ü"},
        ],
    }
    extension = state["sitekeep"]
    assert extension["sessionStorage"] == {
        "origin": "https://app.example.test",
        "items": [{"name": "step", "value": "dummy-step"}],
    }
    assert "Playwright" in extension["about"] and "sessionStorage" in extension["about"]
    report = exported.report
    assert any("'sitekeep' extension" in r for r in report.remarks)
    assert any("vendor fields" in r for r in report.remarks)
    assert [(n.name, n.rule) for n in report.dropped] == [("bytes", "value-bytes")]
    assert [(n.name, n.rule) for n in report.changed] == [
        ("plain", "same-site-default"),
        ("prio", "same-site-default"),
    ]
    assert report.carried["cookies"] == 6 and report.read["cookies"] == 7


def test_a_cookies_txt_export_says_what_the_format_cannot_carry() -> None:
    exported = export_site_data(SITE_DATA, "cookies-txt")
    lines = exported.data.decode().splitlines()
    assert lines[0] == "# Netscape HTTP Cookie File"
    rows = [line for line in lines if line and not line.startswith("# ")]
    assert rows[0] == f"#HttpOnly_app.example.test\tFALSE\t/\tTRUE\t{F}\tsessionid\tdummy-sessionid"
    assert rows[1] == ".example.test\tTRUE\t/\tFALSE\t0\tcsrftoken\tdummy-csrftoken"
    notes = {(n.name, n.action, n.rule) for n in exported.report.notes}
    assert notes == {
        ("sessionid", "changed", "same-site-lost"),
        ("csrftoken", "changed", "same-site-lost"),
        ("cross", "changed", "same-site-lost"),
        ("chips", "dropped", "partition-lost"),
        ("https://app.example.test", "dropped", "local-storage-not-carried"),
        ("http://other.test:8080", "dropped", "local-storage-not-carried"),
        ("https://app.example.test", "dropped", "session-storage-not-carried"),
    }
    assert exported.report.carried["cookies"] == len(rows) == 6


def _without_extras(site_data: SiteData) -> SiteData:
    return replace(site_data, cookies=tuple(replace(c, extras={}) for c in site_data.cookies))


def _defaults_as_lax(site_data: SiteData) -> SiteData:
    """What storage state carries of each cookie: the browser's default SameSite as Lax."""
    return replace(
        site_data,
        cookies=tuple(
            replace(c, same_site="lax") if c.same_site == "default" else c
            for c in site_data.cookies
        ),
    )


def test_site_data_survives_a_storage_state_round_trip_with_nothing_noted() -> None:
    exported = export_site_data(SITE_DATA, "storage-state")
    back = import_text(exported.data.decode(), None, NOW)
    assert back.report.notes == []
    expected = replace(
        _without_extras(SITE_DATA),
        cookies=tuple(replace(c, extras={}) for c in SITE_DATA.cookies if c.name != "bytes"),
    )
    assert back.site_data == _defaults_as_lax(expected)


def test_cookies_survive_a_cookies_txt_round_trip_less_what_the_format_cannot_say() -> None:
    exported = export_site_data(SITE_DATA, "cookies-txt")
    back = import_text(exported.data.decode(), None, NOW)
    assert back.report.notes == []
    expected = [
        replace(c, same_site="default", extras={})
        for c in SITE_DATA.cookies
        if c.partition_key is None
    ]
    assert list(back.site_data.cookies) == expected
    assert back.site_data.origins == {} and back.site_data.session is None


JSON_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.json"))
TXT_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.txt"))


@pytest.mark.parametrize("fixture", JSON_FIXTURES + TXT_FIXTURES)
@pytest.mark.parametrize("fmt", ["storage-state", "cookies-txt"])
def test_a_normalised_import_exports_and_imports_again_unchanged(fixture: str, fmt: str) -> None:
    """Normalising is idempotent: what one import made, a second import of its export
    leaves as it is, whichever format carries it."""
    first = import_text((FIXTURES / fixture).read_text(encoding="utf-8"), None, NOW)
    exported = export_site_data(first.site_data, fmt)  # type: ignore[arg-type]
    second = import_text(exported.data.decode(), fmt, NOW)  # type: ignore[arg-type]
    assert second.report.notes == []
    if fmt == "storage-state":
        assert second.site_data == _defaults_as_lax(first.site_data)
    else:
        dropped = {n.where for n in exported.report.dropped}
        carried = [
            replace(c, same_site="default")
            for i, c in enumerate(first.site_data.cookies)
            if f"cookies[{i}]" not in dropped
        ]
        assert list(second.site_data.cookies) == carried


# -- properties over messy input -----------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_number = st.one_of(
    st.none(),
    st.integers(-10, 10**17),
    st.floats(-1e3, 1e17, allow_nan=False, allow_infinity=False),
)
_cookie = st.fixed_dictionaries(
    {
        "name": _text,
        "value": _text,
        "domain": st.sampled_from(
            ["a.example.test", ".example.test", "A.Example.Test.", ".localhost", ".10.0.0.1",
             "exa mple.test", ".co.uk", "::1", "bücher.example.test"]
        ),
        "path": st.sampled_from(["/", "/a", "a", ""]),
        "expires": _number,
        "httpOnly": st.booleans(),
        "secure": st.booleans(),
        "sameSite": st.one_of(st.none(), st.sampled_from(["Strict", "lax", "NONE", "x", ""])),
        "partitionKey": st.one_of(
            st.none(), st.sampled_from(["https://example.test", "https://a.example.test:1/x", "z"])
        ),
    }
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(_cookie, max_size=8))
def test_every_cookie_read_is_carried_or_dropped_with_a_note(
    cookies: list[dict[str, object]],
) -> None:
    imported = import_text(json.dumps({"cookies": cookies}), "storage-state", NOW)
    report = imported.report
    dropped = {n.where for n in report.dropped}
    assert len(imported.site_data.cookies) + len(dropped) == len(cookies)
    for cookie in imported.site_data.cookies:
        assert cookie.expiry is None or NOW < cookie.expiry <= NOW + 400 * DAY
        assert not (cookie.same_site == "none" and not cookie.secure)
        assert not cookie.name.lower().startswith("__host-") or (
            cookie.secure and cookie.path == "/" and not cookie.domain.startswith(".")
        )


@settings(max_examples=100, deadline=None)
@given(st.lists(_cookie, max_size=8))
def test_a_second_import_of_an_export_changes_nothing(cookies: list[dict[str, object]]) -> None:
    first = import_text(json.dumps({"cookies": cookies}), "storage-state", NOW)
    exported = export_site_data(first.site_data, "storage-state")
    second = import_text(exported.data.decode(), "storage-state", NOW)
    assert second.report.notes == []
    assert second.site_data == _defaults_as_lax(first.site_data)


@pytest.mark.parametrize(
    "given", [None, "", "strict", "LAX", "none", "None", "no_restriction", "unspecified", "x"]
)
def test_a_storage_state_export_gives_same_site_as_strict_lax_or_none_always(
    given: str | None,
) -> None:
    """Playwright's storage state requires ``sameSite`` as exactly Strict, Lax or None
    (its ``addCookies`` refuses others); whatever the browser or an import gave."""
    cookie: dict[str, object] = {
        "name": "s", "value": "dummy-s", "domain": "app.example.test", "path": "/",
        "expires": F, "httpOnly": False, "secure": True,
    }  # fmt: skip
    if given is not None:
        cookie["sameSite"] = given
    imported = import_text(json.dumps({"cookies": [cookie]}), None, NOW)
    browser_held = [
        Cookie("b", "dummy-b", "app.example.test", same_site=s)  # type: ignore[arg-type]
        for s in ("strict", "lax", "none", "default")
    ]
    data = replace(imported.site_data, cookies=(*imported.site_data.cookies, *browser_held))
    exported = export_site_data(data, "storage-state")
    written = [c.get("sameSite") for c in json.loads(exported.data)["cookies"]]
    assert all(s in ("Strict", "Lax", "None") for s in written), written  # was: left out
    assert written[1:] == ["Strict", "Lax", "Lax", "Lax"]  # an insecure None is no None
    if imported.site_data.cookies[0].same_site == "default":
        assert written[0] == "Lax"
    defaulted = [n.where for n in exported.report.changed if n.rule == "same-site-default"]
    unsaid = [
        f"cookies[{i}]"
        for i, c in enumerate(data.cookies)
        if c.same_site == "default" or (c.same_site == "none" and not c.secure)
    ]
    assert defaulted == unsaid  # each one the export made Lax is named
