"""One argument model per operation, validated at the edge (SPEC §5, §6, §9, §14).

The HTTP bodies, the MCP tools, flow steps, the service and the journal's redaction all
take their arguments from these models, so every facade names a bad field the same way
and an operation's options are written once. Element targets are ``ref`` (from
``snapshot``) or ``selector`` (CSS), exactly one of them.

Every model is strict (JSON types as written: ``0`` is no bool, ``"10"`` no int; issue #8
item 11), refuses unknown fields and bounds each string by a ``max_length`` from
:mod:`sitekeep.limits`, so the OpenAPI document states it. A model carried by an HTTP
route keeps the name the OpenAPI document gives its schema (``OpenBody``,
``NavigateBody``, ``FlowBody``…: ``tests/api/test_contract_http``).

Each field says what the journal may keep of it (:class:`Kept`, read by
``journal.redact``): a URL trimmed, a text as its length, a name as it is; a field that
says nothing keeps only its shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from sitekeep.errors import InvalidInput, quoted
from sitekeep.limits import (
    MAX_COOKIE,
    MAX_COOKIES,
    MAX_DESCRIPTION,
    MAX_HOSTS,
    MAX_KEY,
    MAX_KEYS,
    MAX_NAME,
    MAX_PROFILE_NAME,
    MAX_REF,
    MAX_SECRET_KEYS,
    MAX_SELECTOR,
    MAX_SITE,
    MAX_STEPS,
    MAX_TEXT,
    MAX_URL,
    MAX_VALUE,
)

__all__ = [
    "JOURNALED",
    "KEY_PATTERN",
    "MAX_KEY",
    "MAX_NAME",
    "MAX_SITE",
    "MAX_URL",
    "OPERATIONS",
    "VERSION_PATTERN",
    "Args",
    "AssertTextArgs",
    "AutosaveArgs",
    "AutosaveReason",
    "CaptureBody",
    "CheckBody",
    "CheckProbe",
    "ClickArgs",
    "CreateBody",
    "FlowBody",
    "Kept",
    "NavigateArgs",
    "NavigateBody",
    "NoArgs",
    "OnError",
    "OpenBody",
    "PatchBody",
    "PressArgs",
    "ProxyBody",
    "ReadArgs",
    "SaveArgs",
    "SaveBody",
    "SecretBody",
    "SelectArgs",
    "SelectedCookie",
    "SessionChoice",
    "Step",
    "TypeArgs",
    "TypeSecretArgs",
    "VersionChoice",
    "WaitForArgs",
    "invalid_input",
    "kept",
    "parse_args",
    "parse_steps",
    "unchecked",
]

KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A session key (``sitekeep.policy.check_key``)."""
VERSION_PATTERN = r"^v[0-9]{13}-[0-9a-f]{4}$"
"""A version's id (``sitekeep.versions.new_id``, issue #26)."""


class Kept(Enum):
    """What the journal keeps of an argument (``journal.redact``): a URL as origin and
    path, a text as its length, a name (a ref, a selector, a flag) as it is."""

    URL = "url"
    TEXT = "text"
    NAME = "name"


def kept(field: FieldInfo) -> Kept | None:
    """What the journal keeps of ``field`` (None: only its shape)."""
    return next((m for m in field.metadata if isinstance(m, Kept)), None)


URL = Annotated[str, Kept.URL]
Text = Annotated[str, Kept.TEXT]
Name = Annotated[str, Kept.NAME]
Flag = Annotated[bool, Kept.NAME]
MaybeURL = Annotated[str | None, Kept.URL]
MaybeText = Annotated[str | None, Kept.TEXT]
MaybeName = Annotated[str | None, Kept.NAME]
MaybeFlag = Annotated[bool | None, Kept.NAME]


