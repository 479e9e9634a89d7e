"""The leave tracker: documents from BiDi events, content from leave reports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitekeep.browser.scripts import CHANNEL, SPARE_PATH
from sitekeep.browser.tracker import LeaveTracker

A = "https://a.example.test"
B = "https://b.example.test"


def commit(tracker: LeaveTracker, context: str, url: str, parent: str | None = None) -> None:
    """A ``contextCreated`` (once per context) and a ``navigationCommitted``."""
    tracker.on_context_created({"context": context, "parent": parent})
    tracker.on_navigation_committed({"context": context, "url": url, "navigation": "n"})


def report(
    tracker: LeaveTracker,
    context: str,
    origin: str,
    local: dict[str, str] | None,
    *,
    trusted: bool = True,
    channel: str = CHANNEL,
) -> None:
    """A leave report on the channel, as ``script.message`` params."""
    data = {"origin": origin, "trusted": trusted, "local": local}
    tracker.on_message(
        {
            "channel": channel,
            "data": {"type": "string", "value": json.dumps(data)},
            "source": {"realm": "r", "context": context},
        }
    )


def test_a_tracker_from_birth_knows_an_unvisited_origin_is_empty() -> None:
    assert LeaveTracker.at_birth().copy(A) == {}


def test_a_tracker_not_from_birth_knows_nothing_of_an_unreported_origin() -> None:
    tracker = LeaveTracker()
    tracker.complete = True
    assert tracker.copy(A) is None


def test_a_document_that_reported_as_it_left_gives_an_exact_copy() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "tab", A + "/x")
    report(tracker, "tab", A, {"k": "v"})
    commit(tracker, "tab", B + "/y")
    assert tracker.copy(A) == {"k": "v"}


def test_the_copy_handed_out_is_not_the_trackers_own() -> None:
    tracker = LeaveTracker.at_birth()
    report(tracker, "tab", A, {"k": "v"})
    tracker.copy(A)["k"] = "changed"  # type: ignore[index]
    assert tracker.copy(A) == {"k": "v"}


def test_a_document_replaced_without_a_report_makes_its_origin_unknown() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "tab", A + "/x")
    commit(tracker, "tab", B + "/y")
    assert tracker.copy(A) is None


def test_a_late_report_of_a_replaced_document_makes_the_copy_exact_again() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "tab", A + "/x")
    commit(tracker, "tab", B + "/y")  # the report of A's document comes after the commit
    report(tracker, "tab", A, {"k": "late"})
    assert tracker.copy(A) == {"k": "late"}


def test_a_closed_context_takes_its_unreported_document_with_it() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "main", B + "/")
    commit(tracker, "popup", A + "/")
    tracker.on_context_destroyed({"context": "popup", "children": []})
    assert tracker.copy(A) is None
    assert tracker.copy(B) == {}


def test_closing_a_context_takes_its_frames_too() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "main", A + "/")
    commit(tracker, "frame", A + "/inner", parent="main")
    report(tracker, "main", A, {"k": "v"})
    tracker.on_context_destroyed({"context": "main", "children": [{"context": "frame"}]})
    assert tracker.copy(A) is None  # the frame of A went without a report


def test_a_frame_of_another_origin_taints_its_origin_until_a_trusted_report() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "main", A + "/")
    commit(tracker, "frame", B + "/widget", parent="main")
    assert tracker.copy(B) is None
    report(tracker, "frame", B, None, trusted=False)
    assert tracker.copy(B) is None
    commit(tracker, "tab2", B + "/")
    report(tracker, "tab2", B, {"k": "v"})
    assert tracker.copy(B) == {"k": "v"}


def test_a_same_origin_frame_is_trusted() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "main", A + "/")
    commit(tracker, "frame", A + "/inner", parent="main")
    report(tracker, "frame", A, {"k": "v"})
    tracker.on_context_destroyed({"context": "frame"})
    assert tracker.copy(A) == {"k": "v"}


def test_spare_pages_are_no_documents_of_their_origin() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "spare", A + SPARE_PATH + "?sk=1")
    tracker.on_context_destroyed({"context": "spare"})
    assert tracker.copy(A) == {}


def test_a_report_without_storage_taints_the_origin() -> None:
    tracker = LeaveTracker.at_birth()
    report(tracker, "tab", A, {"k": "v"})
    report(tracker, "tab", A, None)
    assert tracker.copy(A) is None


def test_after_the_socket_is_lost_no_copy_is_trusted() -> None:
    tracker = LeaveTracker.at_birth()
    report(tracker, "tab", A, {"k": "v"})
    tracker.lost()
    assert tracker.copy(A) is None
    assert tracker.copy(B) is None
    assert not tracker.from_birth


def test_resync_trusts_what_was_read_but_does_not_assume_others_empty() -> None:
    tracker = LeaveTracker()
    tracker.begin()
    tracker.resync({A: {"k": "v"}})
    assert tracker.complete
    assert tracker.copy(A) == {"k": "v"}
    assert tracker.copy(B) is None


def test_resync_skips_origins_that_changed_during_the_read() -> None:
    tracker = LeaveTracker()
    tracker.begin()
    commit(tracker, "tab", A + "/")  # a document of A was born while the save read
    tracker.resync({A: {"k": "old"}, B: {"k": "b"}})
    assert tracker.copy(A) is None
    assert tracker.copy(B) == {"k": "b"}


def test_resync_keeps_untrusted_live_frames_tainted() -> None:
    tracker = LeaveTracker()
    commit(tracker, "main", A + "/")
    commit(tracker, "frame", B + "/", parent="main")
    tracker.begin()
    tracker.resync({A: {}, B: {"k": "v"}})
    assert tracker.copy(B) is None


def test_reconcile_counts_a_document_the_events_missed_as_gone() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "tab", A + "/")
    tracker.reconcile({"tab": B})  # the save found B where the events still had A
    assert tracker.copy(A) is None


def test_reconcile_counts_a_vanished_context_as_gone() -> None:
    tracker = LeaveTracker.at_birth()
    commit(tracker, "tab", A + "/")
    commit(tracker, "popup", B + "/")
    report(tracker, "popup", B, {"k": "v"})
    tracker.reconcile({"tab": A})
    assert tracker.copy(B) == {"k": "v"}  # it reported before it went


def test_wrote_records_what_restore_wrote_for_origins_unchanged_since_begin() -> None:
    tracker = LeaveTracker.at_birth()
    tracker.begin()
    commit(tracker, "main", B + "/landing")
    tracker.wrote({A: {"a": "1"}, B: {"b": "2"}})
    assert tracker.copy(A) == {"a": "1"}
    assert tracker.copy(B) == {}  # B lived since: its copy is whatever it reports


def test_invalidate_forgets_a_copy() -> None:
    tracker = LeaveTracker.at_birth()
    report(tracker, "tab", A, {"k": "v"})
    tracker.invalidate(A)
    assert tracker.copy(A) is None


def test_reports_on_other_channels_are_ignored() -> None:
    tracker = LeaveTracker.at_birth()
    report(tracker, "tab", A, {"k": "v"}, channel="someone.else")
    assert tracker.copy(A) == {}


@pytest.mark.parametrize(
    "params",
    [
        {"channel": CHANNEL},
        {"channel": CHANNEL, "data": {"type": "string", "value": "not json"}},
        {"channel": CHANNEL, "data": {"type": "string", "value": "[1, 2]"}},
        {"channel": CHANNEL, "data": {"type": "string", "value": "{}"}},
        {"channel": CHANNEL, "data": None},
    ],
)
def test_a_malformed_report_is_ignored_without_raising(params: dict[str, Any]) -> None:
    tracker = LeaveTracker.at_birth()
    tracker.on_message(params)
    assert tracker.copy(A) == {}
