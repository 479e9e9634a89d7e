"""Typed secret values never come back in a result, whatever the page did with them
(SPEC §7, §12; issue #8 item 3), nor from any copy of site data that holds them (issue #24
item 2)."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import quote_plus

from sitekeep.masking import MASK, PIECE, Masker, carried, masked_site_data
from sitekeep.model import Cookie, OriginStorage, SiteData
from sitekeep.profiles import captured

VALUE = "dummy-pass-7f3a&x y"
LONG = "dummy-long-" + "0123456789abcdef" * 20
APP = "http://app.example.test:8001"


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


def test_data_carries_the_values_it_holds_a_stretch_of_and_no_other() -> None:
    """What a copy of site data carries to stay masked (issue #24): a value cut short in
    a cookie, one URL-encoded in an IndexedDB record, one as a storage key; not a value
    the page never copied, nor one only in a cookie a capture leaves out."""
    copied = "dummy-copied-" + "9f8e7d6c5b4a" * 3
    in_db, as_key, never = "dummy db value 41c2", "dummy-key-6d0a", "dummy-never-copied-77e1"
    data = SiteData(
        cookies=(Cookie("remember", "u:" + copied[:20], "app.example.test"),),
        origins={
            APP: OriginStorage(
                {as_key: "1"}, indexed_db=({"name": "db", "records": [quote_plus(in_db)]},)
            )
        },
    )
    values = [never, copied, in_db, as_key, copied]
    assert carried(values, data) == (copied, in_db, as_key)
    assert carried(values, SiteData()) == ()
    # A capture keeps neither IndexedDB nor unselected cookies, nor their values' mask.
    data = replace(data, mask=carried(values, data))
    kept = captured(data, [{"domain": "app.example.test", "name": "remember"}], 1.0)
    assert kept.mask == (copied, as_key)
    assert captured(replace(data, cookies=()), None, 1.0).mask == (as_key,)
    assert masked_site_data(Masker.of(data.mask), data).mask == ()
