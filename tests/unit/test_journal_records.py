"""``sitekeep.journal.records`` and ``redact``: the record format, its checks, its cap,
and what never goes into a journal (SPEC §8, §12)."""

from __future__ import annotations

import json
import secrets

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitekeep.errors import RecordTooLarge
from sitekeep.journal import records, redact
from sitekeep.journal.records import FULL, RecordError

CALL = "c" * 32


def line_of(record: records.Record) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(records.encode(record))
    return loaded


def started(op: str = "navigate", **args: object) -> records.Begin:
    return records.begin(op, args or {"url": "https://a.example.test/"}, parent=None, call=CALL)


# --- the format -------------------------------------------------------------------------


def test_every_record_opens_with_the_envelope_fields_in_order() -> None:
    begin = started()
    snap = records.snapshot(begin, 1, "g:1", ["s-1"], parent=begin.id)
    done = records.finish(begin, "ok", parent=snap.id, refs="replaced", snapshot=snap.id)
    note = records.mark("saved", parent=done.id, detail={"cookies": 2})
    for record in (begin, snap, done, note):
        keys = list(line_of(record))
        assert keys[:8] == ["type", "v", "id", "parent", "at", "op", "call", "step"]


def test_records_round_trip_through_one_line_each() -> None:
    begin = started("click", ref="e3")
    done = records.finish(
        begin, "failed", parent=begin.id, error={"type": "stale_ref", "message": "m"}
    )
    for record in (begin, done):
        line = records.encode(record)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert records.decode(line[:-1]) == record


def test_the_envelope_decoder_reads_a_snapshot_without_its_ref_map() -> None:
    begin = started("snapshot")
    snap = records.snapshot(begin, 4, "g:1", [f"node-{i}" for i in range(50)], parent=begin.id)
    head = records.decode(records.encode(snap)[:-1], records.ENVELOPE)
    assert isinstance(head, records.SnapshotHead)
    assert (head.id, head.number, head.count) == (snap.id, 4, 50)
    assert not hasattr(head, "shared_ids")


def test_a_record_at_the_cap_is_written_and_one_byte_more_is_refused() -> None:
    begin = started()
    size = len(records.encode(begin))
    assert records.encode(begin, max_record=size) == records.encode(begin)
    with pytest.raises(RecordTooLarge) as raised:
        records.encode(begin, max_record=size - 1)
    assert (raised.value.size, raised.value.cap) == (size, size - 1)
    assert "SITEKEEP_JOURNAL_MAX_RECORD" in raised.value.message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: {**r, "id": "XYZ"}, "id"),
        (lambda r: {**r, "v": 2}, "v"),
        (lambda r: {**r, "parent": r["id"]}, "parent"),
        (lambda r: {**r, "at": -1}, "at"),
        (lambda r: {**r, "step": -1}, "step"),
        (lambda r: {**r, "op": "Drop Table"}, "op"),
        (lambda r: {**r, "surprise": 1}, "surprise"),
        (lambda r: {**r, "type": "rumour"}, "type"),
        (lambda r: {**r, "op": None}, "op"),
    ],
)
def test_a_bad_begin_is_refused_naming_the_field(change: object, field: str) -> None:
    raw = json.loads(records.encode(started()))
    assert callable(change)
    with pytest.raises(RecordError) as raised:
        records.decode(json.dumps(change(raw)).encode())
    assert field in str(raised.value) or raised.value.field == field


def test_a_finish_must_name_a_snapshot_exactly_when_refs_are_replaced() -> None:
    begin = started()
    raw = json.loads(records.encode(records.finish(begin, "ok", parent=begin.id, refs="reused")))
    raw["effects"]["refs"] = {"status": "replaced", "snapshot": None}
    with pytest.raises(RecordError, match="replaced"):
        records.decode(json.dumps(raw).encode())
    raw["effects"]["refs"] = {"status": "reused", "snapshot": "a" * 32}
    with pytest.raises(RecordError, match="replaced"):
        records.decode(json.dumps(raw).encode())


def test_a_finish_holding_a_query_string_is_not_a_valid_record() -> None:
    begin = started()
    raw = json.loads(records.encode(records.finish(begin, "ok", parent=begin.id)))
    raw["effects"]["page"] = "https://a.example.test/cb?code=abc"
    with pytest.raises(RecordError):
        records.decode(json.dumps(raw).encode())
    raw["effects"]["page"] = "https://user:pw@a.example.test/"
    with pytest.raises(RecordError, match="user info"):
        records.decode(json.dumps(raw).encode())


def test_a_snapshot_whose_count_differs_from_its_ids_is_refused() -> None:
    begin = started("snapshot")
    raw = json.loads(records.encode(records.snapshot(begin, 1, "g", ["a", "b"], parent=begin.id)))
    raw["count"] = 3
    with pytest.raises(RecordError, match="count"):
        records.decode(json.dumps(raw).encode())


@pytest.mark.parametrize("line", [b"", b"{", b"[1,2]", b"\xff\xfe", b'{"type":"begin"}', b"null"])
def test_lines_that_are_not_records_are_refused(line: bytes) -> None:
    with pytest.raises(RecordError):
        records.decode(line, FULL)


