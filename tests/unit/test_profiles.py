"""Profile rules without a store or a browser (SPEC §9, §12): what a capture keeps, what it
derives, and a sealed profile that opens only for its own (tenant, kind, id)."""

from __future__ import annotations

import pytest

from sitekeep.errors import InvalidInput, StoreUnavailable
from sitekeep.model import Cookie, OriginStorage, SessionStorage, SiteData, dump_site_data
from sitekeep.profiles import KIND, _derived, captured, first_site
from sitekeep.stores.cipher import Cipher

NOW = 1_800_000_000
APP = "http://app.example.test:8001"
JAR = (
    Cookie("sessionid", "v1", "app.example.test", http_only=True, expiry=NOW + 7200),
    Cookie("csrftoken", "v2", ".example.test", expiry=NOW + 3600),
    Cookie("remember", "v3", "app.example.test", expiry=NOW - 1),  # expired
    Cookie("_ga", "v4", ".example.test"),  # a session cookie
)
DATA = SiteData(
    cookies=JAR,
    origins={APP: OriginStorage({"k": "v"}, indexed_db=({"name": "db"},))},
    session=SessionStorage(APP, {"s": "v"}),
    saved_at=NOW - 10,
)


def test_a_capture_keeps_unexpired_cookies_and_web_storage_but_no_indexeddb() -> None:
    kept = captured(DATA, None, NOW)
    assert [c.name for c in kept.cookies] == ["sessionid", "csrftoken", "_ga"]
    assert kept.origins[APP].local == {"k": "v"} and kept.origins[APP].indexed_db == ()
    assert kept.session == DATA.session and kept.saved_at == NOW


def test_a_selection_keeps_only_the_named_cookies_with_or_without_the_leading_dot() -> None:
    selection = [
        {"domain": ".APP.example.test", "name": "sessionid"},
        {"domain": "example.test", "name": "csrftoken"},
    ]
    kept = captured(DATA, selection, NOW)
    assert [c.name for c in kept.cookies] == ["sessionid", "csrftoken"]


@pytest.mark.parametrize(
    "selection",
    [
        [{"domain": "app.example.test", "name": "remember"}],  # only an expired one
        [{"domain": "other.test", "name": "sessionid"}],
        [],
    ],
)
def test_a_selection_matching_no_unexpired_cookie_is_refused(
    selection: list[dict[str, str]],
) -> None:
    with pytest.raises(InvalidInput) as caught:
        captured(DATA, selection, NOW)
    assert caught.value.field == "cookies"


def test_cookie_domains_and_the_earliest_persistent_expiry_are_derived() -> None:
    domains, expires_at = _derived(captured(DATA, None, NOW))
    assert domains == ("app.example.test", "example.test")
    assert expires_at == NOW + 3600
    only_session = SiteData(cookies=(JAR[3],))
    assert _derived(only_session) == (("example.test",), None)


def test_first_site_is_a_stored_origin_else_the_session_origin_else_none() -> None:
    assert first_site(DATA) == APP
    assert first_site(SiteData(session=SessionStorage(APP, {}))) == APP
    assert first_site(SiteData(cookies=JAR)) is None


def test_a_sealed_profile_opens_only_for_its_own_tenant_kind_and_id() -> None:
    cipher = Cipher(bytes(range(32)))
    sealed = cipher.seal(dump_site_data(DATA), tenant="t1", kind=KIND, ident="p1")
    assert cipher.open(sealed, tenant="t1", kind=KIND, ident="p1") == dump_site_data(DATA)
    for tenant, kind, ident in (("t2", KIND, "p1"), ("t1", KIND, "p2"), ("t1", "site-data", "p1")):
        with pytest.raises(StoreUnavailable):
            cipher.open(sealed, tenant=tenant, kind=kind, ident=ident)


def test_a_capture_keeps_the_origin_it_was_taken_on_even_without_storage() -> None:
    form = "http://form.example.test:8123"
    kept = captured(SiteData(cookies=JAR[:1]), None, NOW, form + "/welcome?x=1")
    assert dict(kept.origins) == {form: OriginStorage({})} and first_site(kept) == form
    again = captured(DATA, None, NOW, APP + "/cart")
    assert again.origins[APP].local == {"k": "v"}  # an origin with storage keeps it
    assert list(captured(DATA, None, NOW, "about:blank").origins) == [APP]
