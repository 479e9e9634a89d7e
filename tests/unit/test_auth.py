"""The one parser of ``Authorization`` (RFC 6750 §2.1), used by every facade."""

from __future__ import annotations

import pytest

from sitekeep.auth import bearer_token
from sitekeep.errors import Unauthorized


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token sk_x", "bearer\tsk_x"],
)
def test_a_header_without_a_bearer_token_is_unauthorized(header: str | None) -> None:
    with pytest.raises(Unauthorized) as caught:
        bearer_token(header)
    assert "Authorization: Bearer" in caught.value.message


@pytest.mark.parametrize("header", ["Bearer sk_x", "bearer sk_x", "BEARER  sk_x ", "  Bearer sk_x"])
def test_the_bearer_scheme_is_case_insensitive_and_spaces_are_trimmed(header: str) -> None:
    assert bearer_token(header) == "sk_x"
