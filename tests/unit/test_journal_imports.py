"""What a process that only reads or writes the journal loads (issue #25): replay's peak
RSS has a bound (``bench/journal.py``, ≤ 128 MB), and every module imported is resident
memory. The service's stack (FastAPI, the SQL stores, browsers) is no part of the journal:
not on the replay path, not behind the Redis backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from journal_support import Chain

HEAVY = (
    "alembic",
    "fastapi",
    "httpx",
    "psycopg",
    "selenium",
    "sqlalchemy",
    "starlette",
    "sitekeep.service",
    "sitekeep.stores.database",
)

REPLAY = """
import sys
from pathlib import Path
from sitekeep.journal.framing import FileSource
from sitekeep.journal.reducer import Rules
from sitekeep.journal.replay import replay
with FileSource(Path(sys.argv[1]), max_record=1 << 20) as source:
    assert replay(source, Rules()).report.records == 6
"""

REDIS = """
from sitekeep.journal import Journal, open_backend
Journal(open_backend("redis://127.0.0.1:6379/0?prefix=probe:"))
"""


def _loaded(probe: str, *args: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``heavy`` a fresh interpreter holds after running ``probe``."""
    probe += f"\nimport sys\nprint(' '.join(m for m in {heavy!r} if m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_replaying_a_journal_file_loads_none_of_the_service_stack(tmp_path: Path) -> None:
    chain = Chain()
    for page in (
        "https://a.example.test/",
        "https://b.example.test/cart",
        "https://b.example.test/",
    ):
        chain.op("navigate", page=page, refs="invalidated")
    path = tmp_path / "j.jsonl"
    path.write_bytes(chain.lines())
    assert _loaded(REPLAY, str(path), heavy=(*HEAVY, "redis")) == []


def test_opening_a_redis_journal_loads_none_of_the_sql_stores() -> None:
    assert _loaded(REDIS) == []
