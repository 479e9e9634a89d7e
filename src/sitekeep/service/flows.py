"""Flows: many operations in one call (SPEC §6).

The flow is journaled as one operation (``run_flow``) and each step runs inside it as its
operation would on its own — through the seam's one ``Session.dispatch``, journaled as
its own begin and finish with the flow's call id and its index — and its outcome and
where it left the browser go into the report. A failed step stops the flow unless it (or
the flow) says ``continue``; a step whose finish could not be journaled stops it
whatever it says (the session is unsettled: what follows depends on effects nobody
recorded, SPEC §8). Every page a step reached — a failed step's included — goes into the
history at the end, in order; a ``save_site_data`` step reads the storage of the pages
reached so far too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sitekeep.args import FlowBody, OnError, Step, parse_steps
from sitekeep.errors import InvalidInput, SitekeepError, error_json
from sitekeep.model import Principal
from sitekeep.seam import Seam, Session, run_operation
from sitekeep.seam.operations import Done

__all__ = ["Flows", "run_steps"]


class Flows:
    """The flow use case (SPEC §6)."""

    def __init__(self, seam: Seam) -> None:
        self._seam = seam

    async def run(self, who: Principal, key: str, flow: FlowBody) -> dict[str, Any]:
        """Run ``flow.steps`` in one call: every step reports its outcome and where it
        left the browser; a failed step stops the flow unless its ``on_error`` (or the
        flow's) is ``continue``. The history is written once at the end, in order.

        Returns:
            ``{url, title, ok, steps: [{step, op, status, url, title, ...}], site_data?}``.

        Raises:
            InvalidInput: a malformed step, naming it (``steps[2].url``); nothing has run.
            JournalUnavailable: the journal's begin could not be made durable (503,
                SPEC §8); the browser was not touched.
        """
        on_error = _on_error(flow.on_error)
        parsed = parse_steps(flow.steps)
        steps = [{"op": p.op, **p.args.model_dump(exclude_none=True)} for p in parsed]

        async def body(s: Session) -> dict[str, Any]:
            s.require()

            async def work() -> Done:
                return Done(await run_steps(s, parsed, on_error))

            args = {"steps": steps, "on_error": flow.on_error}
            done = await run_operation(s, "run_flow", args, work)
            return await s.end(dict(done.result))

        return await self._seam.call(who, key, body, use=True)


def _on_error(value: object) -> OnError:
    """``stop`` or ``continue``. Raises: InvalidInput (field ``on_error``)."""
    if value == "continue":
        return "continue"
    if value == "stop":
        return "stop"
    raise InvalidInput("on_error is stop or continue", field="on_error")


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