class Args(BaseModel):
    """The base of every model: strict JSON types, no unknown field, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


A = TypeVar("A", bound=Args)


OnError = Literal["stop", "continue"]

# -- agent operations (SPEC §5): a page route's body, an MCP tool's arguments, a flow step


class NoArgs(Args):
    """``back``, ``forward``, ``snapshot``, ``screenshot``."""


class SaveArgs(Args):
    """``save_site_data``."""

    indexed_db: Flag = Field(
        default=False, description="Also carry every visited origin's IndexedDB databases."
    )
    full: Flag = Field(
        default=False,
        description="Read every origin through the spare tab, ignoring the copies captured "
        "on leave (slower; the reference the fast path must equal).",
    )


class NavigateArgs(Args):
    url: URL = Field(description="An http(s) URL, or about:blank.", max_length=MAX_URL)


class _Target(Args):
    ref: MaybeName = Field(
        default=None, description="An element ref from snapshot: e1, e2…", max_length=MAX_REF
    )
    selector: MaybeName = Field(
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
    text: Text = Field(
        max_length=MAX_TEXT,
        description="What to type; it replaces what the field holds. At most as many "
        "characters as a secret value holds: what types within the call's bound.",
    )
    submit: Flag = Field(default=False, description="Press Enter after typing.")


class TypeSecretArgs(_Target):
    secret: Name = Field(description="The secret's name in the catalogue.", max_length=MAX_NAME)
    field: Name = Field(description="Which of its values: username, password…", max_length=MAX_NAME)
    submit: Flag = Field(default=False, description="Press Enter after typing.")


class PressArgs(Args):
    keys: Name = Field(
        description="Keys: Enter, Tab, Escape, ArrowDown, Control+A…", max_length=MAX_KEYS
    )


class SelectArgs(_Target):
    value: Name = Field(
        description="The option's value or its visible label.", max_length=MAX_VALUE
    )


class ReadArgs(Args):
    selector: MaybeName = Field(
        default=None, description="CSS; the whole page when absent.", max_length=MAX_SELECTOR
    )
    max_chars: Annotated[int, Kept.NAME] = Field(default=20_000, ge=1, le=200_000)


class WaitForArgs(Args):
    text: MaybeText = Field(default=None, max_length=MAX_TEXT)
    selector: MaybeName = Field(default=None, max_length=MAX_SELECTOR)
    timeout: Annotated[float, Kept.NAME] = Field(default=5.0, gt=0, le=120, allow_inf_nan=False)

    @model_validator(mode="after")
    def _one_condition(self) -> WaitForArgs:
        if (self.text is None) == (self.selector is None):
            raise ValueError("give exactly one of text or selector")
        return self


class AssertTextArgs(Args):
    text: Text = Field(max_length=MAX_TEXT)


OPERATIONS: dict[str, type[Args]] = {
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


# -- sessions (SPEC §3, §5, §6) ---------------------------------------------------------


class SessionChoice(Args):
    """Which session, in which browser, at which URL, from which profile, through which
    country's proxy: what ``POST /v1/sessions`` and ``POST /v1/live-sessions`` share."""

    key: str | None = Field(
        default=None,
        pattern=KEY_PATTERN,
        max_length=MAX_KEY,
        description="The session key; a new one is made when absent.",
    )
    browser: Annotated[Literal["chromium", "firefox"] | None, Kept.NAME] = Field(
        default=None, description="chromium (the default) or firefox."
    )
    url: MaybeURL = Field(
        default=None, max_length=MAX_URL, description="Where to land: an http(s) URL."
    )
    profile: MaybeName = Field(
        default=None,
        max_length=MAX_NAME,
        description="A profile's id (list_profiles) to sign in from.",
    )
    country: MaybeName = Field(
        default=None,
        max_length=MAX_NAME,
        description="Two-letter country code of the proxy to use.",
    )


class OpenBody(SessionChoice):
    """``open_session``'s options (SPEC §3 Restore, §5): the one place they are listed."""

    restore_site_data: Flag = Field(
        default=True, description="false: open without saved site data and delete it."
    )
    fresh: Flag = Field(default=False, description="Close the open browser and start a new one.")
    insecure: Flag = Field(
        default=False, description="Accept bad certificates; restores and deletes nothing."
    )
    keep_user_agent: MaybeFlag = Field(
        default=None,
        description="true: run under the User-Agent the site data was saved under (for "
        "sites that bind a sign-in to it); kept for this session.",
    )
    autosave: MaybeFlag = Field(
        default=None,
        description="false: never save by itself (when the browser closes, at each "
        "checkpoint); true (a new session's default) turns it back on; kept for this "
        "session. An insecure browser never saves by itself.",
    )


class NavigateBody(NavigateArgs):
    """``POST …/navigate``: :class:`NavigateArgs` under its OpenAPI name."""


class SaveBody(SaveArgs):
    """``save_site_data`` as a route or tool takes it: :class:`SaveArgs`, and a profile
    to write the saved site data into (SPEC §9)."""

    profile: MaybeName = Field(
        default=None,
        max_length=MAX_NAME,
        description="A profile's id to write the saved site data into.",
    )


class FlowBody(Args):
    """``run_flow`` (SPEC §6): steps ``{op, on_error?, ...args}`` and what a failed step
    that does not say does. The steps are checked by :func:`parse_steps`."""

    steps: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_STEPS)
    on_error: OnError = "stop"


# -- sign-in state (SPEC §18) ------------------------------------------------------------


class CheckProbe(Args):
    """What shows a sign-in state on a check's page: exactly one of a CSS ``selector``
    that matches or a ``text`` the page shows."""

    selector: MaybeName = Field(
        default=None, max_length=MAX_SELECTOR, description="A CSS selector that matches."
    )
    text: MaybeText = Field(
        default=None, max_length=MAX_TEXT, description="Text the page shows (instead)."
    )

    @model_validator(mode="after")
    def _one_probe(self) -> CheckProbe:
        if (self.selector is None) == (self.text is None):
            raise ValueError("give exactly one of selector or text")
        if self.selector is not None and not self.selector.strip():
            raise ValueError("a selector is not empty")
        if self.text is not None and not self.text.strip():
            raise ValueError("a text is not empty")
        return self


