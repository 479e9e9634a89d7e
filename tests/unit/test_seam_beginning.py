"""Every operation's journal begin goes one way, ``seam._beginning`` (SPEC §8): an
operation not in ``READS_FIRST`` waits for it before the browser; one in it (a save)
lets it go out beside its first reads and waits for it later."""

from __future__ import annotations

import anyio
import pytest

from sitekeep.errors import JournalUnavailable
from sitekeep.journal import records
from sitekeep.seam.context import READS_FIRST, _beginning
from sitekeep.seam.journaling import Op as _Op

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # _Beginning runs its write as an asyncio task


def a_begun_op() -> _Op:
    return _Op(records.begin("navigate", {}, parent=None, call="c"), 0)


async def test_an_operation_that_does_not_read_first_waits_for_its_begin_before_the_browser() -> (
    None
):
    written = anyio.Event()
    op = a_begun_op()

    async def write() -> _Op:
        await anyio.sleep(0.01)
        written.set()
        return op

    beginning = _beginning(write(), beside_reads="navigate" in READS_FIRST)
    await beginning.before_browser()
    assert written.is_set()
    assert await beginning.durable() is op


async def test_a_begin_refused_before_the_browser_is_raised_there() -> None:
    async def write() -> _Op:
        raise JournalUnavailable("the journal's disk is full")

    beginning = _beginning(write(), beside_reads=False)
    with pytest.raises(JournalUnavailable):
        await beginning.before_browser()
    await beginning.settle()  # settling a refused begin raises nothing


async def test_a_save_goes_to_the_browser_while_its_begin_is_still_written() -> None:
    release = anyio.Event()
    op = a_begun_op()

    async def write() -> _Op:
        await release.wait()
        return op

    beginning = _beginning(write(), beside_reads="save_site_data" in READS_FIRST)
    with anyio.fail_after(1):
        await beginning.before_browser()  # returns at once: the write still waits
    release.set()
    assert await beginning.durable() is op
