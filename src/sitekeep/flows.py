"""Flows: many operations in one call (SPEC §6).

Each step runs as its operation would on its own — through the seam's one
:meth:`~sitekeep.seam.Session.dispatch`, journaled as its own begin and finish with the
flow's call id and its index — and its outcome and where it left the browser go into the
report. A failed step stops the flow unless it (or the flow) says ``continue``; a step
whose finish could not be journaled stops it whatever it says (the session is unsettled:
what follows depends on effects nobody recorded, SPEC §8). Every page a step reached — a
failed step's included — goes into the history at the end, in order; a
``save_site_data`` step writes the pages reached so far first, so the save reads their
storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sitekeep.errors import SitekeepError, error_json
from sitekeep.steps import OnError, Step

if TYPE_CHECKING:
    from sitekeep.seam import Session

__all__ = ["run_steps"]


async def run_steps(session: Session, steps: Sequence[Step], on_error: OnError) -> dict[str, Any]:
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
        session.last = None
        try:
            outcome.update(await session.dispatch(step.op, step.args, step=index), status="ok")
        except SitekeepError as exc:
            outcome.update(status="failed", error=error_json(exc))
            stopped = (step.on_error or on_error) == "stop"
            if session.last is not None:
                page, withheld = session.last
                outcome.update({"url_withheld": True} if withheld else {"url": page.url})
                outcome["title"] = page.title
        stopped = stopped or session.unsettled
        report.append(outcome)
    return {"ok": all(o["status"] == "ok" for o in report), "steps": report}
