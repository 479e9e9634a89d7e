"""``sitekeep.browser.tracker.LeaveTracker`` fed with ``script.message`` event params.

The reports are the preload script's: ``{"t": "born"|"left", "doc", "origin", "trusted",
"local"?}`` as JSON text in a BiDi ``string`` remote value on the ``sitekeep.leave`` channel.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitekeep.browser.scripts import CHANNEL
from sitekeep.browser.tracker import LeaveTracker

A = "https://a.example.test"
B = "https://b.example.test"


def message(report: Any, channel: str = CHANNEL, context: str | None = None) -> dict[str, Any]:
    """``script.message`` params carrying ``report`` as JSON text, from ``context`` (by
    default a context of the document's own)."""
    doc = report.get("doc") if isinstance(report, dict) else None
    return {
        "channel": channel,
        "data": {"type": "string", "value": json.dumps(report)},
        "source": {"realm": "realm-1", "context": context or f"ctx-{doc}"},
    }


def born(
    tracker: LeaveTracker,
    doc: str,
    origin: str,
    *,
    trusted: bool = True,
    context: str | None = None,
) -> None:
    report = {"t": "born", "doc": doc, "origin": origin, "trusted": trusted}
    tracker.on_message(message(report, context=context))


def left(
    tracker: LeaveTracker,
    doc: str,
    origin: str,
    local: dict[str, str],
    *,
    trusted: bool = True,
) -> None:
    tracker.on_message(
        message({"t": "left", "doc": doc, "origin": origin, "trusted": trusted, "local": local})
    )


def test_a_tracker_from_birth_knows_an_unreported_origin_is_empty() -> None:
    tracker = LeaveTracker.at_birth()
    assert tracker.copy(A, alive_docs=()) == {}


def test_a_tracker_not_from_birth_knows_nothing_of_an_unreported_origin() -> None:
    assert LeaveTracker().copy(A, alive_docs=()) is None


def test_a_left_report_gives_an_exact_copy_of_the_origins_storage() -> None:
    tracker = LeaveTracker.at_birth()
    born(tracker, "d1", A)
    left(tracker, "d1", A, {"token": "dummy", "n": "1"})
    assert tracker.copy(A, alive_docs=()) == {"token": "dummy", "n": "1"}
    assert tracker.copy(B, alive_docs=()) == {}


def test_the_latest_left_report_replaces_the_copy() -> None:
    tracker = LeaveTracker.at_birth()
    left(tracker, "d1", A, {"old": "1"})
    left(tracker, "d2", A, {"new": "2"})
    assert tracker.copy(A, alive_docs=()) == {"new": "2"}


def test_the_copy_handed_out_is_not_the_trackers_own() -> None:
    tracker = LeaveTracker.at_birth()
    left(tracker, "d1", A, {"k": "v"})
    tracker.copy(A, alive_docs=())["k"] = "changed"  # type: ignore[index]
    assert tracker.copy(A, alive_docs=()) == {"k": "v"}


def test_a_document_that_died_without_a_left_report_makes_its_origin_unknown() -> None:
    tracker = LeaveTracker.at_birth()
    left(tracker, "d1", A, {"k": "v"})
    born(tracker, "d2", A)
    assert tracker.copy(A, alive_docs=["d2"]) == {"k": "v"}
    assert tracker.copy(A, alive_docs=[]) is None


def test_an_untrusted_document_taints_its_origin_until_a_trusted_left_report() -> None:
    tracker = LeaveTracker.at_birth()
    born(tracker, "frame", A, trusted=False)
    assert tracker.copy(A, alive_docs=["frame"]) is None
    left(tracker, "frame", A, {"k": "partitioned?"}, trusted=False)
    assert tracker.copy(A, alive_docs=()) is None
    left(tracker, "top", A, {"k": "v"})
    assert tracker.copy(A, alive_docs=()) == {"k": "v"}


def test_an_untrusted_left_report_drops_the_earlier_copy() -> None:
    tracker = LeaveTracker.at_birth()
    left(tracker, "d1", A, {"k": "v"})
    left(tracker, "frame", A, {"k": "other"}, trusted=False)
    assert tracker.copy(A, alive_docs=()) is None


def test_a_left_report_without_storage_taints_the_origin() -> None:
    tracker = LeaveTracker.at_birth()
    tracker.on_message(message({"t": "left", "doc": "d1", "origin": A, "trusted": True}))
    assert tracker.copy(A, alive_docs=()) is None


def test_after_the_socket_is_lost_no_copy_is_trusted() -> None:
    tracker = LeaveTracker.at_birth()
    left(tracker, "d1", A, {"k": "v"})
    tracker.lost()
    assert tracker.complete is False
    assert tracker.copy(A, alive_docs=()) is None
    assert tracker.copy(B, alive_docs=()) is None


def test_resync_after_a_loss_trusts_what_was_read_but_does_not_assume_others_empty() -> None:
    tracker = LeaveTracker.at_birth()
    tracker.lost()
    tracker.begin()
    tracker.resync({A: {"k": "read"}}, live_docs={})
    assert tracker.complete is True
    assert tracker.copy(A, alive_docs=()) == {"k": "read"}
    assert tracker.copy(B, alive_docs=()) is None


def test_resync_skips_origins_reported_on_since_begin() -> None:
    tracker = LeaveTracker()
    tracker.begin()
    left(tracker, "d1", A, {"k": "newer than the read"})
    tracker.resync({A: {"k": "read"}, B: {"b": "1"}}, live_docs={})
    assert tracker.copy(A, alive_docs=()) is None
    assert tracker.copy(B, alive_docs=()) == {"b": "1"}


def test_resync_takes_the_live_documents_as_the_ones_to_watch() -> None:
    tracker = LeaveTracker()
    tracker.begin()
    tracker.resync({A: {"a": "1"}}, live_docs={"dA": (A, True)})
    assert tracker.copy(A, alive_docs=["dA"]) == {"a": "1"}
    assert tracker.copy(A, alive_docs=[]) is None


def test_resync_taints_an_origin_with_an_untrusted_live_document_it_did_not_read() -> None:
    tracker = LeaveTracker()
    tracker.begin()
    tracker.resync({}, live_docs={"frame": (B, False)})
    assert tracker.copy(B, alive_docs=["frame"]) is None


def test_resync_taints_an_origin_with_an_untrusted_live_document_even_when_read() -> None:
    tracker = LeaveTracker()
    tracker.begin()
    tracker.resync({B: {"b": "1"}}, live_docs={"frame": (B, False)})
    assert tracker.copy(B, alive_docs=["frame"]) is None


def test_wrote_records_what_restore_wrote_for_origins_unchanged_since_begin() -> None:
    tracker = LeaveTracker.at_birth()
    tracker.begin()
    born(tracker, "d1", B)
    tracker.wrote({A: {"a": "restored"}, B: {"b": "restored"}})
    assert tracker.copy(A, alive_docs=()) == {"a": "restored"}
    assert tracker.copy(B, alive_docs=["d1"]) == {}


def test_reports_on_other_channels_are_ignored() -> None:
    tracker = LeaveTracker.at_birth()
    tracker.on_message(
        message({"t": "left", "doc": "d", "origin": A, "trusted": True, "local": {"k": "v"}}, "x")
    )
    assert tracker.copy(A, alive_docs=()) == {}


@pytest.mark.parametrize(
    "params",
    [
        {"channel": CHANNEL},
        {"channel": CHANNEL, "data": None},
        {"channel": CHANNEL, "data": {"type": "string"}},
        {"channel": CHANNEL, "data": {"type": "string", "value": "not json"}},
        {"channel": CHANNEL, "data": {"type": "number", "value": 5}},
        message("a string"),
        message([1, 2]),
        message(None),
        message({"t": "left", "origin": A, "trusted": True, "local": {"k": "v"}}),
        message({"t": "left", "doc": "d", "trusted": True, "local": {"k": "v"}}),
    ],
    ids=[
        "no-data",
        "null-data",
        "no-value",
        "not-json",
        "number",
        "json-string",
        "json-list",
        "json-null",
        "no-doc",
        "no-origin",
    ],
)
def test_a_malformed_report_is_ignored_without_raising(params: dict[str, Any]) -> None:
    tracker = LeaveTracker.at_birth()
    left(tracker, "d1", A, {"k": "v"})
    tracker.on_message(params)
    assert tracker.copy(A, alive_docs=()) == {"k": "v"}
    assert tracker.complete is True


def test_a_document_replaced_in_its_context_without_a_report_taints_its_origin() -> None:
    tracker = LeaveTracker.at_birth()
    born(tracker, "d1", A, context="tab")
    born(tracker, "d2", B, context="tab")  # d1 is gone: its tab holds d2 now
    assert tracker.copy(A, alive_docs=["d2"]) is None


def test_a_closed_context_takes_its_unreported_document_with_it() -> None:
    tracker = LeaveTracker.at_birth()
    born(tracker, "d1", A, context="popup")
    tracker.on_context_destroyed({"context": "main", "children": [{"context": "popup"}]})
    assert tracker.copy(A, alive_docs=[]) is None


def test_a_trusted_report_after_a_silent_death_makes_the_copy_exact_again() -> None:
    tracker = LeaveTracker.at_birth()
    born(tracker, "d1", A, context="popup")
    tracker.on_context_destroyed({"context": "popup"})
    born(tracker, "d2", A, context="main")
    left(tracker, "d2", A, {"k": "v2"})
    assert tracker.copy(A, alive_docs=[]) == {"k": "v2"}


def test_a_reported_document_replaced_in_its_context_leaves_its_copy_exact() -> None:
    tracker = LeaveTracker.at_birth()
    born(tracker, "d1", A, context="tab")
    left(tracker, "d1", A, {"k": "v"})
    born(tracker, "d2", B, context="tab")
    assert tracker.copy(A, alive_docs=["d2"]) == {"k": "v"}
