"""Where "Sign in again" lands (SPEC §10): the profile's first saved origin its cookies
apply to, scheme and port as saved; a cookie's host only when no origin was saved."""

from __future__ import annotations

from sitekeep.model import Cookie, OriginStorage, SessionStorage, SiteData
from sitekeep.profiles import landing

SHOP = "http://shop.example.test:8123"
APP = "https://app.example.test:8443"


def test_the_first_saved_origin_the_cookies_apply_to_keeps_its_scheme_and_port() -> None:
    jar = (Cookie("sid", "v", ".app.example.test", secure=True),)
    data = SiteData(cookies=jar, origins={SHOP: OriginStorage({}), APP: OriginStorage({})})
    assert landing(data) == APP + "/"


def test_a_parent_domain_cookie_matches_its_subdomains_origin() -> None:
    jar = (Cookie("sid", "v", ".example.test"),)
    origins = {"http://elsewhere.test:9": OriginStorage({}), SHOP: OriginStorage({})}
    assert landing(SiteData(cookies=jar, origins=origins)) == SHOP + "/"


def test_the_main_tabs_session_storage_origin_counts_as_saved() -> None:
    jar = (Cookie("sid", "v", "shop.example.test"),)
    data = SiteData(cookies=jar, session=SessionStorage(SHOP, {"k": "v"}))
    assert landing(data) == SHOP + "/"


def test_without_a_matching_origin_the_first_origin_then_a_cookies_host() -> None:
    jar = (Cookie("sid", "v", ".other.test"),)
    assert landing(SiteData(cookies=jar, origins={SHOP: OriginStorage({})})) == SHOP + "/"
    assert landing(SiteData(cookies=jar)) == "http://other.test/"
    secure = (Cookie("sid", "v", ".other.test", secure=True),)
    assert landing(SiteData(cookies=secure)) == "https://other.test/"
    assert landing(SiteData()) is None


def test_a_host_only_cookie_does_not_match_its_hosts_subdomains() -> None:
    jar = (Cookie("sid", "v", "example.test"),)
    sub, own = "http://shop.example.test:8123", "http://example.test:8124"
    data = SiteData(cookies=jar, origins={sub: OriginStorage({}), own: OriginStorage({})})
    assert landing(data) == own + "/"
