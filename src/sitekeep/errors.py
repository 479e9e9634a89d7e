"""The exception tree of sitekeep.

Every error a caller can see derives from :class:`SitekeepError`. Subclasses say what the
caller should do, and carry structured fields (never text to parse). The HTTP facade maps
them to status codes in one table (``sitekeep.api.errors``)::

    SitekeepError                    ``field``: the argument to blame, when one is
    ├── InvalidInput            400  fix the field named in ``field``
    │   ├── SnapshotTooLarge    400  the cookies alone pass the size cap (SPEC §3)
    │   └── BodyTooLarge        413  the request body passes its byte limit
    ├── Unauthorized            401  no or unknown bearer token
    ├── Forbidden               403  the token's role may not do this
    │   ├── SecretNotAllowed    403  the secret may not be typed on this host
    │   ├── ClipboardNotAllowed 403  a copy/cut/paste input after a secret was typed (``field``)
    │   └── OwnAddress          403  the URL is the sitekeep server itself (SPEC §12)
    ├── NotFound                404  no such session/host/element… in this tenant (``field``)
    ├── MethodNotAllowed        405  the route takes other methods (``allow``)
    ├── Conflict                409  the resource is in a state that forbids the call
    │   ├── NoHistoryEntry      409  back()/forward() with nowhere to go
    │   ├── StaleRef            409  a ref from an old snapshot: snapshot again
    │   ├── SessionBusy         409  another call held the session too long: try again
    │   ├── AssertionFailed     409  a flow's assert_text did not find its text
    │   └── JournalConflict     409  another writer moved the session's journal on
    ├── CapacityExceeded        429  a cap was reached (``scope``)
    ├── NavigationFailed        502  the page could not be loaded (``reason``: net::ERR_…;
    │                                ``field``: the argument that held the URL)
    ├── StoreUnavailable        503  a store could not be reached; nothing was written
    │   └── JournalUnavailable  503  a journal record could not be made durable (SPEC §8)
    │       └── RecordTooLarge  503  a record over SITEKEEP_JOURNAL_MAX_RECORD; never written
    ├── BrowserUnavailable      503  the browser or its BiDi socket could not be reached
    │   └── BidiError                a BiDi command failed (``code`` is the spec's error code)
    │       └── BidiTimeout          no answer within the command timeout
    └── Unreachable             503  (the Python client) the sitekeep server did not answer

The Python client (``sitekeep.client``) raises the same classes, rebuilt from the HTTP
error body by :func:`error_from_json`.

Messages never contain a cookie, storage or secret value; a name or selector they quote
is cut to :data:`QUOTED_MAX` characters (:func:`quoted`).
"""

from __future__ import annotations

__all__ = [
    "AssertionFailed",
    "BidiError",
    "BidiTimeout",
    "BodyTooLarge",
    "BrowserUnavailable",
    "CapacityExceeded",
    "ClipboardNotAllowed",
    "Conflict",
    "Forbidden",
    "InvalidInput",
    "JournalConflict",
    "JournalUnavailable",
    "MethodNotAllowed",
    "NavigationFailed",
    "NoHistoryEntry",
    "NotFound",
    "OwnAddress",
    "RecordTooLarge",
    "SecretNotAllowed",
    "SessionBusy",
    "SitekeepError",
    "SnapshotTooLarge",
    "StaleRef",
    "StoreUnavailable",
    "Unauthorized",
    "Unreachable",
    "error_from_json",
    "error_json",
    "quoted",
]

QUOTED_MAX = 80
"""The most characters of a caller's name, key or selector an error message quotes."""


