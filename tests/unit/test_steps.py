"""Operation arguments and flow steps, validated at the edge (SPEC §5, §6)."""

from __future__ import annotations

import pytest

from sitekeep.args import ClickArgs, TypeArgs, parse_args, parse_steps
from sitekeep.browser.page import KEYS, parse_keys
from sitekeep.errors import InvalidInput
from sitekeep.journal import redact
from sitekeep.masking import appears_in as _appears_in


def test_a_target_is_a_ref_or_a_selector_never_both_or_neither() -> None:
    assert parse_args("click", {"ref": "e2"}) == ClickArgs(ref="e2")
    for bad in ({}, {"ref": "e1", "selector": "#x"}):
        with pytest.raises(InvalidInput, match="exactly one of ref"):
            parse_args("click", bad)


def test_an_unknown_operation_or_argument_names_the_field() -> None:
    with pytest.raises(InvalidInput) as unknown:
        parse_args("teleport", {})
    assert unknown.value.field == "op"
    with pytest.raises(InvalidInput) as extra:
        parse_args("type", {"selector": "#q", "text": "hi", "speed": 3})
    assert extra.value.field == "speed"


def test_steps_take_flat_or_nested_arguments_and_name_the_bad_step() -> None:
    steps = parse_steps(
        [
            {"op": "type", "selector": "#q", "text": "dummy", "on_error": "continue"},
            {"op": "type", "args": {"selector": "#q", "text": "x"}},
        ]
    )
    assert steps[0].args == TypeArgs(selector="#q", text="dummy")
    assert steps[0].on_error == "continue" and steps[1].on_error is None
    with pytest.raises(InvalidInput) as bad:
        parse_steps([{"op": "back"}, {"op": "navigate", "url": 7}])
    assert bad.value.field == "steps[1].url"


@pytest.mark.parametrize("steps", [[], "navigate", [{"url": "x"}], [{"op": 3}]])
def test_a_flow_needs_a_list_of_steps_with_ops(steps: object) -> None:
    with pytest.raises(InvalidInput):
        parse_steps(steps)  # type: ignore[arg-type]


def test_key_combinations_map_to_webdriver_key_values() -> None:
    assert parse_keys("Enter") == [[KEYS["Enter"]]]
    assert parse_keys("Control+A Tab") == [[KEYS["Control"], "a"], [KEYS["Tab"]]]
    assert parse_keys("x") == [["x"]]
    with pytest.raises(InvalidInput) as bad:
        parse_keys("Hyper+Q")
    assert bad.value.field == "keys"


@pytest.mark.parametrize(
    "url",
    [
        "https://form.example.test/session?password=dummy%2Fpass+7f",
        "https://form.example.test/session?password=dummy%2Fpass%207f",
        "https://form.example.test/cb#dummy/pass 7f",
    ],
)
def test_a_secret_value_is_found_in_a_url_however_it_was_encoded(url: str) -> None:
    assert _appears_in("dummy/pass 7f", url)


def test_a_url_without_the_value_is_not_withheld() -> None:
    assert not _appears_in("dummy-pass", "https://form.example.test/session?user=carol")
    assert not _appears_in("", "https://form.example.test/")


def test_redacted_arguments_keep_no_typed_text_nor_query() -> None:
    typed = redact.args("type", TypeArgs(selector="#q", text="dummy-typed").model_dump())
    assert typed["text"] == {"length": 11}
    navigated = redact.args("navigate", {"url": "https://app.example.test/cb?code=dummy#t"})
    assert navigated["url"] == "https://app.example.test/cb"
