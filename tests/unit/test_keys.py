"""The typing engine's bounds and errors (issue #8 items 2 and 4), without a browser."""

from __future__ import annotations

import pytest

from sitekeep.args import parse_args
from sitekeep.browser import keys
from sitekeep.errors import BidiTimeout, Conflict, InvalidInput, SecretNotAllowed
from sitekeep.secrets import MAX_VALUE_CHARS

GUARD = keys.Guard("login", lambda host: host == "app.example.test")


def test_every_accepted_text_types_within_the_bound_of_its_path() -> None:
    assert keys.MAX_TEXT_CHARS == MAX_VALUE_CHARS
    assert keys.MAX_KEY_CHARS / keys.MIN_KEY_RATE <= keys.TYPE_BUDGET
    with pytest.raises(InvalidInput) as refused:
        parse_args("type", {"selector": "#f", "text": "x" * (MAX_VALUE_CHARS + 1)})
    assert refused.value.field == "text" and "x" * 20 not in refused.value.message


@pytest.mark.parametrize("reason", ["host", "frame", "moved", "gone"])
def test_a_secret_stopped_by_its_document_is_not_allowed_and_says_no_count(reason: str) -> None:
    error = keys._error(keys._Stopped(reason, "rec.other.test", 1024), GUARD, "selector")  # type: ignore[arg-type]
    assert isinstance(error, SecretNotAllowed) and error.secret == "login"
    assert "1024" not in error.message


def test_other_stops_name_the_element_or_the_bound() -> None:
    focus = keys._error(keys._Stopped("focus", "", 0), None, "ref")
    assert isinstance(focus, InvalidInput) and focus.field == "ref"
    assert isinstance(keys._error(keys._Stopped("late", "", 10), GUARD, "ref"), BidiTimeout)
    assert isinstance(keys._error(keys._Stopped("focus", "h", 10), None, "ref"), Conflict)


def test_a_page_that_replaces_the_field_mid_typing_is_a_conflict_not_another_host() -> None:
    error = keys._error(keys._Stopped("detached", "app.example.test", 1024), GUARD, "selector")
    assert isinstance(error, Conflict) and not isinstance(error, SecretNotAllowed)
