"""The HTTP facade (SPEC §5): one server for the JSON API (a router per area:
``sessions``, ``admin``, ``profiles``…, their request dependencies in ``deps``), MCP over
streamable HTTP at ``/mcp`` (``mcp``) and the admin UI at ``/admin`` (``ui/``), composed
by :mod:`sitekeep.api.app`. Each calls :mod:`sitekeep.service` and nothing below it
(docs/architecture.md)."""