def quoted(text: str, limit: int = QUOTED_MAX) -> str:
    """``text`` quoted for an error message, cut to ``limit`` characters (``'…'`` marks a
    cut): messages stay bounded whatever the caller sent."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "…"


class SitekeepError(Exception):
    """Root of every sitekeep error.

    Attributes:
        message: a sentence a person can act on; never holds a value.
        field: the name of the call's argument to blame (``url``, ``selector``,
            ``steps[2].url``…), when one is; None otherwise.
    """

    type_name = "error"
    field: str | None = None

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidInput(SitekeepError):
    """Bad input; nothing was changed.

    Attributes:
        field: the name of the offending field (dotted path), if one is to blame.
    """

    type_name = "invalid_input"


class SnapshotTooLarge(InvalidInput):
    """The cookies alone pass the snapshot size cap; the stored snapshot is unchanged (SPEC §3).

    Attributes:
        size: bytes of JSON the cookies take.
        cap: the cap in bytes.
    """

    type_name = "snapshot_too_large"

    def __init__(self, *, size: int, cap: int) -> None:
        super().__init__(
            f"the cookies alone take {size} bytes, over the {cap}-byte snapshot cap; "
            "the last saved snapshot is unchanged",
            field="cookies",
        )
        self.size = size
        self.cap = cap


class BodyTooLarge(InvalidInput):
    """The request body is longer than its limit (``SITEKEEP_MAX_BODY``); it was not read
    to the end and nothing was done.

    Attributes:
        cap: the limit in bytes.
    """

    type_name = "body_too_large"

    def __init__(self, *, cap: int) -> None:
        super().__init__(f"the request body is over its {cap}-byte limit", field="body")
        self.cap = cap


class Unauthorized(SitekeepError):
    """No bearer token, or one that is not known."""

    type_name = "unauthorized"


class Forbidden(SitekeepError):
    """The token is known but its role may not make this call."""

    type_name = "forbidden"


class NotFound(SitekeepError):
    """No such thing in the caller's tenant (existence in other tenants is never revealed).

    Attributes:
        kind: what was looked for (``session``, ``site``…).
        name: the key or name that was looked for.
        field: the argument that named it (``key``, ``secret``, ``selector``…), when the
            caller gave it.
    """

    type_name = "not_found"

    def __init__(
        self, kind: str, name: str, *, field: str | None = None, message: str | None = None
    ) -> None:
        super().__init__(message or f"no {kind} named {quoted(name)}", field=field)
        self.kind = kind
        self.name = name


class Conflict(SitekeepError):
    """The call is not possible in the resource's current state."""

    type_name = "conflict"


class NoHistoryEntry(Conflict):
    """``back()`` or ``forward()`` with no page in that direction.

    Attributes:
        delta: the step asked for (-1 back, 1 forward).
    """

    type_name = "no_history_entry"

    def __init__(self, delta: int) -> None:
        direction = "back" if delta < 0 else "forward"
        super().__init__(f"there is no page to go {direction} to")
        self.delta = delta


class StaleRef(Conflict):
    """A ref that no longer names an element: the page or the browser changed since the
    snapshot that made it. The caller should call ``snapshot`` again. With ``selector``
    instead: the element it matched went away while it was acted on; try again.

    Attributes:
        ref: the stale ref (None for a selector). field: ``ref`` or ``selector``.
    """

    type_name = "stale_ref"

    def __init__(self, ref: str | None, why: str, *, selector: str | None = None) -> None:
        if selector is not None:
            message = (
                f"the element matching selector {quoted(selector)} went away ({why}): try again"
            )
            super().__init__(message, field="selector")
        else:
            message = (
                f"ref {quoted(ref or '')} is stale ({why}): call snapshot again for fresh refs"
            )
            super().__init__(message, field="ref")
        self.ref = ref


class SessionBusy(Conflict):
    """Another call (in this or another process or replica) held the session for longer
    than this one could wait; nothing was done.

    Attributes:
        waited: seconds this call waited.
    """

    type_name = "session_busy"

    def __init__(self, waited: float) -> None:
        super().__init__(f"the session is busy with another call (waited {waited:g} s): try again")
        self.waited = waited


class AssertionFailed(Conflict):
    """A flow's ``assert_text`` did not find its text on the page."""

    type_name = "assertion_failed"


