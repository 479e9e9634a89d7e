"""Domain values: frozen, slotted dataclasses (SPEC §1).

Times are float seconds since the Unix epoch unless a field says otherwise; a cookie's
``expiry`` is an integer, as BiDi ``network.Cookie`` has it. Values here are plain data;
the rules that act on them live in ``cookies``, ``history`` and ``sitedata``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter

__all__ = [
    "BrowserKind",
    "BrowserRef",
    "Cookie",
    "HistoryEntry",
    "OriginStorage",
    "Principal",
    "RefMap",
    "Role",
    "SameSite",
    "SessionRecord",
    "SessionStorage",
    "SignIn",
    "SignInCheck",
    "SignInProbe",
    "SignInState",
    "SiteData",
    "Skipped",
    "TabStorage",
    "dump_site_data",
    "escape_surrogates",
    "json_bytes",
    "load_site_data",
    "well_formed",
]

SameSite = Literal["strict", "lax", "none", "default"]
SignInState = Literal["signed_in", "signed_out", "unknown"]
BrowserKind = Literal["chromium", "firefox"]
Role = Literal["admin", "member"]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who makes a call: the tenant (workspace), the subject and its role (SPEC §1).

    ``token`` is the id of the bearer token the call came with
    (:func:`sitekeep.auth.token_id`: 16 hex digits, never the token), ``""`` when none (the
    CLI, a stored record). It takes no part in equality: two tokens of one subject are
    one principal; what outlives a call (a live socket, an MCP session) binds to it.
    """

    tenant: str
    subject: str
    role: Role = "member"
    token: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Cookie:
    """One cookie, with every attribute the browser reports (RFC 6265bis; BiDi network.Cookie).

    ``domain`` keeps the browser's spelling: a leading dot marks a domain cookie, none a
    host-only one. ``expiry`` is whole seconds since the epoch, ``None`` for a session
    cookie. ``partition_key`` is the CHIPS partition (Chromium's ``goog:partitionKey``).
    ``extras`` keeps the browser's other vendor fields (``goog:priority``…) untouched.
    """

    name: str
    value: str
    domain: str
    path: str = "/"
    http_only: bool = False
    secure: bool = False
    same_site: SameSite = "default"
    expiry: int | None = None
    partition_key: Mapping[str, Any] | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OriginStorage:
    """The localStorage of one origin: key to value, both strings (HTML Web Storage), and
    its IndexedDB databases when a save carried them (``browser.indexeddb`` gives their
    JSON shape; sitekeep never looks inside the records)."""

    local: Mapping[str, str]
    indexed_db: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class SessionStorage:
    """The sessionStorage of the tab the browser was on, for that tab's origin."""

    origin: str
    items: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class TabStorage:
    """Another top-level tab (a popup, a ``target=_blank`` tab): where it was and its
    sessionStorage, which belongs to that tab alone (HTML §Session storage)."""

    origin: str
    url: str
    items: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class SignIn:
    """Whether one site is signed in, the evidence, and when it was known (SPEC §18;
    ``sitekeep.signin`` judges it).

    ``evidence`` holds facts, never a value: its ``source`` (``heuristic`` or ``check``),
    cookie *names*, a page's path, an HTTP status, which marker a check found.
    """

    state: SignInState
    evidence: Mapping[str, Any]
    at: float

    def as_json(self) -> dict[str, Any]:
        """``{state, evidence, at}``."""
        return {"state": self.state, "evidence": dict(self.evidence), "at": self.at}


@dataclass(frozen=True, slots=True)
class SignInProbe:
    """What shows a sign-in state on a check's page: a CSS ``selector`` that matches, or
    a ``text`` the page shows — exactly one of them."""

    selector: str | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class SignInCheck:
    """A per-site check (SPEC §18): load ``url`` in a background tab; ``signed_in``
    found means signed in, ``signed_out`` found (or, without one, ``signed_in`` missing)
    means signed out."""

    url: str
    signed_in: SignInProbe
    signed_out: SignInProbe | None = None


