"""Log set-up for ``sitekeep serve`` and ``sitekeep mcp`` (``SITEKEEP_LOG_FORMAT``).

``text`` is ``LEVEL logger: message``; ``json`` is one object a line for log shippers:
``{"time", "level", "logger", "message", "exception"?}``. sitekeep's own messages never
hold a cookie, storage or secret value (SPEC §12); a foreign exception's message might
(a library echoing what it was given), so the JSON form carries an exception's class and
frames — file, line, function — never its message or the source lines.
"""

from __future__ import annotations

import json
import logging
import re
import traceback
from datetime import UTC, datetime
from typing import IO, Literal

__all__ = ["GrantMask", "JsonFormatter", "configure_logging"]

TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"
_GRANT = re.compile(r"(/v1/webdriver/wd_)[A-Za-z0-9_%-]+")


class GrantMask(logging.Filter):
    """Masks a WebDriver handover's grant in a path a record carries (uvicorn's access
    and WebSocket lines: ``/v1/webdriver/wd_…/session/…``, SPEC §21) — it is a credential
    in a URL, since WebDriver clients take an endpoint as a URL alone."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "/v1/webdriver/" in record.msg:
            record.msg = _GRANT.sub(r"\1…", record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                _GRANT.sub(r"\1…", a) if isinstance(a, str) and "/v1/webdriver/" in a else a
                for a in record.args
            )
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line (see the module docstring for its keys)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            frames = traceback.extract_tb(exc.__traceback__)
            line["exception"] = {
                "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
                "frames": [f"{f.filename}:{f.lineno} in {f.name}" for f in frames],
            }
        return json.dumps(line, ensure_ascii=False)


def configure_logging(
    level: str, fmt: Literal["text", "json"], *, stream: IO[str] | None = None
) -> dict[str, object]:
    """Send every log record (uvicorn's too) to ``stream`` (stderr) in ``fmt``, handover
    grants masked (:class:`GrantMask`); turn the
    ``selenium`` logger down to WARNING (it logs whole frames at debug), and ``httpx`` /
    ``httpcore`` (a line for every driver status poll, with its URL — a Grid's URL may
    carry its password).

    Returns:
        A ``logging.config`` dictionary for uvicorn's ``log_config``, so its own
        loggers go through the same handler.
    """
    handler = logging.StreamHandler(stream)
    handler.addFilter(GrantMask())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for chatty in ("selenium", "httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    # uvicorn's loggers propagate to the root: no handlers of their own, no second format.
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "loggers": {
            name: {"handlers": [], "propagate": True, "level": level.upper()}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
        },
    }