class SecretNotAllowed(Forbidden):
    """A secret may not be typed on the page's host (SPEC §7); nothing was typed.

    Attributes:
        secret: the secret's name. host: the page's host (cut to 253 characters, the
            longest DNS name; ``…`` marks a cut).
        field: the argument that named the secret (``secret`` for ``type_secret``).
    """

    type_name = "secret_not_allowed"

    def __init__(
        self,
        secret: str,
        host: str,
        *,
        message: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(
            message
            or f"secret {quoted(secret)} may not be typed on {quoted(host)}; nothing was typed",
            field=field,
        )
        self.secret = secret
        # a frame's src hostname is the page's to choose: no DNS name is longer than 253
        self.host = host if len(host) <= 253 else host[:253] + "…"


class ClipboardNotAllowed(Forbidden):
    """An input that could move a typed value through a clipboard or the like, in a
    session where a secret was typed (SPEC §7): a copy, cut or paste key (``Control``/
    ``Meta`` + ``C``, ``X``, ``V``, ``Insert``; ``Shift`` + ``Delete``, ``Insert``), the
    context menu (``Shift+F10``, the secondary button), the middle button (it pastes the
    selection) or a drag — by any path: ``press``, ``type``, a flow, MCP, the live socket
    (``sitekeep.browser.inputs``). Nothing of it reached the browser.

    Attributes:
        field: the argument that held it (``keys``, ``text``, ``key``, ``button``…).
    """

    type_name = "clipboard_not_allowed"

    def __init__(
        self, chord: str, *, field: str = "keys", does: str = "is a clipboard key"
    ) -> None:
        super().__init__(
            f"{chord} {does}: refused in a session where a secret was typed (it could carry "
            "a typed value past the secret's hosts); nothing of it was sent",
            field=field,
        )


class OwnAddress(Forbidden):
    """A URL (or a request the page made) that reaches the sitekeep server itself, in any
    spelling of its address (SPEC §12): agents never drive their own admin.

    Attributes:
        field: the argument that named it (``url``), None when no argument did.
    """

    type_name = "own_address"

    def __init__(self, *, field: str | None = "url") -> None:
        super().__init__(
            "the URL reaches the sitekeep server itself, which is off limits to agents",
            field=field,
        )


class MethodNotAllowed(SitekeepError):
    """The route exists but does not take this HTTP method (RFC 9110 §15.5.6).

    Attributes:
        allow: every method the route takes, for the ``Allow`` header.
    """

    type_name = "method_not_allowed"

    def __init__(self, method: str, path: str, allow: tuple[str, ...]) -> None:
        super().__init__(f"{path} does not take {method}; it takes {', '.join(allow)}")
        self.allow = allow


class NavigationFailed(SitekeepError):
    """The browser could not load the page (DNS, connection, TLS…).

    Attributes:
        reason: the browser's error name, e.g. ``net::ERR_NAME_NOT_RESOLVED``.
        field: the argument that held the URL (``url``), None when no argument did (a
            reopen landing on the session's last page).
    """

    type_name = "navigation_failed"

    def __init__(self, reason: str, *, field: str | None = None) -> None:
        super().__init__(f"the page could not be loaded: {reason}", field=field)
        self.reason = reason


class CapacityExceeded(SitekeepError):
    """A cap was reached before anything started.

    Attributes:
        scope: ``tenant`` or ``global``.
        cap: the tenant's cap that was reached (``scope`` tenant); None for the global
            cap, whose number — like how many browsers other tenants hold — is the
            operator's, never told to a tenant.
    """

    type_name = "capacity_exceeded"

    def __init__(self, message: str, *, scope: str, cap: int | None = None) -> None:
        super().__init__(message)
        self.scope = scope
        self.cap = cap


class StoreUnavailable(SitekeepError):
    """A store (SQLite, Redis, PostgreSQL) could not be reached; nothing was half-written."""

    type_name = "store_unavailable"


class JournalUnavailable(StoreUnavailable):
    """A journal record could not be confirmed durable (SPEC §8): the append failed
    (ENOSPC, EIO, the backend unreachable) and was rolled back where it could be. A call
    whose begin this is fails before the browser is touched.

    Attributes:
        errno: the operating system's error number, when the fault came from one.
    """

    type_name = "journal_unavailable"

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


class RecordTooLarge(JournalUnavailable):
    """A journal record larger than ``SITEKEEP_JOURNAL_MAX_RECORD``; it is never written.

    Attributes:
        size: bytes of the record's line. cap: the cap in bytes.
    """

    type_name = "record_too_large"

    def __init__(self, *, size: int, cap: int) -> None:
        super().__init__(
            f"a journal record of {size} bytes is over the {cap}-byte cap "
            "(SITEKEEP_JOURNAL_MAX_RECORD); nothing was written"
        )
        self.size = size
        self.cap = cap


class JournalConflict(Conflict):
    """The session's journal moved on under the writer: its last record is not the one
    the new record names as parent (another process appended). Replay, then retry.

    Attributes:
        head: the id of the journal's last record, or None when it is empty.
    """

    type_name = "journal_conflict"

    def __init__(self, *, expected: str | None, head: str | None) -> None:
        super().__init__(
            f"the journal's last record is {head or 'none'}, not {expected or 'none'}: "
            "another writer appended; replay and retry"
        )
        self.head = head


class BrowserUnavailable(SitekeepError):
    """The browser, its WebDriver endpoint or its BiDi socket could not be reached."""

    type_name = "browser_unavailable"


class BidiError(BrowserUnavailable):
    """A WebDriver BiDi command answered with an error (W3C WebDriver BiDi §Errors).

    Attributes:
        code: the spec's error code, e.g. ``no such frame``, ``invalid argument``.
        command: the BiDi method, e.g. ``storage.setCookie``.
        detail: the browser's message. Commands sitekeep sends never carry a value in a
            position a browser echoes back, but callers still must not log it at INFO.
    """

    type_name = "bidi_error"

    def __init__(self, code: str, command: str, detail: str = "") -> None:
        super().__init__(f"{command} failed: {code}")
        self.code = code
        self.command = command
        self.detail = detail


class BidiTimeout(BidiError):
    """A BiDi command got no answer within its timeout (SPEC §2: 5 s by default).

    Attributes:
        timeout: the timeout that passed, in seconds.
    """

    type_name = "bidi_timeout"

    def __init__(self, command: str, timeout: float) -> None:
        super().__init__("timeout", command, f"no answer within {timeout:g} s")
        self.message = f"{command} got no answer within {timeout:g} s"
        self.timeout = timeout


class Unreachable(SitekeepError):
    """The Python client could not reach the sitekeep server (refused, timed out, reset);
    whether a call that was sent took effect is unknown."""

    type_name = "unreachable"


_STRUCTURED = ("field", "code", "reason", "scope", "size", "cap", "ref", "secret", "host", "allow")


def error_json(exc: SitekeepError) -> dict[str, object]:
    """The error's structured fields, ``{type, message, field?, ...}`` — the one shape
    HTTP bodies, MCP error results and flow reports all use (SPEC §5)."""
    body: dict[str, object] = {"type": exc.type_name, "message": exc.message}
    for name in _STRUCTURED:
        value = getattr(exc, name, None)
        if value is not None:
            body[name] = list(value) if isinstance(value, tuple) else value
    return body


def _classes(root: type[SitekeepError]) -> dict[str, type[SitekeepError]]:
    found = {root.type_name: root}
    for sub in root.__subclasses__():
        found.update(_classes(sub))
    return found


def error_from_json(body: object) -> SitekeepError:
    """The exception an :func:`error_json` body stands for, rebuilt on the caller's side
    (the Python client): the class named by ``type`` (an unknown type gives the root),
    with ``message`` and the structured fields ``error_json`` writes set as attributes
    (any other key of the body is ignored)."""
    fields = body if isinstance(body, dict) else {}
    cls = _classes(SitekeepError).get(str(fields.get("type")), SitekeepError)
    exc = cls.__new__(cls)
    SitekeepError.__init__(exc, str(fields.get("message", "")))
    for name in _STRUCTURED:  # only these: a body is not to name __class__ or a method
        if name in fields:
            setattr(exc, name, fields[name])
    return exc