class CheckBody(Args):
    """``PUT …/checks/{host}``: a page of the host to load in a background tab, what it
    shows when signed in, and (optionally) when signed out (SPEC §18)."""

    url: URL = Field(max_length=MAX_URL, description="An http(s) URL on the check's host.")
    signed_in: CheckProbe = Field(description="Found: the site is signed in.")
    signed_out: CheckProbe | None = Field(
        default=None,
        description="Found: the site is signed out. Without it, signed_in missing means "
        "signed out.",
    )


AutosaveReason = Literal["close", "reaper", "stop", "shutdown", "checkpoint"]


class AutosaveArgs(Args):
    """An automatic save (SPEC §18), as its journal begin keeps it: why it ran."""

    reason: Annotated[AutosaveReason, Kept.NAME]


# -- profiles (SPEC §9) ------------------------------------------------------------------


class CreateBody(Args):
    """A new profile: its name, who sees it, the country it signs in from."""

    name: str = Field(max_length=MAX_PROFILE_NAME)
    visibility: str = Field(default="private", max_length=MAX_NAME)
    country: str | None = Field(default=None, max_length=MAX_NAME)


class PatchBody(Args):
    """A profile's changes: only the fields given change."""

    name: str | None = Field(default=None, max_length=MAX_PROFILE_NAME)
    visibility: str | None = Field(default=None, max_length=MAX_NAME)
    country: str | None = Field(default=None, max_length=MAX_NAME)


class SelectedCookie(Args):
    """A cookie chosen by ``{domain, name}``."""

    domain: str = Field(max_length=MAX_SITE)
    name: str = Field(max_length=MAX_COOKIE)


class CaptureBody(Args):
    """``capture_profile``: the session captured, and the cookies kept (all unexpired
    ones when omitted)."""

    session: str = Field(pattern=KEY_PATTERN, max_length=MAX_KEY)
    cookies: list[SelectedCookie] | None = Field(default=None, max_length=MAX_COOKIES)
    """The cookies to keep, by ``{domain, name}``; omitted: every unexpired cookie."""


# -- versions of saved site data (issue #26) ------------------------------------------------


class VersionChoice(Args):
    """One version of a session's or profile's saved site data: what viewing one and
    ``restore_site_data_version`` take (the service checks its form, naming ``version``)."""

    version: Name = Field(
        max_length=MAX_NAME,
        description="A version's id, from the versions list (v, 13 digits, -, 4 hex digits).",
    )


# -- the catalogue (SPEC §7, §14) ------------------------------------------------------------


class SecretBody(Args):
    """``PUT /v1/secrets/{name}``; the rules are checked by the service."""

    description: str = Field(default="", max_length=MAX_DESCRIPTION)
    hosts: list[Annotated[str, Field(max_length=MAX_SITE)]] = Field(max_length=MAX_HOSTS)
    # Each value's type is checked by the service (secrets.check_values), not here: a
    # validation error names its field by the key, and a key that is no key name may be a
    # value pasted in the wrong place — the service's message names only ``values``.
    values: dict[str, object] = Field(
        json_schema_extra={
            "additionalProperties": {"type": "string", "maxLength": MAX_TEXT},
            "maxProperties": MAX_SECRET_KEYS,
        }
    )


class ProxyBody(Args):
    """``PUT /v1/proxies/{name}``; the rules are checked by the service."""

    country: str = Field(max_length=MAX_NAME)
    url: str = Field(max_length=MAX_URL)
    auth_secret: str | None = Field(default=None, max_length=MAX_NAME)


JOURNALED: dict[str, type[Args]] = {
    **OPERATIONS,
    "save_site_data": SaveBody,
    "open_session": OpenBody,
    "restore_site_data_version": VersionChoice,
    "autosave": AutosaveArgs,
}
"""The operations whose journaled arguments are a model's fields (``journal.redact``)."""


class Step(BaseModel):
    """One flow step: an operation, its arguments, and what to do if it fails."""

    model_config = ConfigDict(frozen=True)

    op: str
    args: Args
    on_error: OnError | None = None


def unchecked(model: type[A], **values: Any) -> A:
    """``model`` holding ``values`` as a facade was given them (a form, a CLI option, an
    MCP argument the SDK typed), not validated here: the service checks each value itself
    — it must, for every facade — so such a caller gets the service's error for a bad
    one, naming its field, as it always did."""
    return cast(A, model.model_construct(**values))


def invalid_input(exc: ValidationError, prefix: str = "") -> InvalidInput:
    """The first error of ``exc`` as ``InvalidInput`` naming its field (under ``prefix``),
    with pydantic's message only — never the input it was given."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or None)
    message = first.get("msg", "invalid").removeprefix("Value error, ")
    return InvalidInput(f"{field}: {message}" if field else message, field=field)


def parse_args(op: str, args: Mapping[str, Any], *, prefix: str = "") -> Args:
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
