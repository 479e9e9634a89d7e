"""What every contract suite shares: a controllable clock, and each backend reached by URL
with an empty store per test (a temp SQLite file, a truncated PostgreSQL database of the
run's own, a Redis key prefix of the test's own)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from fixtures.databases import REDIS_URL, clear_redis_prefix, redis_prefix
from sitekeep.stores import open_database
from sitekeep.stores.database import Database


class FakeClock:
    """Seconds since the epoch that move only when a test says so."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    # Starts at the real time so a backend that stores absolute expiry times stays sane.
    return FakeClock(time.time())


@dataclass(frozen=True)
class Backend:
    """One backend of a port: a name for the test id, and whether a second store on the
    same URL sees what the first wrote."""

    name: str
    durable: bool


BACKENDS = [
    Backend("memory", durable=False),
    Backend("sqlite", durable=True),
    Backend("postgresql", durable=True),
    Backend("redis", durable=True),
]
SQL_BACKENDS = BACKENDS[:3]
DURABLE = [b for b in BACKENDS if b.durable]


def ids(backend: Backend) -> str:
    return backend.name


@pytest.fixture(params=BACKENDS, ids=ids)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Every backend, unless a module parametrizes ``backend`` with fewer."""
    backend: Backend = request.param
    return backend


@pytest.fixture
def url(backend: Backend, url_of: dict[str, str]) -> str:
    """An empty store of ``backend`` for this test."""
    return url_of[backend.name]


@pytest.fixture
def database(url: str) -> Iterator[Database]:
    """The SQL database at ``url``, at the newest schema."""
    db = open_database(url)
    yield db
    db.dispose()


def _truncate(url: str) -> None:
    open_database(url).dispose()  # the schema at head first
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename NOT IN ('alembic_version', 'run_guard')"
            )
        ]
        if tables:
            conn.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables))


@pytest.fixture
def url_of(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """``url_of[backend name]``: an empty store of that backend for this test."""
    prefix = redis_prefix()
    urls = {
        "memory": "memory://",
        "sqlite": f"sqlite:///{tmp_path}/store.db",
        "redis": f"{REDIS_URL}?prefix={prefix}",
    }

    class Lazy(dict[str, str]):
        def __missing__(self, name: str) -> str:
            assert name == "postgresql"
            url: str = request.getfixturevalue("postgres_url")
            _truncate(url)
            self[name] = url
            return url

    yield Lazy(urls)
    clear_redis_prefix(REDIS_URL, prefix)
