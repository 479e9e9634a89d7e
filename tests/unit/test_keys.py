"""The typing engine's bounds and errors (issue #8 items 2 and 4), without a browser."""

from __future__ import annotations

import pytest

from sitekeep.browser import keys, page
from sitekeep.errors import BidiTimeout, Conflict, InvalidInput, SecretNotAllowed
from sitekeep.secrets import MAX_VALUE_CHARS
from sitekeep.steps import parse_args

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


@pytest.mark.parametrize(
    ("pressed", "chord"),
    [("Control+C", 0), ("Meta+x", 0), ("Tab Control+Shift+V", 1), ("Shift+Delete", 0),
     ("Control+A Control+C", 1), ("Control+A", None), ("C V x", None), ("Shift+Tab", None),
     ("Alt+c", None)],
)  # fmt: skip
def test_clipboard_chords_are_found_whatever_else_is_held(pressed: str, chord: int | None) -> None:
    assert keys.clipboard_chord(page.parse_keys(pressed)) == chord


def test_insert_chords_copy_and_paste_too() -> None:
    control, shift, insert = page.KEYS["Control"], page.KEYS["Shift"], "\ue016"
    assert keys.clipboard_chord([[control, insert]]) == 0
    assert keys.clipboard_chord([[shift, insert]]) == 0
    assert keys.clipboard_chord([[insert]]) is None
