"""The operation context: the one way a journaled call runs (SPEC §8).

Every operation that touches a browser — an agent's operation (``Session.dispatch``), a
flow, an open, a close, a capture — runs through :func:`run_operation`:

1. **begin**: a begin record, its arguments redacted (``journal.redact``), durable before
   the browser is touched (it cannot be written: ``JournalUnavailable``, 503, nothing
   touched) — or, for an operation in :data:`READS_FIRST`, written beside its first reads
   and awaited before anything that changes the browser or a store;
2. the operation's **work**, which returns its effects as a value (``operations.Done``);
3. **mask**: the secret values it revealed join the session's sealed mask;
4. **apply**: its effects are folded into the record (refs, typed secrets) and a save's
   snapshot is stored;
5. **finish**: where the browser is (or that its URL is withheld, SPEC §7), and a
   **snapshot** record first when the refs were replaced. A finish that cannot be written
   leaves the session *unsettled*: the result still comes back with a
   ``journal_unsettled`` warning, dependent flow steps stop, and the next call inspects
   the browser and settles the open begins as ``unknown`` before it acts
   (``CallJournal.settle_unknown``). A mutation is never repeated automatically.

A failed operation's finish says so, with the secrets it revealed kept as typed and their
values masked in the error. The records themselves — and the marks (opened, reopened,
restored, forgotten, cleared) — are made by the call's
:class:`~sitekeep.seam.journaling.CallJournal`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

import anyio

from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.errors import JournalConflict, JournalUnavailable, SitekeepError
from sitekeep.masking import Masker
from sitekeep.model import SessionRecord
from sitekeep.seam.journaling import CallJournal, Op, Where
from sitekeep.seam.operations import Done

__all__ = ["READS_FIRST", "Revealed", "Work", "Working", "run_operation"]

READS_FIRST = frozenset({"save_site_data"})
"""Operations whose first browser calls only read (``storage.getCookies``, the READ
script): their begin is appended beside those reads, and awaited before anything that
changes the browser or a store (a spare tab, a reopen, the snapshot) — a save waits on
the slower of its fsync and its first round trip, not on both (issue #15). A begin that
cannot be written still fails the call with 503, the reads thrown away.

Ruling on SPEC §8 (lead, issue #15): "begin durable before dispatch … browser not
touched" guards effects on the browser; a save's first calls only read, so its begin may
go out beside them — provided a begin that cannot be written still ends the call with
503 and no snapshot, record change or finish (tests/faults)."""


# -- begins on their way ----------------------------------------------------------------


class _Beginning(Protocol):
    """A begin record on its way to the journal: every operation's begin goes this one
    way (:func:`_beginning` chooses how, once per operation).

    :meth:`before_browser` waits for it unless it may go out beside the first reads;
    :meth:`durable` waits for it; :meth:`settle` waits for it whatever happened, so no
    append outlives its call.
    """

    async def before_browser(self) -> None:
        """Wait until the begin is durable, unless it may go out beside the first reads.

        Raises:
            JournalUnavailable / JournalConflict: it could not be written.
        """

    async def durable(self) -> Op:
        """The begun operation, once its begin is durable.

        Raises:
            JournalUnavailable / JournalConflict: it could not be written.
        """

    async def settle(self) -> None: ...


def _beginning(write: Coroutine[Any, Any, Op], *, beside_reads: bool) -> _Beginning:
    """The begin of an operation, written beside its first reads (``READS_FIRST``) or
    durable before its browser is touched (any other, SPEC §8)."""
    return _BesideReads(write) if beside_reads else _BeforeBrowser(write)


class _BeforeBrowser:
    """A begin awaited in place, in :meth:`before_browser`: a cancelled call cancels its
    write as any await does, and no task is made (a few µs an operation)."""

    def __init__(self, write: Coroutine[Any, Any, Op]) -> None:
        self._write = write
        self._outcome: Op | Exception | None = None

    async def before_browser(self) -> None:
        try:
            self._outcome = await self._write
        except Exception as exc:
            self._outcome = exc
            raise

    async def durable(self) -> Op:
        if isinstance(self._outcome, Exception):
            raise self._outcome
        assert self._outcome is not None, "durable() before before_browser()"
        return self._outcome

    async def settle(self) -> None:
        self._write.close()  # a no-op once awaited


class _BesideReads:
    """A begin written in a task of its own while the operation's first reads run;
    a waiter cancelled does not cancel the write."""

    def __init__(self, write: Coroutine[Any, Any, Op]) -> None:
        self._task: asyncio.Future[Op] = asyncio.ensure_future(write)

    async def before_browser(self) -> None:
        return None  # the reads go first; journaled() waits before any change

    async def durable(self) -> Op:
        return await asyncio.shield(self._task)

    async def settle(self) -> None:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await self._task


# -- running an operation -------------------------------------------------------------------


class Revealed(Protocol):
    """The secrets an operation read (``session._Secrets``): names and values."""

    @property
    def revealed(self) -> Sequence[tuple[str, str]]: ...

    @property
    def values(self) -> Sequence[str]: ...


class Working(Protocol):
    """What :func:`run_operation` needs of the call's working state (``seam.session.Session``)."""

    journal: CallJournal
    record: SessionRecord | None
    browser: LiveBrowser | None
    pages: list[str]
    last: tuple[PageInfo, bool] | None

    async def look(self) -> tuple[PageInfo, bool]: ...

    async def landed(self, page: PageInfo) -> tuple[PageInfo, bool]: ...

    async def typed_values(self) -> list[str]: ...

    async def apply(self, done: Done, values: Sequence[str] = ()) -> None: ...

    async def put(self) -> None: ...


Work = Callable[[], Awaitable[Done]]


async def run_operation(
    s: Working,
    op: str,
    args: Mapping[str, Any],
    work: Work,
    *,
    step: int | None = None,
    secrets: Revealed | None = None,
    look_on_failure: bool = False,
) -> Done:
    """Run ``work`` as operation ``op`` of the call: begin → work → mask → apply → finish
    (the module's docstring).

    Args:
        args: the operation's arguments, as its begin record keeps them (redacted).
        step: the step's index in a flow.
        secrets: what the work revealed (its values join the session's mask).
        look_on_failure: a failed operation's finish says where the browser is (an
            agent's operation; a flow reports it).

    Raises:
        JournalUnavailable: the begin could not be written; nothing was touched.
        SitekeepError: the operation failed (its finish says so).
    """
    journal, record = s.journal, s.record
    generation = record.browser.generation if record and record.browser else None
    beginning = journal.beginning = _beginning(
        journal.begin(op, args, step=step, generation=generation, first_page=len(s.pages)),
        beside_reads=op in READS_FIRST,
    )
    try:
        await beginning.before_browser()
        done = await work()
    except SitekeepError as exc:
        begun = await _begun_after(journal, beginning, exc)
        await _failed(s, begun, exc, secrets, look_on_failure)
        raise
    except BaseException:
        await beginning.settle()
        journal.beginning = None
        raise
    begun = await _begun_after(journal, beginning)
    try:
        await s.apply(done, secrets.values if secrets is not None else ())
    except SitekeepError as exc:
        await _failed(s, begun, exc, secrets, look_on_failure)
        raise
    await _landed(s, done)
    if not journal.unsettled:
        await journal.finish(
            begun,
            where=_where(s, begun, looked=True),
            refs=done.refs,
            snapshot=done.snapshot,
            typed=done.typed,
            saved=done.saved,
        )
    return done


async def _begun_after(
    journal: CallJournal, beginning: _Beginning, failed: SitekeepError | None = None
) -> Op:
    """The begun operation once its begin is durable; a begin that could not be
    written fails the call in place of ``failed`` (only reads had run), or is
    ``failed`` itself (it was refused before the browser was touched)."""
    try:
        return await beginning.durable()
    except (JournalUnavailable, JournalConflict) as exc:
        if failed is not None and failed is not exc:
            raise exc from failed
        raise
    finally:
        await beginning.settle()
        journal.beginning = None


async def _landed(s: Working, done: Done) -> None:
    """Where the operation left the browser: the page it already saw, else a look —
    unless the call already looked (a flow's last step) or has no browser."""
    if done.page is not None:
        await s.landed(done.page)
    elif s.last is None and s.browser is not None:
        await s.look()


def _where(s: Working, op: Op, *, looked: bool) -> Where:
    page, withheld = s.last if looked and s.last else (None, False)
    generation = s.browser.ref.generation if s.browser else None
    return page, withheld, s.pages[op.first_page :], generation


async def _failed(
    s: Working,
    begun: Op,
    exc: SitekeepError,
    secrets: Revealed | None,
    look: bool,
) -> None:
    """The failed operation's finish: where the browser is when ``look`` and it can
    still be seen, refs unknown. Secrets it revealed are kept as typed (some of a value
    may be in the page) and their values masked in the error (SPEC §7)."""
    typed = tuple(secrets.revealed) if secrets is not None else ()
    if typed and secrets is not None:
        await s.apply(Done(typed=typed), secrets.values)
        with contextlib.suppress(SitekeepError):
            await s.put()
    if look and s.browser is not None:
        with contextlib.suppress(SitekeepError):
            await s.look()
    await s.journal.finish(begun, exc, where=_where(s, begun, looked=look), typed=typed)
    if s.record is not None:
        _mask_error(exc, Masker.of(await s.typed_values()))


def _mask_error(exc: SitekeepError, masker: Masker) -> None:
    """Mask the session's values in every text field of ``exc``, in place."""
    if not masker:
        return
    for name, value in vars(exc).items():
        if isinstance(value, str):
            setattr(exc, name, masker.text(value))
    exc.args = tuple(masker.value(list(exc.args)))
