"""``sitekeep.service.panes``: the History and Site data panes of SPEC §11, their revisions, and
``history.clear`` — pure, no store, no browser."""

from __future__ import annotations

from dataclasses import replace

from sitekeep import history as hist
from sitekeep.model import Cookie, HistoryEntry, OriginStorage, SessionStorage, SiteData
from sitekeep.secrets import SecretInfo
from sitekeep.service.panes import (
    Counts,
    ago,
    history_pane,
    history_rev,
    rev_token,
    site_data_pane,
    site_data_rev,
)
from sitekeep.sitedata import forget_host

NOW = 1_700_000_000.0
APP = "https://app.example.test"
APP_2 = "https://app.example.test:8443"
IDP = "https://id.example.test"
SHOP = "https://shop.example.test"

HISTORY = (
    HistoryEntry(APP, f"{APP}/inbox?code=dummy", NOW - 60),
    HistoryEntry(IDP, f"{IDP}/authorize", NOW - 120),
    HistoryEntry(APP_2, f"{APP_2}/old", NOW - 180),
    HistoryEntry(SHOP, f"{SHOP}/", NOW - 7200),
)

LOGIN = SecretInfo("app-login", "staging admin", ("app.example.test",), ("user", "pass"), NOW)
WILD = SecretInfo("sso", "", ("*.example.test",), ("password",), NOW)
ELSEWHERE = SecretInfo("bank", "never visited", ("bank.other.test",), ("pin",), NOW)

SNAPSHOT = SiteData(
    cookies=(
        Cookie("sid", "dummy-sid", "app.example.test", http_only=True),
        Cookie("theme", "dark", "app.example.test"),
        Cookie("lang", "en", ".example.test"),
        Cookie("ad", "dummy-ad", "ads.cdn.test"),
        Cookie("z", "dummy-z", "zz.example.test"),
    ),
    origins={
        APP: OriginStorage({"token": "dummy-token", "mode": "x"}),
        APP_2: OriginStorage({"other": "dummy"}),
        IDP: OriginStorage({"k": "v"}),
    },
    session=SessionStorage(IDP, {"cart": "1"}),
    saved_at=NOW - 30,
)


def test_history_rows_are_one_per_host_current_on_top_newest_first() -> None:
    pane = history_pane(HISTORY, None, [])
    assert [r.host for r in pane.rows] == [
        "app.example.test",
        "id.example.test",
        "shop.example.test",
    ]
    top = pane.rows[0]
    assert top.url == f"{APP}/inbox?code=dummy" and top.at == NOW - 60
    assert top.origins == (APP, APP_2)  # the second port is no row of its own


def test_secrets_join_only_hosts_the_session_went_to() -> None:
    pane = history_pane(HISTORY, None, [LOGIN, WILD, ELSEWHERE])
    secrets = {r.host: [s.name for s in r.secrets] for r in pane.rows}
    assert secrets == {
        "app.example.test": ["app-login", "sso"],
        "id.example.test": ["sso"],
        "shop.example.test": ["sso"],
    }
    assert all(r.host != "bank.other.test" for r in pane.rows)
    assert pane.rows[0].secrets[0].keys == ("user", "pass")


def test_history_row_meta_says_when_and_how_many_secrets() -> None:
    pane = history_pane(HISTORY, None, [LOGIN, WILD])
    assert pane.rows[0].meta(NOW) == "1m ago · 2 secrets"
    assert pane.rows[1].meta(NOW) == "2m ago · 1 secret"
    assert history_pane(HISTORY, None, []).rows[2].meta(NOW) == "2h ago"


def test_history_pill_has_the_snapshots_counts_for_the_host_or_is_absent() -> None:
    pane = history_pane(HISTORY, SNAPSHOT, [])
    app, idp, shop = pane.rows
    assert app.saved is not None and app.saved.pill() == "3 cookies · 3 local"
    assert idp.saved is not None and idp.saved.pill() == "1 cookie · 1 local · 1 session"
    # Nothing of shop.example.test's own is saved (the parent-domain cookie it would get
    # belongs to no host): no Site data row, so no pill.
    assert shop.saved is None


def test_clear_goes_names_other_hosts_and_another_port_of_the_current_host() -> None:
    pane = history_pane(HISTORY, None, [])
    assert pane.clears == (IDP, APP_2, SHOP)
    assert pane.goes == ("id.example.test", APP_2, "shop.example.test")
    assert pane.stays == APP  # its host has another origin: the origin says which stays
    alone = history_pane(HISTORY[:2], None, [])
    assert alone.stays == "app.example.test" and alone.goes == ("id.example.test",)


def test_a_history_holding_only_the_current_origin_has_nothing_to_clear() -> None:
    pane = history_pane(HISTORY[:1], None, [])
    assert pane.clears == () and pane.goes == ()
    empty = history_pane((), SNAPSHOT, [LOGIN])
    assert empty.rows == () and empty.stays is None and empty.rev == []


def test_history_clear_keeps_only_the_top_entry() -> None:
    kept, gone = hist.clear(HISTORY)
    assert kept == HISTORY[:1] and gone == HISTORY[1:]
    assert hist.clear(()) == ((), ())