@dataclass(frozen=True, slots=True)
class SiteData:
    """The snapshot: cookies + localStorage per origin + the main tab's sessionStorage
    (SPEC §1), and each other tab's sessionStorage in ``tabs`` (absent from snapshots
    saved before tabs were kept: they read as none)."""

    cookies: tuple[Cookie, ...] = ()
    origins: Mapping[str, OriginStorage] = field(default_factory=dict)
    session: SessionStorage | None = None
    saved_at: float = 0.0
    tabs: tuple[TabStorage, ...] = ()
    user_agent: str | None = None
    """``navigator.userAgent`` of the main tab when saved (None in older snapshots)."""
    mask: tuple[str, ...] = field(default=(), repr=False)
    """Values typed from secrets (in the session this data was saved or captured from, or
    in one whose data that session was opened from) a stretch of which this data holds:
    every view and export of the data, and every session opened from it, masks them
    (``masking``; issue #24). Sealed with the data, never exported nor shown."""
    sign_in: Mapping[str, SignIn] = field(default_factory=dict)
    """Each host's sign-in state when this data was saved (SPEC §18): what a restore of
    it brings back, and what an automatic save's sign-out guard compares with (empty in
    snapshots saved before it was kept)."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """An origin or host a save or restore did not carry, and why (never a value).

    ``key`` and ``bytes`` name one storage value the size cap left out (its key and
    size in bytes of stored JSON), None for a whole origin or host.
    """

    site: str
    reason: str
    key: str | None = None
    bytes: int | None = None

    def as_json(self) -> dict[str, Any]:
        """``{site, reason}``, with ``key`` and ``bytes`` when set."""
        out: dict[str, Any] = {"site": self.site, "reason": self.reason}
        if self.key is not None:
            out["key"] = self.key
        if self.bytes is not None:
            out["bytes"] = self.bytes
        return out


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """Where the session has been: one entry per origin (SPEC §4)."""

    origin: str
    url: str
    at: float


@dataclass(frozen=True, slots=True)
class BrowserRef:
    """What a stateless reattach needs to reach a live browser (SPEC §2).

    ``endpoint`` is the WebDriver server's URL, ``ws_url`` its BiDi socket for this session.
    """

    kind: BrowserKind
    endpoint: str
    session_id: str
    ws_url: str
    started_at: float
    insecure: bool = False
    context: str = ""
    """The main tab's browsing context id ("the page the browser is on")."""
    debugger: str = ""
    """``host:port`` of the browser's own DevTools endpoint when the driver reports one
    (chromedriver's ``goog:chromeOptions.debuggerAddress``), refused to every browser
    like the drivers (``address.Refused``); empty when not known."""

    @property
    def generation(self) -> str:
        """The browser generation: session id + start time (SPEC §1)."""
        return f"{self.session_id}:{self.started_at:.6f}"


