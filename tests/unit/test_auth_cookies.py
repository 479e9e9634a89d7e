"""The auth-cookie heuristic over real cookie names (SPEC §9)."""

from __future__ import annotations

import pytest

from sitekeep.auth_cookies import classify, is_auth_cookie

# (name, httpOnly as the framework or vendor sets it, selected, deciding signal)
REAL_COOKIES = [
    # sign-in cookies, as frameworks name and flag them
    ("sessionid", True, True, "http_only"),  # Django
    ("csrftoken", False, True, "name"),  # Django
    ("_myapp_session", True, True, "http_only"),  # Rails
    ("_myapp_session", False, True, "name"),  # Rails, httpOnly turned off
    ("remember_user_token", False, True, "name"),  # Devise
    ("PHPSESSID", False, True, "name"),  # PHP's default is not httpOnly
    ("JSESSIONID", False, True, "name"),  # Java servlets
    ("ASP.NET_SessionId", False, True, "name"),  # ASP.NET
    (".ASPXAUTH", False, True, "name"),  # ASP.NET forms auth
    (".AspNetCore.Identity.Application", True, True, "http_only"),  # ASP.NET Core
    ("laravel_session", True, True, "http_only"),  # Laravel
    ("XSRF-TOKEN", False, True, "name"),  # Laravel, Angular
    ("connect.sid", False, True, "name"),  # Express
    ("__Host-next-auth.csrf-token", True, True, "http_only"),  # NextAuth.js
    ("__Host-GAPS", False, True, "prefix"),  # __Host- prefixed, readable
    ("__Secure-next-auth.session-token", False, True, "prefix"),
    ("__Secure-3PSID", False, True, "prefix"),  # Google
    ("SID", False, True, "name"),  # Google
    ("HSID", False, True, "name"),
    ("SAPISID", False, True, "name"),
    ("wordpress_logged_in_0123abcd", False, True, "name"),  # WordPress
    ("user_session", True, True, "http_only"),  # GitHub
    ("logged_in", False, True, "name"),  # GitHub
    ("auth_token", False, True, "name"),  # X
    ("jwt", False, True, "name"),
    ("access_token", False, True, "name"),
    ("li_at", True, True, "http_only"),  # LinkedIn: only the flag says it
    ("xs", True, True, "http_only"),  # Facebook
    # analytics and advertising: never, whatever the flags
    ("_ga", False, False, "deny_list"),
    ("_ga_ABC123XYZ", False, False, "deny_list"),
    ("_gid", False, False, "deny_list"),
    ("_gat_UA-1234-1", False, False, "deny_list"),
    ("_gcl_au", False, False, "deny_list"),
    ("__utmz", False, False, "deny_list"),
    ("_fbp", False, False, "deny_list"),
    ("_hjSessionUser_123456", False, False, "deny_list"),  # has "session" in it
    ("_hjSession_123456", True, False, "deny_list"),
    ("ajs_anonymous_id", False, False, "deny_list"),  # Segment
    ("mp_0123abcd_mixpanel", False, False, "deny_list"),
    ("_pk_id.1.1fff", False, False, "deny_list"),  # Matomo
    ("hubspotutk", False, False, "deny_list"),
    ("intercom-session-abc123", False, False, "deny_list"),  # a widget, not the site
    ("__cf_bm", True, False, "deny_list"),  # Cloudflare bot score is httpOnly
    ("_clck", False, False, "deny_list"),  # Microsoft Clarity
    # consent and preferences
    ("OptanonConsent", False, False, "deny_list"),
    ("OptanonAlertBoxClosed", False, False, "deny_list"),
    ("cookieconsent_status", False, False, "deny_list"),
    ("CookieConsent", False, False, "deny_list"),  # Cookiebot
    ("euconsent-v2", False, False, "deny_list"),
    ("cookielawinfo-checkbox-necessary", False, False, "deny_list"),
    ("theme", False, False, "deny_list"),
    ("locale", False, False, "deny_list"),
    ("django_language", False, False, "deny_list"),
    ("lang", True, False, "deny_list"),
    ("timezone", False, False, "deny_list"),
    ("color_theme", False, False, "deny_list"),
    ("ab_test_bucket", False, False, "deny_list"),
    # no signal either way
    ("cart", False, False, "none"),
    ("seen_tour", False, False, "none"),
    ("inside", False, False, "none"),  # "sid" inside a word is not a session id
    ("considered", False, False, "none"),
    ("assessment", False, False, "none"),  # nor is "sess" inside one
]


@pytest.mark.parametrize(
    ("name", "http_only", "selected", "signal"),
    REAL_COOKIES,
    ids=[f"{n}-{'httponly' if h else 'js'}" for n, h, _, _ in REAL_COOKIES],
)
def test_the_heuristic_selects_sign_in_cookies_and_leaves_analytics_and_preferences(
    name: str, http_only: bool, selected: bool, signal: str
) -> None:
    verdict = classify(name, http_only=http_only)
    assert (verdict.selected, verdict.signal) == (selected, signal)
    assert is_auth_cookie(name, http_only=http_only) is selected


def test_http_only_alone_selects_a_cookie_with_no_telling_name() -> None:
    assert classify("a1", http_only=True).selected
    assert not classify("a1", http_only=False).selected


@pytest.mark.parametrize("name", ["__HOST-sid", "__host-x", "__SECURE-x", "__secure-x"])
def test_prefixes_count_in_any_case(name: str) -> None:
    """RFC 6265bis §5.4: user agents match cookie name prefixes case-insensitively."""
    assert classify(name, http_only=False).signal == "prefix"


def test_the_deny_list_wins_over_http_only_and_over_a_sign_in_word() -> None:
    assert classify("_ga", http_only=True).signal == "deny_list"
    assert classify("consent_token", http_only=True).signal == "deny_list"
