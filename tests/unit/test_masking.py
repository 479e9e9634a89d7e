"""Typed secret values never come back in a result, whatever the page did with them
(SPEC §7, §12; issue #8 item 3), nor from any copy of site data that holds them (issue #24
item 2)."""

from __future__ import annotations

import base64
import re
from dataclasses import replace
from urllib.parse import quote, quote_plus

import pytest

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


SPECIAL = "Dummy p@ss/w\u00f6rd!*'()~+7e"


def _spellings(value: str) -> dict[str, str]:
    raw = value.encode()
    uri = quote(value, safe="!*'()~")
    return {
        "encodeURIComponent": uri,
        "encodeURI": quote(value, safe="!*'()~@/+;,?:&=$#"),
        "mixed-case hex": "".join(
            part.lower() if i % 2 else part for i, part in enumerate(re.split("(%..)", uri))
        ),
        "half encoded": quote(value, safe="@/!*'()~ "),
        "escape()": "Dummy%20p@ss/w%F6rd%21*%27%28%29%7E+7e",
        "base64": base64.b64encode(raw).decode(),
        "base64 in Basic": "Basic " + base64.b64encode(b"carol:" + raw).decode(),
        "base64 after two": base64.b64encode(b"ab" + raw + b"z").decode(),
        "base64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
    }


@pytest.mark.parametrize("how", list(_spellings(SPECIAL)))
def test_a_value_is_masked_in_every_encoding_a_page_gives_it(how: str) -> None:
    """Issue #24 item 2, attacked afresh: each encoding a page can give a value it copies
    (JavaScript's, not only Python's quote) hides no stretch of it."""
    text = _spellings(SPECIAL)[how]
    masked = Masker.of([SPECIAL]).text(f"<{text}>")
    assert MASK in masked, masked
    assert len(masked) < len(text) / 2 + 8, masked  # no long run of it is left


def test_an_export_masks_a_cookies_name_and_path_and_leaves_out_a_host_holding_a_value() -> None:
    value = "dummy-host-7b2c"  # a page can name a host after a lower-case value
    data = SiteData(
        cookies=(
            Cookie(name=value, value="v", domain="app.example.test", path=f"/x/{value}"),
            Cookie(name="c", value="v", domain=f"{value}.example.test"),
        ),
        origins={
            APP: OriginStorage(local={"k": "v"}),
            f"http://{value}.example.test": OriginStorage(local={"k": "v"}),
        },
    )
    out = masked_site_data(Masker.of([value]), data)
    assert [(c.name, c.path, c.domain) for c in out.cookies] == [
        (MASK, f"/x/{MASK}", "app.example.test")
    ]
    assert list(out.origins) == [APP]
