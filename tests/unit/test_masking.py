"""Typed secret values never come back in a result, whatever the page did with them
(SPEC §7, §12; issue #8 item 3)."""

from __future__ import annotations

from urllib.parse import quote_plus

from sitekeep.masking import MASK, PIECE, Masker

VALUE = "dummy-pass-7f3a&x y"
LONG = "dummy-long-" + "0123456789abcdef" * 20


def test_a_value_is_masked_wherever_it_stands_in_a_result_keys_included() -> None:
    masker = Masker.of([VALUE])
    result = {
        "elements": [{"role": "textbox", "name": "Password", "value": VALUE}],
        "title": f"Hello {VALUE}!",
        VALUE: 1,
        "n": 3,
        "ok": True,
    }
    masked = masker.value(result)
    assert masked == {
        "elements": [{"role": "textbox", "name": "Password", "value": MASK}],
        "title": f"Hello {MASK}!",
        MASK: 1,
        "n": 3,
        "ok": True,
    }


def test_a_value_cut_short_or_encoded_by_the_page_is_masked() -> None:
    masker = Masker.of([LONG, VALUE])
    snapshot_cut = LONG[:120]
    read_cut = "text " + LONG[:500] + "\n[… truncated: 505 of 900 characters shown]"
    tail = "last part: " + LONG[-40:]
    url = "http://form.example.test/session?password=" + quote_plus(VALUE) + "&plan=free"
    assert masker.text(snapshot_cut) == MASK
    assert masker.text(read_cut) == f"text {MASK}\n[… truncated: 505 of 900 characters shown]"
    assert masker.text(tail) == f"last part: {MASK}"
    assert masker.text(url) == f"http://form.example.test/session?password={MASK}&plan=free"


def test_a_short_value_is_masked_only_whole_and_other_text_stays() -> None:
    masker = Masker.of(["carol"])
    assert masker.text("signed in as carol (plan free)") == f"signed in as {MASK} (plan free)"
    assert masker.text("caro and rol") == "caro and rol"
    assert len("carol") < PIECE


def test_no_values_change_nothing() -> None:
    masker = Masker.of([])
    assert not masker
    assert masker.value({"a": ["b"]}) == {"a": ["b"]}
