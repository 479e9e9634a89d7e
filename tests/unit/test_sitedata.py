"""``sitekeep.sitedata``: the snapshot rules of SPEC §3 (replace, carry-over, cap) and the
by-host views and Forget of SPEC §5/§11."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from sitekeep import sitedata
from sitekeep.errors import NotFound, SnapshotTooLarge
from sitekeep.model import (
    SITE_DATA_JSON,
    Cookie,
    HistoryEntry,
    OriginStorage,
    SessionStorage,
    SiteData,
    Skipped,
    dump_site_data,
    load_site_data,
)
from sitekeep.sitedata import HIDDEN, HostRow, compose, forget_host, host_rows, host_view, json_size

real_json_size = json_size

A = "https://a.example.test"
B = "https://b.example.test"
C = "https://c.example.test"
X = "https://x.example.test"
NOW = 1_700_000_000.0
BIG = 1_000_000

SID = Cookie("sid", "dummy-sid", "a.example.test", http_only=True, secure=True, same_site="lax")
PREF = Cookie("theme", "dark", "a.example.test")
SHARED = Cookie("lang", "en", ".example.test", expiry=1_800_000_000)


def compose_(
    previous: SiteData | None = None,
    *,
    cookies: Sequence[Cookie] = (SID,),
    read: Mapping[str, Mapping[str, str]] | None = None,
    session: SessionStorage | None = None,
    not_read: Mapping[str, str] | None = None,
    visit_order: Sequence[str] = (),
    cap: int = BIG,
    indexed_db: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    indexed_db_failed: Mapping[str, str] | None = None,
) -> tuple[SiteData, list[Skipped]]:
    return compose(
        previous,
        cookies=cookies,
        read=read or {},
        session=session,
        not_read=not_read or {},
        visit_order=visit_order,
        saved_at=NOW,
        cap=cap,
        indexed_db=indexed_db,
        indexed_db_failed=indexed_db_failed,
    )


def serialized_size(snapshot: SiteData) -> int:
    return len(dump_site_data(snapshot))


def local(snapshot: SiteData) -> dict[str, dict[str, str]]:
    return {o: dict(s.local) for o, s in snapshot.origins.items()}


# --- json_size ----------------------------------------------------------------------------


def test_json_size_counts_utf8_bytes_of_compact_json() -> None:
    assert json_size({"k": "é"}) == len('{"k":"é"}'.encode())
    assert json_size([1, "a"]) == len(b'[1,"a"]')
    assert json_size(None) == 4


def test_json_size_matches_the_stored_serialisation_of_a_snapshot() -> None:
    snapshot = SiteData(
        cookies=(SID, SHARED),
        origins={A: OriginStorage({"k": "é€😀\u2028\x01</"})},
        session=SessionStorage(A, {"s": "1"}),
        saved_at=NOW,
    )
    dumped = SITE_DATA_JSON.dump_python(snapshot)
    assert json_size(dumped) == serialized_size(snapshot)


HOSTILE = [
    "x\udabey",  # a lone high surrogate (the input)
    "\udc00",  # a lone low surrogate
    "\ud83d",  # half an emoji
    "\ude00\ud83d",  # a low then a high: no pair
    "nul\x00inside",
    "😀 non-BMP",
    "\\ud800 as text",  # a backslash and letters, not a surrogate
    "\u2028\u2029</script>",
    "",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_every_js_string_survives_the_stored_json_exactly(text: str) -> None:
    snapshot = SiteData(
        cookies=(Cookie(text or "n", text, "a.example.test"),),
        origins={A: OriginStorage({text: text, "k": text})},
        session=SessionStorage(A, {text: text}),
        saved_at=NOW,
    )
    stored = dump_site_data(snapshot)
    stored.decode("utf-8")  # valid UTF-8, whatever the strings held
    assert load_site_data(stored) == snapshot
    assert json_size(SITE_DATA_JSON.dump_python(snapshot)) == len(stored)


def test_snapshots_stored_before_the_escape_still_load() -> None:
    snapshot = SiteData(cookies=(SID,), origins={A: OriginStorage({"k": "é"})}, saved_at=NOW)
    assert load_site_data(SITE_DATA_JSON.dump_json(snapshot)) == snapshot


# --- compose: replace, not merge ----------------------------------------------------------


def test_save_replaces_the_previous_snapshot_instead_of_merging() -> None:
    previous = SiteData(
        cookies=(PREF,),
        origins={A: OriginStorage({"old": "1", "kept?": "no"})},
        saved_at=NOW - 60,
    )
    snapshot, skipped = compose_(previous, cookies=(SID,), read={A: {"new": "2"}})
    assert snapshot.cookies == (SID,)
    assert local(snapshot) == {A: {"new": "2"}}
    assert snapshot.saved_at == NOW
    assert skipped == []


def test_save_drops_an_origin_read_empty_even_if_it_had_storage_before() -> None:
    previous = SiteData(origins={A: OriginStorage({"token": "dummy"})})
    snapshot, _ = compose_(previous, read={A: {}})
    assert snapshot.origins == {}


def test_save_drops_a_previous_origin_that_was_neither_read_nor_skipped() -> None:
    previous = SiteData(origins={A: OriginStorage({"k": "v"}), B: OriginStorage({"k": "v"})})
    snapshot, _ = compose_(previous, read={B: {"k": "w"}})
    assert local(snapshot) == {B: {"k": "w"}}


def test_save_keeps_last_storage_of_origin_whose_read_failed() -> None:
    previous = SiteData(
        origins={A: OriginStorage({"token": "dummy"}), B: OriginStorage({"gone": "1"})}
    )
    snapshot, skipped = compose_(
        previous, read={C: {"c": "1"}}, not_read={A: "timed out", B: "timed out"}
    )
    assert local(snapshot) == {A: {"token": "dummy"}, B: {"gone": "1"}, C: {"c": "1"}}
    assert Skipped(A, "timed out") in skipped


def test_a_skipped_origin_is_named_with_its_reason_even_with_nothing_to_keep() -> None:
    snapshot, skipped = compose_(
        None, not_read={A: "a service worker answered: save while on this site"}
    )
    assert snapshot.origins == {}
    assert skipped == [Skipped(A, "a service worker answered: save while on this site")]


def test_a_read_origin_also_listed_as_not_read_keeps_what_was_read() -> None:
    previous = SiteData(origins={A: OriginStorage({"old": "1"})})
    snapshot, _ = compose_(previous, read={A: {"new": "1"}}, not_read={A: "retried"})
    assert local(snapshot) == {A: {"new": "1"}}


def test_session_storage_is_kept_and_empty_session_storage_is_dropped() -> None:
    kept, _ = compose_(session=SessionStorage(A, {"step": "2"}))
    assert kept.session == SessionStorage(A, {"step": "2"})
    dropped, _ = compose_(session=SessionStorage(A, {}))
    assert dropped.session is None


# --- compose: the size cap ----------------------------------------------------------------


def three_origins(size: int = 300) -> dict[str, dict[str, str]]:
    return {A: {"k": "a" * size}, B: {"k": "b" * size}, C: {"k": "c" * size}}


def full_size(**kwargs: Any) -> int:
    snapshot, _ = compose_(**kwargs)
    return serialized_size(snapshot)


def test_over_the_cap_the_origin_visited_longest_ago_is_left_out_first() -> None:
    order = [C, B, A]  # newest first: A was visited longest ago
    cap = full_size(read=three_origins(), visit_order=order) - 100
    snapshot, skipped = compose_(read=three_origins(), visit_order=order, cap=cap)
    assert set(snapshot.origins) == {B, C}
    assert [s.site for s in skipped] == [A]
    assert "cap" in skipped[0].reason
    assert serialized_size(snapshot) <= cap


def test_origins_missing_from_the_visit_order_count_as_oldest() -> None:
    read = three_origins() | {X: {"k": "x" * 300}}
    cap = full_size(read=read) - 100
    snapshot, skipped = compose_(read=read, visit_order=[C, B, A], cap=cap)
    assert [s.site for s in skipped] == [X]
    assert set(snapshot.origins) == {A, B, C}


def test_the_cap_leaves_out_as_many_old_origins_as_it_takes_newest_kept() -> None:
    order = [C, B, A]
    cap = full_size(read=three_origins()) - 500
    snapshot, skipped = compose_(read=three_origins(), visit_order=order, cap=cap)
    assert set(snapshot.origins) == {C}
    assert [s.site for s in skipped] == [A, B]
    assert all("cap" in s.reason for s in skipped)


def test_a_carried_over_origin_counts_toward_the_cap_too() -> None:
    previous = SiteData(origins={A: OriginStorage({"k": "a" * 300})})
    cap = full_size(previous=previous, read={B: {"k": "b" * 300}}, not_read={A: "timed out"})
    snapshot, skipped = compose_(
        previous,
        read={B: {"k": "b" * 300}},
        not_read={A: "timed out"},
        visit_order=[B, A],
        cap=cap - 100,
    )
    assert set(snapshot.origins) == {B}
    assert Skipped(A, "timed out") in skipped
    assert any(s.site == A and "cap" in s.reason for s in skipped)


def test_the_session_storage_is_left_out_only_after_every_origin() -> None:
    session = SessionStorage(C, {"s": "x" * 300})
    read = three_origins()
    cookies_only = full_size()
    with_session = full_size(session=session)
    # Room for the session alone, not for any origin besides it.
    cap = with_session + 50
    snapshot, skipped = compose_(read=read, session=session, visit_order=[C, B, A], cap=cap)
    assert snapshot.origins == {}
    assert snapshot.session == session
    assert [s.site for s in skipped] == [A, B, C]
    # Room for nothing but the cookies: the session goes last.
    snapshot, skipped = compose_(
        read=read, session=session, visit_order=[C, B, A], cap=cookies_only + 10
    )
    assert snapshot.origins == {}
    assert snapshot.session is None
    # C is named twice: once for its localStorage, then for the tab's sessionStorage.
    assert [s.site for s in skipped] == [A, B, C, C]


def test_cookies_alone_over_the_cap_raise_snapshot_too_large_with_size_and_cap() -> None:
    cookies = tuple(Cookie(f"c{i}", "v" * 100, "a.example.test") for i in range(20))
    cookies_only = full_size(cookies=cookies)
    with pytest.raises(SnapshotTooLarge) as caught:
        compose_(cookies=cookies, read=three_origins(), cap=cookies_only - 1)
    assert caught.value.cap == cookies_only - 1
    assert caught.value.size == cookies_only
    assert caught.value.field == "cookies"
    assert "v" * 100 not in caught.value.message


def test_cookies_exactly_at_the_cap_fit() -> None:
    cookies_only = full_size()
    snapshot, skipped = compose_(read=three_origins(), cap=cookies_only)
    assert snapshot.origins == {}
    assert serialized_size(snapshot) == cookies_only
    assert {s.site for s in skipped} == {A, B, C}


def test_whenever_compose_says_it_fits_the_serialised_snapshot_is_within_the_cap() -> None:
    read = {
        A: {"k": "é" * 120, "ascii": "a" * 40},
        B: {"emoji": "😀" * 50},
        C: {'quote"key': 'va"lue\\' * 20, "ctl": "\x01\n\t" * 10},
        X: {"k": "x"},
    }
    kwargs: dict[str, Any] = {
        "cookies": (SID, SHARED),
        "read": read,
        "session": SessionStorage(B, {"s": "€" * 30}),
        "visit_order": [B, A, C],
    }
    low, high = full_size(**kwargs) - 1500, full_size(**kwargs) + 2
    checked = 0
    for cap in range(low, high):
        try:
            snapshot, _ = compose_(cap=cap, **kwargs)
        except SnapshotTooLarge:
            continue
        assert serialized_size(snapshot) <= cap, cap
        checked += 1
    assert checked > 1000


def test_the_cap_measures_each_origin_once_not_the_snapshot_per_eviction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read = {f"https://h{i:03}.example.test": {"k": "v" * 100} for i in range(200)}
    full = full_size(read=read)
    measured: list[int] = []

    def measuring(value: Any) -> int:
        measured.append(real_json_size(value))
        return measured[-1]

    monkeypatch.setattr(sitedata, "json_size", measuring)
    _, skipped = compose_(read=read, cap=full // 10)
    assert len(skipped) > 150
    assert 0 < sum(measured) < 3 * full


def test_a_snapshot_exactly_at_the_cap_is_kept_whole() -> None:
    cap = full_size(read=three_origins(), visit_order=[C, B, A])
    snapshot, skipped = compose_(read=three_origins(), visit_order=[C, B, A], cap=cap)
    assert set(snapshot.origins) == {A, B, C}
    assert skipped == []


# --- host_rows ----------------------------------------------------------------------------


def history(*origins: str) -> tuple[HistoryEntry, ...]:
    return tuple(HistoryEntry(o, o + "/", NOW - i) for i, o in enumerate(origins))


def test_host_rows_list_history_hosts_most_recent_first_then_the_rest_alphabetically() -> None:
    snapshot = SiteData(
        cookies=(Cookie("z", "1", "zeta.other.test"), Cookie("a", "1", "alpha.other.test")),
        origins={A: OriginStorage({"k": "v"}), B: OriginStorage({"k": "v"})},
    )
    rows = host_rows(snapshot, history(B, "https://nothing.example.test", A))
    assert [r.site for r in rows] == [
        "b.example.test",
        "a.example.test",
        "alpha.other.test",
        "zeta.other.test",
    ]


def test_host_rows_fold_every_port_of_a_host_into_one_row() -> None:
    snapshot = SiteData(
        origins={A: OriginStorage({"k": "v"}), A + ":8443": OriginStorage({"k": "v", "j": "w"})},
        session=SessionStorage(A + ":8443", {"s": "1"}),
    )
    assert host_rows(snapshot, ()) == [HostRow("a.example.test", 0, 0, 3, 1)]


def test_a_parent_domain_cookie_is_shared_under_each_host_it_covers_without_its_own_row() -> None:
    snapshot = SiteData(
        cookies=(SID, SHARED, Cookie("x", "1", "b.example.test")),
        origins={A: OriginStorage({"k": "v"})},
    )
    rows = host_rows(snapshot, history(A))
    assert rows == [
        HostRow("a.example.test", cookies=1, shared_cookies=1, local=1, session=0),
        HostRow("b.example.test", cookies=1, shared_cookies=1, local=0, session=0),
    ]


def test_a_parent_domain_cookie_no_row_covers_gets_its_bare_domain_row() -> None:
    snapshot = SiteData(
        cookies=(SHARED, Cookie("o", "1", "a.other.test")),
    )
    rows = host_rows(snapshot, ())
    assert rows == [
        HostRow("a.other.test", cookies=1, shared_cookies=0, local=0, session=0),
        HostRow("example.test", cookies=1, shared_cookies=0, local=0, session=0),
    ]


def test_host_rows_do_not_depend_on_cookie_order() -> None:
    parent = Cookie("p", "1", ".example.test")
    child = Cookie("c", "1", ".a.example.test")
    assert host_rows(SiteData(cookies=(parent, child)), ()) == host_rows(
        SiteData(cookies=(child, parent)), ()
    )


def test_an_empty_snapshot_has_no_rows() -> None:
    assert host_rows(SiteData(), history(A)) == []


# --- host_view ----------------------------------------------------------------------------


def test_host_view_hides_http_only_values_and_shows_the_others() -> None:
    snapshot = SiteData(cookies=(SID, PREF, SHARED), origins={A: OriginStorage({"k": "v"})})
    view = host_view(snapshot, "a.example.test")
    values = {c["name"]: c["value"] for c in view["cookies"]}
    assert values == {"sid": HIDDEN, "theme": "dark", "lang": "en"}
    assert "dummy-sid" not in repr(view)


def test_host_view_marks_parent_domain_cookies_shared() -> None:
    snapshot = SiteData(cookies=(SID, SHARED, Cookie("b", "1", "b.example.test")))
    view = host_view(snapshot, "a.example.test")
    assert {c["name"]: c["shared"] for c in view["cookies"]} == {"sid": False, "lang": True}


def test_host_view_shows_the_hosts_storage_by_origin() -> None:
    snapshot = SiteData(
        cookies=(SID,),
        origins={
            A: OriginStorage({"k": "v"}),
            A + ":8443": OriginStorage({"j": "w"}),
            B: OriginStorage({"other": "1"}),
        },
        session=SessionStorage(A, {"s": "1"}),
        saved_at=NOW,
    )
    view = host_view(snapshot, "A.Example.TEST")
    assert view["site"] == "a.example.test"
    assert view["local_storage"] == {A: {"k": "v"}, A + ":8443": {"j": "w"}}
    assert view["session_storage"] == {A: {"s": "1"}}
    assert view["saved_at"] == NOW


def test_host_view_of_a_host_the_snapshot_does_not_hold_is_not_found() -> None:
    snapshot = SiteData(cookies=(SID,), origins={A: OriginStorage({"k": "v"})})
    with pytest.raises(NotFound) as caught:
        host_view(snapshot, "nowhere.example.test")
    assert (caught.value.kind, caught.value.name) == ("site", "nowhere.example.test")


# --- forget_host --------------------------------------------------------------------------


def test_forget_host_removes_its_storage_and_own_cookies_and_keeps_parent_domain_cookies() -> None:
    dot_host = Cookie("d", "1", ".a.example.test")
    other = Cookie("o", "1", "b.example.test")
    snapshot = SiteData(
        cookies=(SID, dot_host, SHARED, other),
        origins={
            A: OriginStorage({"k": "v"}),
            A + ":8443": OriginStorage({"k": "v"}),
            B: OriginStorage({"k": "v"}),
        },
        session=SessionStorage(A, {"s": "1"}),
        saved_at=NOW,
    )
    forgotten = forget_host(snapshot, "a.example.test")
    assert forgotten.cookies == (SHARED, other)
    assert set(forgotten.origins) == {B}
    assert forgotten.session is None
    assert forgotten.saved_at == NOW


def test_forget_host_keeps_another_hosts_session_storage() -> None:
    snapshot = SiteData(cookies=(SID,), session=SessionStorage(B, {"s": "1"}))
    assert forget_host(snapshot, "a.example.test").session == SessionStorage(B, {"s": "1"})


# --- compose: the cap leaves out the largest values first -------------------------------------


def test_over_the_cap_a_big_cache_goes_and_the_small_sign_in_token_stays() -> None:
    # The input: auth beside a 1,500,000-character cache, over a 1,000,000-byte cap.
    read = {A: {"auth": "dummy-26", "cache": "c" * 1_500_000}, B: {"k": "v"}}
    snapshot, skipped = compose_(read=read, visit_order=[B, A], cap=1_000_000)
    assert local(snapshot) == {A: {"auth": "dummy-26"}, B: {"k": "v"}}
    assert [s.as_json() for s in skipped] == [
        {
            "site": A,
            "key": "cache",
            "bytes": 1_500_002,
            "reason": "left out: the snapshot passed its 1000000-byte cap: "
            "its largest values go first",
        }
    ]
    assert serialized_size(snapshot) <= 1_000_000


def test_big_values_go_largest_first_and_only_as_many_as_it_takes() -> None:
    big = sitedata.BIG_VALUE
    read = {A: {"a": "a" * (big * 3), "b": "b" * (big * 2)}, B: {"c": "c" * big, "t": "tok"}}
    full = full_size(read=read)
    snapshot, skipped = compose_(read=read, visit_order=[A, B], cap=full - big * 3)
    assert [(s.site, s.key) for s in skipped] == [(A, "a")]
    assert local(snapshot) == {A: {"b": "b" * (big * 2)}, B: {"c": "c" * big, "t": "tok"}}
    snapshot, skipped = compose_(read=read, visit_order=[A, B], cap=full - big * 5 - 40)
    assert [(s.site, s.key) for s in skipped] == [(A, "a"), (A, "b"), (B, "c")]
    assert local(snapshot) == {B: {"t": "tok"}}


def test_when_the_big_values_are_not_enough_the_oldest_origins_go_next() -> None:
    big = sitedata.BIG_VALUE
    read = {A: {"cache": "x" * big, "t": "a" * 400}, B: {"t": "b" * 400}, C: {"t": "c" * 400}}
    cap = full_size(read=read) - big - 300
    snapshot, skipped = compose_(read=read, visit_order=[C, B, A], cap=cap)
    assert [(s.site, s.key) for s in skipped] == [(A, "cache"), (A, None)]
    assert set(snapshot.origins) == {B, C}
    assert serialized_size(snapshot) <= cap


def test_a_big_session_storage_value_goes_before_any_origin() -> None:
    big = sitedata.BIG_VALUE
    session = SessionStorage(A, {"draft": "d" * (big * 2), "step": "2"})
    read = {A: {"t": "tok"}, B: {"t": "tok"}}
    cap = full_size(read=read, session=session) - big
    snapshot, skipped = compose_(read=read, session=session, visit_order=[A, B], cap=cap)
    assert [(s.site, s.key) for s in skipped] == [(A, "draft")]
    assert snapshot.session == SessionStorage(A, {"step": "2"})
    assert set(snapshot.origins) == {A, B}


# --- compose: IndexedDB (issue #9 item 6) ----------------------------------------------------

DB = {"name": "firebaseLocalStorageDb", "version": 1, "stores": []}


def test_databases_are_kept_per_origin_even_without_local_storage() -> None:
    snapshot, skipped = compose_(read={A: {}}, indexed_db={A: [DB], B: []})
    assert snapshot.origins == {A: OriginStorage({}, (DB,))}
    assert skipped == []


def test_without_the_opt_in_no_database_is_kept_not_even_the_last_ones() -> None:
    previous = SiteData(origins={A: OriginStorage({"k": "v"}, (DB,))})
    snapshot, _ = compose_(previous, read={A: {"k": "v"}})
    assert snapshot.origins == {A: OriginStorage({"k": "v"})}


def test_an_origin_whose_databases_could_not_be_read_keeps_its_last_ones() -> None:
    previous = SiteData(origins={A: OriginStorage({"k": "old"}, (DB,))})
    snapshot, skipped = compose_(
        previous,
        read={A: {"k": "new"}},
        indexed_db={},
        indexed_db_failed={A: "IndexedDB could not be read: timed out"},
    )
    assert snapshot.origins == {A: OriginStorage({"k": "new"}, (DB,))}
    assert skipped == [Skipped(A, "IndexedDB could not be read: timed out")]


def test_an_ipv6_host_is_one_host_in_the_view_and_forget_however_it_is_spelled() -> None:
    """Both browsers' jars spell an IPv6 cookie's domain ``[::1]``; an origin's host is
    ``::1``: one host, named so, found and forgotten by any spelling (issue #26)."""
    held = SiteData(
        cookies=(Cookie("v6", "dummy-v6", "[::1]"),),
        origins={"http://[::1]:8080": OriginStorage({"k": "dummy-k"})},
    )
    assert [r.site for r in host_rows(held, [])] == ["::1"]
    for spelled in ("::1", "[::1]", "0:0:0:0:0:0:0:1"):
        view = host_view(held, spelled)
        assert [c["name"] for c in view["cookies"]] == ["v6"]
        assert view["local_storage"] == {"http://[::1]:8080": {"k": "dummy-k"}}
        forgotten = forget_host(held, spelled)
        assert forgotten.cookies == () and forgotten.origins == {}