# --- redaction --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://a.example.test/p/q?code=1#frag", "https://a.example.test/p/q"),
        ("https://user:pw@a.example.test:8443/x", "https://a.example.test:8443/x"),
        ("HTTP://A.Example.Test/Path", "http://a.example.test/Path"),
        ("http://[::1]:8080/x?y", "http://[::1]:8080/x"),
        ("about:blank", "about:blank"),
        ("data:text/html,<b>secret</b>", "data:"),
        ("blob:https://a.example.test/1234", "blob:"),
        ("javascript:alert(1)", "javascript:"),
        ("http://a.example.test:99999/", "invalid:"),
        ("not a url", "invalid:"),
    ],
)
def test_urls_keep_origin_and_path_only(url: str, kept: str) -> None:
    assert redact.url(url) == kept
    assert redact.is_redacted_url(kept)


def test_a_url_longer_than_a_record_field_is_cut_and_its_finish_is_still_written() -> None:
    long = "https://a.example.test/" + "p" * 5000 + "?q=1"
    kept = redact.url(long)
    assert len(kept) == redact.MAX_URL and kept.endswith("…") and redact.is_redacted_url(kept)
    started = records.begin("navigate", {"url": long}, parent=None, call=CALL)
    done = records.finish(started, "ok", parent=started.id, pages=[long], page=long)
    assert records.decode(records.encode(done)[:-1]) == done


def test_typed_text_is_kept_as_its_length_and_secret_names_stay() -> None:
    typed = records.begin(
        "type", {"ref": "e2", "text": "hunter2-typed", "submit": True}, parent=None, call=CALL
    )
    secret = records.begin(
        "type_secret",
        {"ref": "e3", "secret": "shop-login", "field": "password", "submit": False},
        parent=None,
        call=CALL,
    )
    assert typed.args == {"ref": "e2", "text": {"length": 13}, "submit": True}
    assert secret.args == {
        "ref": "e3",
        "secret": "shop-login",
        "field": "password",
        "submit": False,
    }


def test_flow_steps_are_redacted_step_by_step() -> None:
    steps = [
        {"op": "navigate", "url": "https://a.example.test/login?next=/x"},
        {"op": "type", "selector": "#pw", "text": "p4ssw0rd-flow", "on_error": "continue"},
        {"op": "wait_for", "text": "Welcome alice", "timeout": 5},
    ]
    args = redact.args("run_flow", {"steps": steps, "on_error": "stop"})
    assert args == {
        "steps": [
            {"op": "navigate", "url": "https://a.example.test/login"},
            {"op": "type", "selector": "#pw", "text": {"length": 13}, "on_error": "continue"},
            {"op": "wait_for", "text": {"length": 13}, "timeout": 5},
        ],
        "on_error": "stop",
    }


def test_arguments_nobody_vouched_for_keep_only_their_shape() -> None:
    cookies = [{"name": "sid", "value": "cookie-value-1"}]
    args = redact.args(
        "import_storage_state",
        {"cookies": cookies, "origins": {}, "note": "storage-value-2", "count": 3, "ok": True},
    )
    assert args == {
        "cookies": {"items": 1},
        "origins": {"items": 0},
        "note": {"length": 15},
        "count": 3,
        "ok": True,
    }
    assert redact.args("navigate", {"url": "https://a.example.test/", "value": "v-3"}) == {
        "url": "https://a.example.test/",
        "value": {"length": 3},
    }


def test_errors_keep_their_structured_fields_and_trim_urls_in_messages() -> None:
    error = redact.error(
        {
            "type": "navigation_failed",
            "message": "could not load https://a.example.test/cb?code=s3cr3t#x (refused)",
            "reason": "net::ERR_CONNECTION_REFUSED",
            "detail": "password=s3cr3t",
        }
    )
    assert error == {
        "type": "navigation_failed",
        "reason": "net::ERR_CONNECTION_REFUSED",
        "message": "could not load https://a.example.test/cb (refused)",
    }


def test_mark_details_keep_counts_and_listed_names_only() -> None:
    note = records.mark(
        "saved",
        parent=None,
        detail={"cookies": 3, "sites": ["https://a.example.test"], "profile": "work", "x": "v"},
    )
    assert note.detail == {"cookies": 3, "sites": 1, "profile": "work", "x": 1}


def test_a_save_finish_keeps_counts_never_a_value_and_round_trips() -> None:
    begin = started("save_site_data")
    marker = secrets.token_hex(8)
    done = records.finish(
        begin,
        "ok",
        parent=begin.id,
        saved={"cookies": 3, "sites": 2, "skipped": 0, "leak": f"value-{marker}"},
    )
    assert done.effects.saved == {"cookies": 3, "sites": 2, "skipped": 0, "leak": 22}
    line = records.encode(done)
    assert marker.encode() not in line
    assert records.decode(line[:-1]) == done
    plain = records.finish(begin, "ok", parent=begin.id)
    assert b"saved" not in records.encode(plain)  # no counts, no field: older lines alike


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(min_size=1, max_size=40),
    query=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=20),
)
def test_no_typed_text_or_query_value_reaches_a_line(text: str, query: str) -> None:
    marker = secrets.token_hex(8)  # a value no record could hold by chance
    typed = text + marker
    begin = records.begin("type", {"selector": "#q", "text": typed}, parent=None, call=CALL)
    url = f"https://a.example.test/search?q={query}{marker}#{marker}"
    done = records.finish(begin, "ok", parent=begin.id, pages=[url], page=url)
    for record in (begin, done):
        line = records.encode(record)
        assert marker.encode() not in line
        assert json.dumps(typed)[1:-1].encode() not in line
