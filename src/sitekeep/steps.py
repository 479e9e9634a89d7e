"""The arguments of each agent operation, validated at the edge (SPEC §5, §6).

One pydantic model per operation, shared by the HTTP bodies, the MCP tools and flow steps,
so every facade names a bad field the same way. Element targets are ``ref`` (from
``snapshot``) or ``selector`` (CSS), exactly one of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sitekeep.errors import InvalidInput, quoted
from sitekeep.limits import (
    MAX_KEYS,
    MAX_NAME,
    MAX_REF,
    MAX_SELECTOR,
    MAX_STEPS,
    MAX_TEXT,
    MAX_URL,
    MAX_VALUE,
)

__all__ = [
    "OPERATIONS",
    "AssertTextArgs",
    "ClickArgs",
    "NavigateArgs",
    "NoArgs",
    "OnError",
    "PressArgs",
    "ReadArgs",
    "SaveArgs",
    "SelectArgs",
    "Step",
    "TypeArgs",
    "TypeSecretArgs",
    "WaitForArgs",
    "invalid_input",
    "parse_args",
    "parse_steps",
]

OnError = Literal["stop", "continue"]


class _Args(BaseModel):
    # strict: JSON types as written; "10" is no int and 0 no bool (issue #8 item 11).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class NoArgs(_Args):
    """``back``, ``forward``, ``snapshot``, ``screenshot``."""


class SaveArgs(_Args):
    """``save_site_data``."""

    indexed_db: bool = Field(
        default=False, description="Also carry every visited origin's IndexedDB databases."
    )
    full: bool = Field(
        default=False,
        description="Read every origin through the spare tab, ignoring the copies captured "
        "on leave (slower; the reference the fast path must equal).",
    )


class NavigateArgs(_Args):
    url: str = Field(description="An http(s) URL, or about:blank.", max_length=MAX_URL)


class _Target(_Args):
    ref: str | None = Field(
        default=None, description="An element ref from snapshot: e1, e2…", max_length=MAX_REF
    )
    selector: str | None = Field(
        default=None, description="A CSS selector, instead of ref.", max_length=MAX_SELECTOR
    )

    @model_validator(mode="after")
    def _one_target(self) -> _Target:
        if (self.ref is None) == (self.selector is None):
            raise ValueError("give exactly one of ref (from snapshot) or selector (CSS)")
        return self


class ClickArgs(_Target):
    pass


class TypeArgs(_Target):
    text: str = Field(
        max_length=MAX_TEXT,
        description="What to type; it replaces what the field holds. At most as many "
        "characters as a secret value holds: what types within the call's bound.",
    )
    submit: bool = Field(default=False, description="Press Enter after typing.")


class TypeSecretArgs(_Target):
    secret: str = Field(description="The secret's name in the catalogue.", max_length=MAX_NAME)
    field: str = Field(description="Which of its values: username, password…", max_length=MAX_NAME)
    submit: bool = Field(default=False, description="Press Enter after typing.")


class PressArgs(_Args):
    keys: str = Field(
        description="Keys: Enter, Tab, Escape, ArrowDown, Control+A…", max_length=MAX_KEYS
    )


class SelectArgs(_Target):
    value: str = Field(description="The option's value or its visible label.", max_length=MAX_VALUE)


class ReadArgs(_Args):
    selector: str | None = Field(
        default=None, description="CSS; the whole page when absent.", max_length=MAX_SELECTOR
    )
    max_chars: int = Field(default=20_000, ge=1, le=200_000)


class WaitForArgs(_Args):
    text: str | None = Field(default=None, max_length=MAX_TEXT)
    selector: str | None = Field(default=None, max_length=MAX_SELECTOR)
    timeout: float = Field(default=5.0, gt=0, le=120, allow_inf_nan=False)

    @model_validator(mode="after")
    def _one_condition(self) -> WaitForArgs:
        if (self.text is None) == (self.selector is None):
            raise ValueError("give exactly one of text or selector")
        return self


class AssertTextArgs(_Args):
    text: str = Field(max_length=MAX_TEXT)


OPERATIONS: dict[str, type[_Args]] = {
    "navigate": NavigateArgs,
    "back": NoArgs,
    "forward": NoArgs,
    "snapshot": NoArgs,
    "click": ClickArgs,
    "type": TypeArgs,
    "type_secret": TypeSecretArgs,
    "press": PressArgs,
    "select": SelectArgs,
    "read": ReadArgs,
    "screenshot": NoArgs,
    "wait_for": WaitForArgs,
    "assert_text": AssertTextArgs,
    "save_site_data": SaveArgs,
}
"""Every operation a flow step may name (SPEC §6), with its arguments."""


class Step(BaseModel):
    """One flow step: an operation, its arguments, and what to do if it fails."""

    model_config = ConfigDict(frozen=True)

    op: str
    args: _Args
    on_error: OnError | None = None


def invalid_input(exc: ValidationError, prefix: str = "") -> InvalidInput:
    """The first error of ``exc`` as ``InvalidInput`` naming its field (under ``prefix``),
    with pydantic's message only — never the input it was given."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or None)
    message = first.get("msg", "invalid").removeprefix("Value error, ")
    return InvalidInput(f"{field}: {message}" if field else message, field=field)


def parse_args(op: str, args: Mapping[str, Any], *, prefix: str = "") -> _Args:
    """The validated arguments of ``op``.

    Raises:
        InvalidInput: an unknown operation or a bad argument, naming the field.
    """
    model = OPERATIONS.get(op)
    if model is None:
        raise InvalidInput(
            f"unknown operation {quoted(str(op))}; one of: {', '.join(OPERATIONS)}",
            field=f"{prefix}.op" if prefix else "op",
        )
    try:
        return model.model_validate(dict(args))
    except ValidationError as exc:
        raise invalid_input(exc, prefix) from exc


def parse_steps(steps: Sequence[Mapping[str, Any]]) -> list[Step]:
    """Flow steps ``[{op, on_error?, ...args}]`` (or ``{op, args: {...}}``), validated.

    Raises:
        InvalidInput: naming the step and field, e.g. ``steps[2].url``.
    """
    if not isinstance(steps, Sequence) or isinstance(steps, str | bytes) or not steps:
        raise InvalidInput("steps must be a non-empty list", field="steps")
    if len(steps) > MAX_STEPS:
        raise InvalidInput(f"at most {MAX_STEPS} steps", field="steps")
    parsed = []
    for i, raw in enumerate(steps):
        where = f"steps[{i}]"
        if not isinstance(raw, Mapping) or not isinstance(raw.get("op"), str):
            raise InvalidInput("a step is an object with an op", field=f"{where}.op")
        rest = {k: v for k, v in raw.items() if k not in ("op", "on_error")}
        if set(rest) == {"args"} and isinstance(rest["args"], Mapping):
            rest = dict(rest["args"])
        on_error = raw.get("on_error")
        if on_error not in (None, "stop", "continue"):
            raise InvalidInput("on_error is stop or continue", field=f"{where}.on_error")
        args = parse_args(raw["op"], rest, prefix=where)
        parsed.append(Step(op=raw["op"], args=args, on_error=on_error))
    return parsed
