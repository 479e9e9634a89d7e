"""What an acknowledged append to the Redis journal survives (``journal/redis_streams.py``).

Each test runs private ``redis-server`` processes on free loopback ports in a temp dir (the
shared Redis keeps nothing on disk and must not be killed), kills them with ``-9`` and
starts them again on the same dir. A process kill is what can be tested here; a power cut
is not, so ``appendfsync always`` is checked by what the server reports, not by pulling
a plug.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from journal_support import GEN
from sitekeep.errors import JournalUnavailable
from sitekeep.journal import Journal, JournalKey, open_backend, records

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]

KEY = JournalKey("tenant-a", "session-1")


class Server:
    """One private redis-server: started, killed with -9, started again on its dir."""

    def __init__(self, directory: Path, *options: str) -> None:
        self.directory, self.options = directory, options
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Server:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(self.directory),
                "--save",
                "",
                *self.options,
            ],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.02)
            finally:
                client.close()
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()


async def append_some(url: str, count: int) -> list[str]:
    journal = Journal(open_backend(url))
    head = None
    try:
        for _ in range(count):
            note = records.mark("opened", parent=head, generation=GEN)
            await journal.write(KEY, note)
            head = note.id
        return [note.id]
    finally:
        await journal.aclose()


async def test_with_aof_always_an_acknowledged_append_survives_kill_9(
    tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(tmp_path / "aof", "--appendonly", "yes", "--appendfsync", "always")
    servers.append(server.start())
    backend = open_backend(server.url)
    assert await backend.server_durability() == "aof-always"  # type: ignore[attr-defined]
    await backend.aclose()
    last = await append_some(server.url, 20)
    server.kill()
    server.start()
    journal = Journal(open_backend(server.url))
    result = await journal.replay(KEY)
    await journal.aclose()
    assert result.state.records == 20 and result.state.head == last[-1]


async def test_without_aof_the_server_says_so_and_a_kill_loses_the_journal(
    tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(tmp_path / "memory", "--appendonly", "no")
    servers.append(server.start())
    backend = open_backend(server.url)
    assert await backend.server_durability() == "memory"  # type: ignore[attr-defined]
    await backend.aclose()
    await append_some(server.url, 5)
    server.kill()
    server.start()
    journal = Journal(open_backend(server.url))
    assert (await journal.replay(KEY)).state.records == 0
    await journal.aclose()


async def test_replicas_must_acknowledge_or_the_append_fails_and_is_withdrawn(
    tmp_path: Path, servers: list[Server]
) -> None:
    primary = Server(tmp_path / "primary", "--repl-diskless-sync-delay", "0")
    servers.append(primary.start())
    replica = Server(tmp_path / "replica", "--replicaof", "127.0.0.1", str(primary.port))
    servers.append(replica.start())
    client = redis.Redis(port=primary.port)
    deadline = time.monotonic() + 30
    while client.info("replication").get("slave0", {}).get("state") != "online":
        assert time.monotonic() < deadline, "the replica never came online"
        time.sleep(0.05)

    url = f"{primary.url}?replicas=1&wait_timeout=2"
    journal = Journal(open_backend(url))
    first = records.mark("opened", parent=None, generation=GEN)
    await journal.write(KEY, first)
    stream = journal.backend.stream(KEY)  # type: ignore[attr-defined]
    assert redis.Redis(port=replica.port).xlen(stream) == 1  # WAIT said it got there

    replica.kill()
    second = records.mark("saved", parent=first.id, detail={"cookies": 1})
    with pytest.raises(JournalUnavailable, match="0 of 1 Redis replica"):
        await journal.write(KEY, second)
    assert client.xlen(stream) == 1
    assert await journal.head(KEY) == first.id
    await journal.aclose()
    client.close()
