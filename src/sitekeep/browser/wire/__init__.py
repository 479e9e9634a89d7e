"""The WebDriver BiDi wire, in one place (W3C WebDriver BiDi §5–§7).

Every command sitekeep sends is built here, one function per command named as the spec
names it in snake_case (``storage.getCookies`` → :func:`storage_get_cookies`), returning
a typed :class:`Command` that :func:`call` sends; every event sitekeep reads is named
here, an :class:`Event` typed with its params (``BROWSING_CONTEXT_LOAD``:
``Event[NavigationInfo]``). camelCase stays on this side: callers pass snake_case
arguments. One module per BiDi module (``session``, ``browser``, ``browsingContext``,
``script``, ``storage``, ``network``, ``input``, ``emulation``); the names of commands
sitekeep never sends but refuses or watches (a handover's rules, ``browser.handover_bidi``)
are here too, so no command name is spelled outside this package (``tests/unit/test_wire.py``
holds every other module to that).

Use as ``from sitekeep.browser import wire`` and
``await wire.call(conn, wire.storage_get_cookies())``.
"""

from __future__ import annotations

# Each module's names, as asyncio's package gathers its modules' (their __all__ is the list).
from sitekeep.browser.wire import (
    base,
    browser,
    browsing_context,
    emulation,
    input,
    network,
    script,
    session,
    storage,
)
from sitekeep.browser.wire.base import *  # noqa: F403
from sitekeep.browser.wire.browser import *  # noqa: F403
from sitekeep.browser.wire.browsing_context import *  # noqa: F403
from sitekeep.browser.wire.emulation import *  # noqa: F403
from sitekeep.browser.wire.input import *  # noqa: F403
from sitekeep.browser.wire.network import *  # noqa: F403
from sitekeep.browser.wire.script import *  # noqa: F403
from sitekeep.browser.wire.session import *  # noqa: F403
from sitekeep.browser.wire.storage import *  # noqa: F403

__all__ = [
    *base.__all__,
    *session.__all__,
    *browser.__all__,
    *browsing_context.__all__,
    *script.__all__,
    *storage.__all__,
    *network.__all__,
    *input.__all__,
    *emulation.__all__,
]
