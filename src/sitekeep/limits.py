"""How big each input may be, refused up front (issue #8 item 8; SPEC §17).

Every bound here is checked before anything is started or sent to a browser, and each is
written into the OpenAPI schema (``maxLength``, ``maxItems``, ``maxProperties``), so a
client sees it before calling. Without them a 1 MB ``type`` text grew the server from
127 MB to 759 MB RSS and broke the BiDi socket, a 10 MB selector waited for a 503 timeout
and a 10 MB URL for a 502.

Sizes are in characters (Unicode code points, as pydantic counts ``max_length``), except
``MAX_BODY`` which is bytes on the wire.
"""

from __future__ import annotations

__all__ = [
    "MAX_BODY",
    "MAX_COOKIE",
    "MAX_COOKIES",
    "MAX_DEPTH",
    "MAX_DESCRIPTION",
    "MAX_DIGITS",
    "MAX_HOSTS",
    "MAX_KEY",
    "MAX_KEYS",
    "MAX_NAME",
    "MAX_PROFILE_NAME",
    "MAX_REF",
    "MAX_SECRET_KEYS",
    "MAX_SELECTOR",
    "MAX_SITE",
    "MAX_STEPS",
    "MAX_TEXT",
    "MAX_URL",
    "MAX_VALUE",
]

MAX_BODY = 1024 * 1024
"""Bytes of a request body (413 past it); ``SITEKEEP_MAX_BODY`` changes it."""

MAX_DEPTH = 32
"""Nesting of a JSON body (objects and arrays); the deepest sitekeep reads is a flow's
``steps[i].args`` (3)."""

MAX_DIGITS = 20
"""Digits of an integer in client JSON (a body, an imported file, a socket message): any
64-bit number fits. Past it — or past a double's range — the field is refused
(``sitekeep.client_json``): Python will not convert past 4,300 digits, no float holds one."""

MAX_URL = 8192
"""A URL an agent navigates to. Chromium's own bound is 2 MiB, but no page a person
opens needs more than a few KiB; 8 KiB is what common servers accept in a request line."""

MAX_SELECTOR = 4096
"""A CSS selector."""

MAX_REF = 32
"""A snapshot ref (``e1``, ``e2``…)."""

MAX_TEXT = 8192
"""Characters of ``type`` text, ``assert_text``/``wait_for`` text. The value is owned by
the typing engine (issue #8 item 4): no more than types within the command timeout."""

MAX_VALUE = 1024
"""A ``select`` option value or label."""

MAX_KEYS = 256
"""A ``press`` key sequence (``Control+A Enter``…)."""

MAX_NAME = 64
"""A secret's name or one of its key names, a profile or country name, a browser kind."""

MAX_PROFILE_NAME = 128
"""A profile's name (spaces trimmed); no control characters."""

MAX_KEY = 64
"""A session key (``sitekeep.policy.check_key``)."""

MAX_SITE = 300
"""A host or origin in a path (``/site-data/{site}``): 253 for the name, scheme and port."""

MAX_DESCRIPTION = 500
"""A secret's description."""

MAX_HOSTS = 32
"""Host patterns of one secret."""

MAX_SECRET_KEYS = 32
"""Keys (username, password…) of one secret."""

MAX_COOKIE = 4096
"""Bytes of a cookie's name and value together (RFC 6265bis §5.7 step 4): a cookie's name
in a capture's selection is bounded by it."""

MAX_COOKIES = 10_000
"""Cookies named in one capture's selection: more than a browser holds (Chromium keeps
3,300)."""

MAX_STEPS = 100
"""Steps of one flow."""
