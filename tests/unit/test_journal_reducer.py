"""``sitekeep.journal.reducer``: one pure fold from records to session state (SPEC §8)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from journal_support import GEN, RULES, T0, Chain
from sitekeep import history as hist
from sitekeep.journal import records
from sitekeep.journal.reducer import MAX_UNSETTLED, Rules, SessionState, _bump_in_place, fold_all
from sitekeep.model import HistoryEntry


def test_an_empty_journal_folds_to_an_empty_session() -> None:
    assert fold_all([], RULES) == SessionState()


def test_the_current_url_and_history_follow_finishes() -> None:
    chain = Chain()
    chain.op("navigate", page="https://a.example.test/one")
    chain.op("navigate", page="https://b.example.test/two")
    chain.op("click", page="https://a.example.test/three")
    assert chain.state.url == "https://a.example.test/three"
    assert [(e.origin, e.url) for e in chain.state.history] == [
        ("https://a.example.test", "https://a.example.test/three"),
        ("https://b.example.test", "https://b.example.test/two"),
    ]
    assert chain.state.records == 6 and chain.state.head == chain.made[-1].id


def test_a_snapshot_replaces_refs_and_reuse_keeps_them() -> None:
    chain = Chain()
    snap = chain.snapshot(1)
    assert chain.state.refs is not None
    assert (chain.state.refs.snapshot, chain.state.refs.number) == (snap, 1)
    chain.op("read", refs="reused")
    assert chain.state.refs is not None and chain.state.refs.snapshot == snap
    assert chain.state.usable_refs(GEN) == chain.state.refs
    assert chain.state.usable_refs("another-browser") is None


def test_navigation_invalidates_refs() -> None:
    chain = Chain()
    chain.snapshot(1)
    chain.op("navigate", refs="invalidated")
    assert chain.state.refs is None and chain.state.refs_status == "invalidated"


def test_a_new_browser_generation_invalidates_refs_whatever_the_finish_says() -> None:
    chain = Chain()
    chain.snapshot(1)
    chain.op("click", refs="reused", generation="session-2:1700000100.000000")
    assert chain.state.refs is None and chain.state.refs_status == "invalidated"
    chain.snapshot(2, generation="session-2:1700000100.000000")
    chain.add(records.mark("reopened", parent=chain.state.head, generation="session-3:1.0"))
    assert chain.state.refs is None and chain.state.generation == "session-3:1.0"


def test_replaced_must_name_the_last_snapshot_defined_on_the_branch() -> None:
    chain = Chain()
    first = chain.snapshot(1)
    chain.snapshot(2)
    started = chain.begin("snapshot")
    chain.add(
        records.finish(
            started, "ok", parent=started.id, refs="replaced", snapshot=first, generation=GEN
        )
    )
    assert chain.state.refs is None and chain.state.refs_status == "unknown"


def test_an_unsettled_begin_holds_refs_but_makes_them_unusable_until_settled() -> None:
    chain = Chain()
    snap = chain.snapshot(1)
    started = chain.begin("click", ref="e1")
    assert [p.begin for p in chain.state.unsettled] == [started.id]
    assert not chain.state.settled
    assert chain.state.refs is not None and chain.state.refs.snapshot == snap
    assert chain.state.usable_refs(GEN) is None
    inspected = records.finish(
        started,
        "unknown",
        parent=started.id,
        page="https://a.example.test/after",
        refs="invalidated",
        generation=GEN,
    )
    chain.add(inspected)
    assert chain.state.settled and chain.state.refs is None
    assert chain.state.url == "https://a.example.test/after"


def test_unsettled_begins_past_the_bound_are_counted_not_kept() -> None:
    chain = Chain()
    for _ in range(MAX_UNSETTLED + 5):
        chain.begin("click")
    assert len(chain.state.unsettled) == MAX_UNSETTLED
    assert chain.state.unsettled_dropped == 5 and not chain.state.settled


def test_a_withheld_url_is_not_recorded_and_secrets_are_kept_by_name_newest_last() -> None:
    rules = Rules(ttl=3600.0, cap=100, typed_secrets_cap=2)
    chain = Chain(rules)
    chain.op("navigate", page="https://a.example.test/form")
    started = chain.begin("type_secret")
    chain.add(
        records.finish(
            started,
            "ok",
            parent=started.id,
            page="https://a.example.test/form",
            withheld=True,
            secrets=[("shop", "password")],
        )
    )
    assert chain.state.url is None and chain.state.url_withheld
    for name in (("mail", "username"), ("shop", "password")):
        again = chain.begin("type_secret")
        chain.add(records.finish(again, "ok", parent=again.id, secrets=[name]))
    assert chain.state.typed_secrets == (("mail", "username"), ("shop", "password"))


def test_a_save_is_told_by_its_finish_and_an_older_journals_saved_mark_still_counts() -> None:
    chain = Chain()
    done = chain.op("save_site_data", saved={"cookies": 3, "sites": 1, "skipped": 0})
    assert chain.state.last_save is not None
    assert (chain.state.last_save.record, chain.state.last_save.at) == (done.id, done.at)
    assert chain.state.last_save.detail == {"cookies": 3, "sites": 1, "skipped": 0}
    old = chain.add(records.mark("saved", parent=chain.state.head, detail={"cookies": 5}))
    assert chain.state.last_save.record == old.id  # a journal written before: the mark
    chain.op("click")
    assert chain.state.last_save.record == old.id  # a finish without counts: no save
    chain.add(records.mark("forgotten", parent=chain.state.head, detail={"hosts": 1}))
    assert chain.state.last_save is None


def test_a_failed_save_finish_is_no_save() -> None:
    chain = Chain()
    started = chain.begin("save_site_data")
    chain.add(
        records.finish(
            started, "failed", parent=started.id, saved={"cookies": 1}, error={"type": "x"}
        )
    )
    assert chain.state.last_save is None


def test_saved_forgotten_and_cleared_marks() -> None:
    chain = Chain()
    chain.op("navigate", page="https://a.example.test/")
    saved = chain.add(records.mark("saved", parent=chain.state.head, detail={"cookies": 4}))
    assert chain.state.last_save is not None
    assert (chain.state.last_save.record, chain.state.last_save.detail) == (
        saved.id,
        {"cookies": 4},
    )
    chain.add(records.mark("forgotten", parent=chain.state.head, detail={"site": "a.test"}))
    assert chain.state.last_save is not None  # one host forgotten: the rest stays saved
    chain.add(records.mark("forgotten", parent=chain.state.head, detail={"hosts": 1}))
    assert chain.state.last_save is None
    chain.op("navigate", page="https://b.example.test/x")
    chain.add(records.mark("cleared", parent=chain.state.head))
    assert [e.origin for e in chain.state.history] == ["https://b.example.test"]
    assert chain.state.url == "https://b.example.test/x"


def test_a_failed_operation_still_records_the_pages_it_reached() -> None:
    chain = Chain()
    started = chain.begin("run_flow")
    chain.add(
        records.finish(
            started,
            "failed",
            parent=started.id,
            pages=["https://a.example.test/", "https://b.example.test/"],
            error={"type": "assertion_failed", "message": "no"},
        )
    )
    assert [e.origin for e in chain.state.history] == [
        "https://b.example.test",
        "https://a.example.test",
    ]


# --- the history rules are history.py's -------------------------------------------------

HOSTS = ["a.example.test", "b.example.test", "c.example.test", "d.other.test", "e.other.test"]
urls = st.builds(
    lambda host, path, query: f"https://{host}/{path}" + (f"?q={query}" if query else ""),
    st.sampled_from(HOSTS),
    st.sampled_from(["", "p", "p/q"]),
    st.sampled_from(["", "1", "code"]),
) | st.sampled_from(["about:blank", "data:text/plain,x"])
visits = st.lists(
    st.tuples(st.lists(urls, max_size=3), st.floats(min_value=0, max_value=50)), max_size=25
)


@settings(max_examples=300, deadline=None)
@given(visits=visits, ttl=st.sampled_from([10.0, 60.0, 1e9]), cap=st.integers(1, 6))
def test_bump_agrees_with_history_bump_many(
    visits: Sequence[tuple[list[str], float]], ttl: float, cap: int
) -> None:
    rules = Rules(ttl=ttl, cap=cap)
    ours: list[HistoryEntry] = []
    theirs: tuple[HistoryEntry, ...] = ()
    now = T0
    for pages, step in visits:
        now += step
        _bump_in_place(ours, pages, now, rules)
        theirs = hist.bump_many(theirs, pages, now, ttl=ttl, cap=cap)
        assert tuple(ours) == theirs