@dataclass(frozen=True, slots=True)
class RefMap:
    """The last snapshot's refs: ``e{i+1}`` is ``shared_ids[i]``, a BiDi ``sharedId``
    valid while its document lives, in the browser ``generation`` that made it."""

    snapshot: int
    generation: str
    shared_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session, keyed by (tenant, key). The current URL is ``history[0].url`` (SPEC §1).

    ``reopened`` holds a silent reopen's restore report until the first result hands it out.
    """

    tenant: str
    key: str
    owner: str
    kind: BrowserKind
    created_at: float
    last_used_at: float
    browser: BrowserRef | None = None
    history: tuple[HistoryEntry, ...] = ()
    reopened: Mapping[str, Any] | None = None
    insecure: bool = False
    refs: RefMap | None = None
    keep_user_agent: bool = False
    """Every browser of this session runs under the User-Agent its snapshot was saved
    under (``open_session(keep_user_agent=true)``, SPEC §3 Cross-browser)."""
    typed_secrets: tuple[tuple[str, str], ...] = ()
    """(secret, field) typed in this session's browser: a URL holding one of their values
    is withheld from results and history (SPEC §7). Names only, never values."""
    profile: str | None = None
    """The profile the session was opened from (SPEC §9); later saves do not write back."""
    country: str | None = None
    """The country whose proxy the session's browsers run through (SPEC §14)."""
    proxy: str | None = None
    """The name of that proxy in the tenant's pool."""
    mask: str | None = field(default=None, repr=False)
    """The values every result, view and export of this session masks — those of the
    secrets typed here, as they were when typed, and the ``SiteData.mask`` of every
    snapshot or profile restored into its browsers — sealed for ``(tenant, "mask", key)``
    and base64-encoded (``Records.mask_values``); None when there are none."""
    autosave: bool = True
    """The session saves by itself when its browser closes and at each checkpoint
    (``open_session(autosave=…)``, SPEC §18); an insecure browser never does."""
    sign_in: Mapping[str, SignIn] = field(default_factory=dict)
    """Each site's sign-in state as last known (SPEC §18): of the live browser while one
    is live (judged by each save and each check run), else of what a reopen restores."""
    checks: Mapping[str, SignInCheck] = field(default_factory=dict)
    """The per-site checks, by host (``PUT /v1/sessions/{key}/checks/{host}``)."""

    @property
    def url(self) -> str | None:
        return self.history[0].url if self.history else None

    @property
    def secret_typed(self) -> bool:
        """Whether a secret's value may be in this session's browser: typed here, or
        carried in by site data opened from a session where it was (no clipboard key is
        pressed then, SPEC §7)."""
        return bool(self.typed_secrets) or self.mask is not None


RECORD_JSON: TypeAdapter[SessionRecord] = TypeAdapter(SessionRecord)
SITE_DATA_JSON: TypeAdapter[SiteData] = TypeAdapter(SiteData)

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone UTF-16 surrogate: a JS string may hold one, UTF-8 cannot encode it."""


def json_bytes(value: Any) -> bytes:
    """Compact JSON of ``value`` as UTF-8, lossless for every JS string.

    Web Storage keys and values, titles and cookie fields are JS strings: sequences of
    UTF-16 code units that may hold a lone surrogate (``"x" + String.fromCharCode(0xDA7E)``),
    which UTF-8 cannot encode. Such a code unit is written as its JSON escape ``\\udXXX``
    (RFC 8259 §7 allows any code unit escaped); every other character is written as UTF-8.
    ``json.loads`` reads the escape back as the same code unit, so a round trip is exact
    in UTF-16 terms, the terms the browser stores. Mapping keys go through the same rule
    (pydantic's JSON mode would replace them with U+FFFD).
    """
    return escape_surrogates(json.dumps(value, ensure_ascii=False, separators=(",", ":"))).encode()


def escape_surrogates(text: str) -> str:
    """JSON ``text`` with each lone surrogate written as its escape ``\\udXXX`` (RFC 8259
    §7), so it encodes as UTF-8 and reads back as the same code unit (:func:`json_bytes`)."""
    if text.isascii():
        return text
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dump_site_data(snapshot: SiteData) -> bytes:
    """The snapshot as stored (before sealing): :func:`json_bytes` of its fields."""
    return json_bytes(SITE_DATA_JSON.dump_python(snapshot))


def load_site_data(raw: bytes | str) -> SiteData:
    """The snapshot from :func:`dump_site_data` bytes (or any earlier pydantic JSON of it).

    Raises:
        ValueError: not JSON; pydantic.ValidationError: not a snapshot.
    """
    return SITE_DATA_JSON.validate_python(json.loads(raw))


def well_formed(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with each lone UTF-16 surrogate in its strings (a page's title, a storage
    key, a value in the owner's view) replaced by U+FFFD, so every facade can encode it as
    UTF-8. Results show state; the snapshot keeps it exactly (:func:`json_bytes`)."""
    cleaned: dict[str, Any] = _scrub(result)
    return cleaned


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value if value.isascii() else LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value