def test_history_rev_moves_with_sites_and_pages_never_with_the_clock() -> None:
    rev = history_rev(HISTORY)
    later = hist.bump(HISTORY, HISTORY[0].url, NOW + 500, ttl=10**6, cap=100)
    assert history_rev(later) == rev  # the same page again: only the time moved
    new_page = hist.bump(HISTORY, f"{APP}/settings", NOW + 1, ttl=10**6, cap=100)
    back = hist.bump(HISTORY, f"{SHOP}/", NOW + 1, ttl=10**6, cap=100)
    new_site = hist.bump(HISTORY, "https://new.example.test/", NOW + 1, ttl=10**6, cap=100)
    assert len({rev_token(r) for r in (rev, *map(history_rev, (new_page, back, new_site)))}) == 4


def test_site_data_rows_put_history_hosts_first_then_the_rest_alphabetically() -> None:
    pane = site_data_pane(SNAPSHOT, HISTORY)
    assert [r.site for r in pane.rows] == [
        "app.example.test",
        "id.example.test",
        "ads.cdn.test",
        "zz.example.test",
    ]
    assert pane.saved_at == NOW - 30


def test_site_data_row_head_is_the_origin_or_the_host_and_its_counts() -> None:
    rows = {r.site: r for r in site_data_pane(SNAPSHOT, HISTORY).rows}
    app, idp, ads = rows["app.example.test"], rows["id.example.test"], rows["ads.cdn.test"]
    assert app.label == "app.example.test" and app.origins == (APP, APP_2)  # two origins
    assert idp.label == IDP and idp.origins == (IDP,)
    assert ads.label == "ads.cdn.test" and ads.origins == ()  # cookies only
    assert app.counts.label() == "3 cookies · 3 local · 0 session"
    assert idp.counts.label() == "1 cookie · 1 local · 1 session"
    assert ads.counts.label() == "1 cookie"
    assert app.counts == Counts(cookies=3, shared=1, local=3, session=0)


def test_an_empty_snapshot_pane_has_no_rows() -> None:
    assert site_data_pane(None, HISTORY).rows == ()
    assert site_data_pane(SiteData(saved_at=NOW), HISTORY).rows == ()
    assert site_data_rev(None, HISTORY) == [None, []]


def test_site_data_rev_moves_with_a_save_or_a_forget_never_with_the_history() -> None:
    rev = site_data_rev(SNAPSHOT, HISTORY)
    assert rev == [
        NOW - 30,
        ["ads.cdn.test", "app.example.test", "id.example.test", "zz.example.test"],
    ]
    reordered = hist.bump(HISTORY, f"{SHOP}/", NOW, ttl=10**6, cap=100)
    assert site_data_rev(SNAPSHOT, reordered) == rev
    saved_again = replace(SNAPSHOT, saved_at=NOW)
    assert site_data_rev(saved_again, HISTORY) != rev
    forgotten = forget_host(SNAPSHOT, "ads.cdn.test")
    assert site_data_rev(forgotten, HISTORY) == [
        NOW - 30,
        [h for h in rev[1] if h != "ads.cdn.test"],
    ]


def test_forget_changes_the_pill_in_history_never_its_rows_or_revision() -> None:
    before = history_pane(HISTORY, SNAPSHOT, [LOGIN])
    after = history_pane(HISTORY, forget_host(SNAPSHOT, "id.example.test"), [LOGIN])
    assert [r.host for r in after.rows] == [r.host for r in before.rows]
    assert after.rev == before.rev
    assert after.rows[1].saved is None and before.rows[1].saved is not None


def test_pane_json_holds_no_value() -> None:
    shown = repr(site_data_pane(SNAPSHOT, HISTORY).as_json()) + repr(
        history_pane(HISTORY, SNAPSHOT, [LOGIN]).as_json()
    )
    for value in ("dummy-sid", "dark", "dummy-token", "dummy-ad", "cart"):
        assert value not in shown


def test_ago_speaks_in_the_largest_whole_unit() -> None:
    assert [ago(s) for s in (-5, 0, 59, 60, 119, 3599, 3600, 86399, 86400, 10 * 86400)] == [
        "just now",
        "just now",
        "just now",
        "1m ago",
        "1m ago",
        "59m ago",
        "1h ago",
        "23h ago",
        "1d ago",
        "10d ago",
    ]


def test_rev_token_is_stable_and_tells_revisions_apart() -> None:
    assert rev_token([1.5, ["a"]]) == rev_token([1.5, ["a"]])
    assert rev_token([1.5, ["a"]]) != rev_token([1.5, ["b"]])
    assert rev_token([1.0, []]) != rev_token([None, []])


def test_site_data_rows_asked_open_come_with_their_host_view_never_in_json() -> None:
    pane = site_data_pane(SNAPSHOT, HISTORY, expand={"id.example.test", "gone.example.test"})
    assert set(pane.expanded) == {"id.example.test"}
    view = pane.expanded["id.example.test"]
    assert view["session_storage"] == {IDP: {"cart": "1"}} and view["site"] == "id.example.test"
    assert "expanded" not in pane.as_json()


def test_a_panes_first_showing_opens_its_top_row() -> None:
    pane = site_data_pane(SNAPSHOT, HISTORY, first=True)
    assert list(pane.expanded) == ["app.example.test"]
    assert site_data_pane(None, HISTORY, first=True).expanded == {}
