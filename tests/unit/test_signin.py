"""The sign-in rules (``sitekeep.signin``, SPEC §18; issue #26): the heuristic, a check's
outcome, and the sign-out guard — pure, no browser."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from sitekeep.args import CheckBody, invalid_input
from sitekeep.errors import InvalidInput
from sitekeep.masking import carried
from sitekeep.model import (
    SITE_DATA_JSON,
    Cookie,
    OriginStorage,
    SessionStorage,
    SignIn,
    SignInCheck,
    SignInProbe,
    SiteData,
)
from sitekeep.signin import (
    CheckOutcome,
    Landing,
    bears_sign_in,
    check_host,
    check_url_host,
    from_check,
    guard,
    heuristic,
    is_sign_in_path,
    judge,
    turned_out,
)

NOW = 1_800_000_000.0
APP = "app.example.test"
SESSION = Cookie("sid", "dummy-session-value", APP, http_only=True, expiry=int(NOW) + 3600)
THEME = Cookie("theme", "dark", APP)


def state(value: str, at: float = NOW - 60) -> SignIn:
    return SignIn(value, {"source": "heuristic", "summary": value}, at)  # type: ignore[arg-type]


def test_a_sign_in_cookie_unexpired_is_signed_in_and_names_it_not_its_value() -> None:
    judged = heuristic(APP, [SESSION, THEME], NOW)
    assert judged.state == "signed_in"
    assert judged.evidence["auth_cookies"] == ["sid"]
    assert judged.evidence["expires"] == SESSION.expiry
    assert judged.at == NOW
    assert "dummy-session-value" not in json.dumps(judged.as_json())


@pytest.mark.parametrize(
    ("cookie", "why"),
    [
        (Cookie("sid", "v", APP, http_only=True, expiry=int(NOW) - 1), "expired"),
        (Cookie("csrftoken", "v", APP), "a CSRF token alone"),
        (Cookie("_ga", "v", APP, http_only=True), "analytics"),
        (Cookie("sid", "v", "other.example.test", http_only=True), "another host's"),
    ],
)
def test_no_cookie_carrying_a_sign_in_is_unknown(cookie: Cookie, why: str) -> None:
    judged = heuristic(APP, [cookie, THEME], NOW)
    assert (judged.state, judged.evidence["auth_cookies"]) == ("unknown", []), why


def test_a_parent_domain_sign_in_cookie_covers_the_host() -> None:
    shared = Cookie("__Secure-session", "v", ".example.test", secure=True)
    assert heuristic(APP, [shared], NOW).state == "signed_in"
    assert bears_sign_in(shared)
    assert not bears_sign_in(Cookie("XSRF-TOKEN", "v", APP))
    assert bears_sign_in(Cookie("csrf_session", "v", APP, http_only=True))


@pytest.mark.parametrize(
    "path", ["/login", "/users/sign_in", "/account/SignIn", "/auth/log-in?next=/", "/logon"]
)
def test_a_landing_on_a_sign_in_page_is_signed_out_even_with_cookies(path: str) -> None:
    landing = Landing(f"http://{APP}:8080{path}")
    judged = heuristic(APP, [SESSION], NOW, landing)
    assert judged.state == "signed_out"
    assert judged.evidence["page"] == path.split("?")[0]
    assert is_sign_in_path(landing.url)


@pytest.mark.parametrize("path", ["/", "/blog/login-tips", "/loginx", "/settings"])
def test_other_paths_are_no_sign_in_page(path: str) -> None:
    assert not is_sign_in_path(f"http://{APP}{path}")


def test_a_password_field_counts_only_where_no_sign_in_cookie_is_held() -> None:
    shows = Landing(f"http://{APP}/settings/password", password_field=True)
    assert heuristic(APP, [SESSION], NOW, shows).state == "signed_in"
    judged = heuristic(APP, [THEME], NOW, shows)
    assert (judged.state, judged.evidence["password_field"]) == ("signed_out", True)


def test_a_401_is_signed_out_and_a_landing_elsewhere_says_nothing() -> None:
    judged = heuristic(APP, [SESSION], NOW, Landing(f"http://{APP}/", status=401))
    assert (judged.state, judged.evidence["status"]) == ("signed_out", 401)
    elsewhere = Landing("http://id.example.test/login", status=401, password_field=True)
    assert heuristic(APP, [SESSION], NOW, elsewhere).state == "signed_in"


CHECK = SignInCheck(f"http://{APP}/me?x=1", SignInProbe(selector="#avatar"))
BOTH = SignInCheck(f"http://{APP}/me", SignInProbe(text="Hi"), SignInProbe(text="Sign in"))
HOME = Landing(f"http://{APP}/me", status=200)


@pytest.mark.parametrize(
    ("check", "outcome", "expected"),
    [
        (CHECK, CheckOutcome(HOME, True, None), ("signed_in", "signed_in")),
        (CHECK, CheckOutcome(HOME, False, None), ("signed_out", "neither")),
        (BOTH, CheckOutcome(HOME, False, False), ("unknown", "neither")),
        (BOTH, CheckOutcome(HOME, False, True), ("signed_out", "signed_out")),
        (BOTH, CheckOutcome(HOME, True, True), ("unknown", "both")),
        (CHECK, CheckOutcome(Landing(HOME.url, 401), False, None), ("signed_out", None)),
        (CHECK, CheckOutcome(error="the page could not load (net::ERR_X)"), ("unknown", None)),
    ],
)
def test_a_checks_outcome_is_judged(
    check: SignInCheck, outcome: CheckOutcome, expected: tuple[str, str | None]
) -> None:
    judged = from_check(check, outcome, NOW)
    assert (judged.state, judged.evidence.get("found")) == expected
    assert judged.evidence["source"] == "check"
    assert judged.evidence["url"] == f"http://{APP}/me"  # never its query


def test_judge_covers_every_host_and_a_check_wins_over_the_heuristic() -> None:
    data = SiteData(
        cookies=(SESSION,),
        origins={"http://token.example.test": OriginStorage({"token": "dummy"})},
    )
    checked = {APP: SignIn("signed_out", {"source": "check"}, NOW)}
    states = judge(data, NOW, None, checked, also=["id.example.test"])
    assert list(states) == [APP, "id.example.test", "token.example.test"]
    assert states[APP].state == "signed_out"
    assert states["token.example.test"].state == "unknown"


def test_turned_out_names_signed_in_hosts_that_are_not_any_more() -> None:
    before = {APP: state("signed_in"), "a.test": state("signed_in"), "b.test": state("unknown")}
    after = {APP: state("signed_in"), "b.test": state("signed_out")}
    assert turned_out(before, after) == ["a.test"]
    assert turned_out({}, after) == []


def signed(data: SiteData, **states: str) -> SiteData:
    return SiteData(
        cookies=data.cookies,
        origins=data.origins,
        session=data.session,
        sign_in={h.replace("_", "."): state(s) for h, s in states.items()},
    )


def test_the_guard_keeps_a_signed_out_sites_previous_data_and_no_other() -> None:
    token = "http://token.example.test"
    before = signed(
        SiteData(
            cookies=(SESSION, Cookie("seen", "1", "token.example.test")),
            origins={f"http://{APP}": OriginStorage({"user": "dummy-alice"})},
            session=SessionStorage(f"http://{APP}", {"cart": "2"}),
        ),
        app_example_test="signed_in",
        token_example_test="unknown",
    )
    after = signed(
        SiteData(
            cookies=(THEME, Cookie("seen", "2", "token.example.test")),
            origins={token: OriginStorage({"token": "dummy-new"})},
        ),
        app_example_test="signed_out",
        token_example_test="unknown",
    )
    kept, guarded = guard(before, after)
    assert [g["site"] for g in guarded] == [APP]
    assert "signed in at the last save" in guarded[0]["reason"]
    assert {(c.name, c.value) for c in kept.cookies} == {
        ("sid", "dummy-session-value"),
        ("seen", "2"),  # another host's newer data stays as read
    }
    assert dict(kept.origins[f"http://{APP}"].local) == {"user": "dummy-alice"}
    assert dict(kept.origins[token].local) == {"token": "dummy-new"}
    assert kept.session == before.session
    assert kept.sign_in[APP].state == "signed_in"  # what the kept data holds
    assert not any("dummy" in g["reason"] for g in guarded)


def test_the_guard_keeps_the_sign_in_cookie_of_a_parent_domain() -> None:
    parent = Cookie("__Secure-sid", "dummy-parent", ".example.test", secure=True)
    before = signed(SiteData(cookies=(parent,)), app_example_test="signed_in")
    after = signed(SiteData(cookies=()), example_test="unknown")
    kept, guarded = guard(before, after)
    assert [g["site"] for g in guarded] == [APP]
    assert kept.cookies == (parent,)


def test_nothing_is_guarded_without_a_previous_sign_in() -> None:
    after = signed(SiteData(cookies=(THEME,)), app_example_test="signed_out")
    assert guard(None, after) == (after, [])
    before = signed(SiteData(cookies=(SESSION,)), app_example_test="unknown")
    assert guard(before, after) == (after, [])
    still = signed(SiteData(cookies=(SESSION,)), app_example_test="signed_in")
    assert guard(still, still)[1] == []


def test_the_guard_carries_the_mask_of_the_kept_data() -> None:
    typed = "dummy-typed-secret-1234"
    before = signed(
        SiteData(origins={f"http://{APP}": OriginStorage({"echo": typed})}),
        app_example_test="signed_in",
    )
    before = SiteData(origins=before.origins, sign_in=before.sign_in, mask=carried([typed], before))
    kept, _ = guard(before, signed(SiteData(), app_example_test="signed_out"))
    assert kept.mask == (typed,)
    SITE_DATA_JSON.validate_python(SITE_DATA_JSON.dump_python(kept))  # stores as it is


@pytest.mark.parametrize("host", ["", "a b", "ex ample.test", "http://a.test", "a.test/x"])
def test_a_check_host_is_a_host_name(host: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        check_host(host)
    assert raised.value.field == "host"
    assert check_host("App.Example.Test.") == APP


def test_a_checks_url_must_be_on_its_host() -> None:
    with pytest.raises(InvalidInput) as raised:
        check_url_host(SignInCheck("http://evil.test/", SignInProbe(text="x")), APP)
    assert raised.value.field == "url"
    check_url_host(SignInCheck(f"https://{APP}:8443/me", SignInProbe(text="x")), APP)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "http://a.test/"}, "signed_in"),
        ({"url": "http://a.test/", "signed_in": {}}, "signed_in"),
        ({"url": "http://a.test/", "signed_in": {"selector": "#a", "text": "b"}}, "signed_in"),
        ({"url": "http://a.test/", "signed_in": {"text": "  "}}, "signed_in"),
        ({"url": "http://a.test/", "signed_in": {"text": "a"}, "signed_out": {}}, "signed_out"),
        ({"url": "http://a.test/", "signed_in": {"text": "a"}, "wait": 1}, "wait"),
        ({"url": 7, "signed_in": {"text": "a"}}, "url"),
    ],
)
def test_a_bad_check_names_its_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        CheckBody.model_validate(body)
    assert invalid_input(raised.value).field == field
