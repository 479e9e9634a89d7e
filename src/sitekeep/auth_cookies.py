"""Which cookies carry a sign-in: the site-agnostic heuristic behind a profile's default
cookie selection (SPEC §9).

One sign-in sets a dozen cookies — analytics, consent, A/B buckets, preferences — beside
the one or two that hold the login. The default selection keeps the login and leaves the
rest, judged only from what every browser reports (a name and the ``httpOnly`` flag), so
it works on any site:

1. **Deny-lists win.** Analytics and advertising cookies (``_ga``, ``_gid``, ``_fbp``,
   Hotjar, Segment, Matomo…) and preference or consent cookies (``OptanonConsent``,
   ``cookieconsent_status``, ``theme``, ``locale``…) are never selected, whatever their
   flags: they identify a visitor or a choice, not a sign-in.
2. **httpOnly is the strongest signal.** A session token is kept out of page scripts
   (the HttpOnly attribute, RFC 6265bis §4.1.2.6); analytics and preferences are read
   by scripts, so they are not httpOnly.
3. **Name patterns** catch the sign-in cookies that scripts may read: ``session``,
   ``sid``, ``token``, ``auth``, ``login``, ``csrf``/``xsrf``, ``jwt``, ``remember``, and
   the ``__Host-``/``__Secure-`` prefixes (RFC 6265bis §4.1.3), which sites use for the
   cookies they protect.

Names are compared in words: ``PHPSESSID`` → ``phpsessid``, ``ASP.NET_SessionId`` →
``asp net session id``, so ``sid`` matches ``connect.sid`` and ``APISID`` but not
``inside``. A person can override any choice; this only sets the default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Verdict", "classify", "is_auth_cookie"]

Signal = Literal["deny_list", "http_only", "prefix", "name", "none"]

_PREFIXES = ("__host-", "__secure-")

_STEMS = (
    "session",
    "sessid",
    "token",
    "auth",
    "login",
    "logged",
    "csrf",
    "xsrf",
    "jwt",
    "remember",
)
"""Matched anywhere in a word: ``sessionid``, ``phpsessid``, ``csrftoken``, ``aspxauth``."""

_SID = re.compile(r"^[a-z0-9]{0,5}sid$|^sess$")
"""``sid`` as a word or a short word's end: ``SID``, ``HSID``, ``SAPISID``,
``__Secure-3PSID``, ``connect.sid`` — but not ``inside`` or ``consider``."""

_DENY_NAMES = re.compile(
    r"^(?:"
    r"_ga|_ga_.*|_gat(?:_.*)?|_gid|_gcl_.*|__utm.*|_dc_gtm_.*"  # Google Analytics and Ads
    r"|_fbp|_fbc"  # Meta pixel
    r"|_hj.*"  # Hotjar
    r"|_clck|_clsk|_uet.*|muid"  # Microsoft Clarity and Ads
    r"|ajs_.*|mp_.*|amp_.*|amplitude_.*"  # Segment, Mixpanel, Amplitude
    r"|_pk_.*|__hs.*|hubspotutk|_parsely.*|optimizely.*|_gaexp|__qca"
    r"|_scid|_ttp|_tt_.*|_pin_unauth"  # Snap, TikTok, Pinterest pixels
    r"|intercom-.*"  # Intercom's messenger widget, not the site's own sign-in
    r"|__cf_bm|_cfuvid"  # Cloudflare bot score
    r")$"
)
"""Analytics, advertising and widget cookies, by their whole lowercase name."""

_DENY_WORDS = frozenset(
    {
        "consent",
        "cookieconsent",
        "optanon",
        "optanonconsent",
        "optanonalertboxclosed",
        "euconsent",
        "cookielawinfo",
        "cookiebot",
        "gdpr",
        "ccpa",
        "usprivacy",
        "theme",
        "dark",
        "darkmode",
        "locale",
        "lang",
        "language",
        "timezone",
        "tz",
        "currency",
        "country",
        "region",
        "experiment",
        "variant",
        "abtest",
        "ab",
        "banner",
        "dismissed",
        "tracking",
        "analytics",
        "visitor",
        "utm",
    }
)
"""Preference, consent and experiment words: a cookie with one of these in its name is
a choice, not a sign-in."""

_DENY_STEMS = ("consent", "optanon", "cookielaw", "cookiebot")
"""Consent managers whose cookie names run words together (``CookieConsent``)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a cookie is selected by default, and the signal that decided it."""

    selected: bool
    signal: Signal


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)  # SessionId -> Session Id
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def _denied(name: str, words: list[str]) -> bool:
    if _DENY_NAMES.match(name.lower()):
        return True
    joined = "".join(words)
    return any(w in _DENY_WORDS for w in words) or any(s in joined for s in _DENY_STEMS)


def _named_like_auth(words: list[str]) -> bool:
    joined = "".join(words)
    return any(stem in joined for stem in _STEMS) or any(_SID.match(w) for w in words)


def classify(name: str, *, http_only: bool) -> Verdict:
    """The default-selection verdict for a cookie named ``name`` (SPEC §9).

    Args:
        name: the cookie's name as the browser reports it.
        http_only: its ``httpOnly`` flag.

    Returns:
        ``selected`` and the deciding ``signal``: ``deny_list`` (analytics or a
        preference), ``http_only``, ``prefix`` (``__Host-``/``__Secure-``), ``name`` (a
        sign-in word) or ``none``.
    """
    words = _words(name)
    if _denied(name, words):
        return Verdict(False, "deny_list")
    if http_only:
        return Verdict(True, "http_only")
    if name.lower().startswith(_PREFIXES):
        return Verdict(True, "prefix")
    if _named_like_auth(words):
        return Verdict(True, "name")
    return Verdict(False, "none")


def is_auth_cookie(name: str, *, http_only: bool) -> bool:
    """Whether the heuristic selects the cookie by default (:func:`classify`)."""
    return classify(name, http_only=http_only).selected
