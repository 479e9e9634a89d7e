"""The README lists every flow op and every on_error value (issue #14 item 7)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from sitekeep.args import OPERATIONS, OnError

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_the_readme_lists_every_flow_op_and_on_error_value() -> None:
    start = README.index("A flow's steps")
    table = README[start : README.index("`on_error` (the flow's", start)]
    listed = set(re.findall(r"^\| ([^|]+) \|", table, re.MULTILINE))
    ops = {op for cell in listed for op in re.findall(r"`(\w+)`", cell)}
    assert ops == set(OPERATIONS)
    after = README[README.index("`on_error` (the flow's") :][:600]
    for value in get_args(OnError):
        assert f"`{value}`" in after, value
