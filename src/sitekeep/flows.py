"""Flows: many operations in one call (SPEC §6).

Each step runs as its operation would on its own, inside the same seam call; its outcome
and where it left the browser go into the report. A failed step stops the flow unless it
(or the flow) says ``continue``. Every page a step reached — a failed step's included —
goes into the history at the end, in order; a ``save_site_data`` step writes the pages
reached so far first (``Service.save_in``), so the save reads their storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sitekeep.errors import SitekeepError, error_json
from sitekeep.operations import HANDLERS, Call
from sitekeep.steps import OnError, Step

__all__ = ["run_steps"]


async def run_steps(call: Call, steps: Sequence[Step], on_error: OnError) -> dict[str, Any]:
    """Run the steps in order.

    Returns:
        ``{ok, steps: [{step, op, status: ok|failed|not run, url?, title?, error?, ...}]}``.
    """
    report: list[dict[str, Any]] = []
    stopped = False
    for index, step in enumerate(steps):
        outcome: dict[str, Any] = {"step": index, "op": step.op}
        if stopped:
            report.append({**outcome, "status": "not run"})
            continue
        try:
            outcome.update(await HANDLERS[step.op](call, step.args), status="ok")
        except SitekeepError as exc:
            outcome.update(status="failed", error=error_json(exc))
            stopped = (step.on_error or on_error) == "stop"
        page, withheld = await call.service.where(call)
        outcome.update({"url_withheld": True} if withheld else {"url": page.url})
        outcome["title"] = page.title
        report.append(outcome)
    return {"ok": all(o["status"] == "ok" for o in report), "steps": report}
