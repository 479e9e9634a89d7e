"""API load: requests per second and p99 of reads that touch no browser (SPEC §16, §13).

Runs real ``sitekeep serve`` processes and a load generator of 50 concurrent keep-alive
connections (its own process, a minimal HTTP/1.1 client over asyncio streams, so the
client costs little of the machine's CPU) against:

* ``GET /v1/sessions/{key}`` — a session whose browser is closed (the record, the snapshot
  summary; no browser is reached),
* ``GET /admin/runs``, ``GET /admin/sessions`` and ``GET /v1/secrets`` — the admin reads,

in three set-ups, side by side: one replica on the embedded SQLite stores, one replica on
Redis + PostgreSQL, and two replicas on the same Redis + PostgreSQL (connections split
between them). Prints req/s, p50 and p99 per read and set-up, the ratio of two replicas to
one, each figure against the target (≥ 2,000 req/s and p99 ≤ 50 ms on one replica — one
``sitekeep serve`` process), the load average before and after, and whether each replica
runs uvloop and httptools (their shared objects mapped in the process).

Everything stays on loopback; each run is bounded in requests and in time. Uses the shared
Redis and PostgreSQL of the test machine (a fresh database and key prefix, removed after).

    .venv/bin/python bench/api_load.py [--requests 20000] [--clients 50] [--in-process]
        [--setups sqlite,pg1,pg2] [--reads /admin/runs,/v1/secrets] [--log-level info]

``--in-process`` measures only the app's CPU per request (ASGI calls in this process, no
server, no HTTP parsing): the part of a request's cost sitekeep's own code decides.
``--setups`` and ``--reads`` run only some of the set-ups (``sqlite``: one replica on
SQLite, ``pg1``/``pg2``: one or two replicas on Redis + PostgreSQL) and reads, to keep a
focused A/B run short.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.databases import (  # noqa: E402
    REDIS_URL,
    clear_redis_prefix,
    fresh_postgres_database,
    redis_prefix,
)
from fixtures.serve import Serve, sitekeep_env  # noqa: E402

TARGET_RPS = 2000
TARGET_P99_MS = 50.0
TIME_LIMIT = 60.0
"""Seconds one measurement may take at most (it stops early, and says so)."""


@dataclass
class Result:
    requests: int
    seconds: float
    latencies_ms: list[float]
    errors: int
    server_cpu_ms: float
    """CPU time the replicas spent per request (user + system), in ms: what a request costs
    whatever else runs on the machine; 1000 / this is one core's ceiling in req/s."""
    client_cpu_ms: float
    """CPU time the load generator spent per request, in ms: it shares the machine's cores,
    so server + client CPU per request bounds what one machine can show."""

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the load generator (its own process) ---------------------------------------------------


async def _connection(
    port: int, request: bytes, count: int, latencies: list[float], deadline: float
) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    errors = 0
    try:
        for _ in range(count):
            if time.monotonic() > deadline:
                break
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            latencies.append((time.perf_counter() - started) * 1000)
            if not head.startswith(b"HTTP/1.1 200"):
                errors += 1
    finally:
        writer.close()
    return errors


async def _load(
    ports: list[int], path: str, token: str, total: int, clients: int
) -> tuple[int, float, list[float], int]:
    latencies: list[float] = []
    requests = [
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
        for port in ports
    ]
    deadline = time.monotonic() + TIME_LIMIT
    started = time.perf_counter()
    errors = await asyncio.gather(
        *(
            _connection(
                ports[i % len(ports)],
                requests[i % len(ports)],
                total // clients,
                latencies,
                deadline,
            )
            for i in range(clients)
        )
    )
    return len(latencies), time.perf_counter() - started, latencies, sum(errors)


def _load_process(args: tuple[list[int], str, str, int, int], out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    try:
        import uvloop  # the generator's own CPU per request is printed next to the server's

        uvloop.install()
    except ImportError:
        pass
    started = time.process_time()
    result = asyncio.run(_load(*args))
    out.put((*result, time.process_time() - started))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    ports: list[int], pids: list[int], path: str, token: str, total: int, clients: int
) -> Result:
    """``total`` GETs of ``path`` over ``clients`` connections, from another process, after
    a warm-up; and the CPU the replicas (``pids``) spent on them."""
    context = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue = context.Queue()  # type: ignore[type-arg]
    # A short warm-up first: connections, caches, the JIT-free but lazy imports.
    for count in (min(total, 2000), total):
        process = context.Process(
            target=_load_process, args=((ports, path, token, count, clients), out)
        )
        before = sum(cpu_seconds(pid) for pid in pids)
        process.start()
        requests, seconds, latencies, errors, client = out.get(timeout=TIME_LIMIT + 60)
        process.join(30)
        used = sum(cpu_seconds(pid) for pid in pids) - before
    per = 1000 / max(requests, 1)
    return Result(requests, seconds, latencies, errors, used * per, client * per)


# -- the set-ups ------------------------------------------------------------------------------


def _admin(replica: Serve, token: str, method: str, path: str, body: object = None) -> dict:  # type: ignore[type-arg]
    with replica.client(token) as http:
        reply = http.request(method, path, json=body)
    reply.raise_for_status()
    result: dict = reply.json()  # type: ignore[type-arg]
    return result


def _token(env: dict[str, str]) -> str:
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "sitekeep"),
            "token",
            "create",
            "--tenant",
            "bench",
            "--subject",
            "admin",
            "--admin",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def seed(replica: Serve, token: str) -> None:
    """One session with a closed browser, one secret, a few ledger rows."""
    _admin(replica, token, "POST", "/v1/sessions", {"key": "s1"})
    _admin(replica, token, "DELETE", "/v1/sessions/s1/browser")
    _admin(
        replica,
        token,
        "PUT",
        "/v1/secrets/login",
        {"hosts": ["app.example.test"], "values": {"password": "dummy-bench-pass"}},
    )


READS = ("/v1/sessions/s1", "/admin/runs", "/admin/sessions", "/v1/secrets")


def speedups(pid: int) -> str:
    """Which of uvloop and httptools the process ``pid`` has loaded (``/proc/<pid>/maps``)."""
    with open(f"/proc/{pid}/maps", encoding="utf-8") as maps:
        text = maps.read()
    return ", ".join(
        f"{name} {'yes' if f'/{name}/' in text else 'NO'}" for name in ("uvloop", "httptools")
    )


def run_setup(
    name: str,
    env: dict[str, str],
    replicas: int,
    total: int,
    clients: int,
    work: Path,
    reads: tuple[str, ...] = READS,
    log_level: str = "warning",
) -> dict[str, Result]:
    token = _token({**env, "SITEKEEP_DATA_DIR": str(work / "r0")})
    work.mkdir(parents=True, exist_ok=True)
    servers = [
        Serve(
            {**env, "SITEKEEP_DATA_DIR": str(work / f"r{i}")},
            log_level=log_level,
            log_file=work / f"r{i}.log",
        ).start()
        for i in range(replicas)
    ]
    try:
        seed(servers[0], token)
        for server in servers:
            assert server.process is not None
            print(f"  {name}: replica pid {server.process.pid}: {speedups(server.process.pid)}")
        results = {}
        for path in reads:
            pids = [s.process.pid for s in servers if s.process is not None]
            results[path] = measure([s.port for s in servers], pids, path, token, total, clients)
            r = results[path]
            print(
                f"  {name:<28} {path:<18} {r.rps:8.0f} req/s  p50 {r.pct(0.5):6.1f} ms  "
                f"p99 {r.pct(0.99):6.1f} ms  server CPU {r.server_cpu_ms:.2f} ms/request  "
                f"generator CPU {r.client_cpu_ms:.2f} ms/request  "
                f"errors {r.errors}",
                flush=True,
            )
        return results
    finally:
        for server in servers:
            server.stop()
        subprocess.run(
            [str(Path(sys.executable).parent / "sitekeep"), "stop"],
            env={**env, "SITEKEEP_DATA_DIR": str(work / "r0")},
            capture_output=True,
            timeout=120,
        )


# -- in process: the app's own CPU per request, no server, no HTTP -----------------------------


async def _in_process(path: str, total: int, clients: int, env: dict[str, str]) -> float:
    """CPU ms per request of ``total`` ASGI GETs of ``path`` (``clients`` at once) in this
    process, on the stores ``env`` names: what the app costs without uvicorn's share."""
    import time as clock

    from sitekeep.api.app import create_app
    from sitekeep.args import SecretBody
    from sitekeep.config import Settings
    from sitekeep.model import RECORD_JSON, HistoryEntry, SessionRecord, SiteData
    from sitekeep.seam.records import record_key

    settings = Settings(
        data_dir=Path(env["SITEKEEP_DATA_DIR"]),
        warm_browsers={},
        reap_interval=3600,
        session_store=env.get("SITEKEEP_SESSION_STORE"),
        database_url=env.get("SITEKEEP_DATABASE_URL"),
    )
    app = create_app(settings, settle_heap=True)  # as `sitekeep serve` makes it
    async with app.router.lifespan_context(app):
        svc = app.state.service
        token = await svc.catalogue.create_token("bench", "admin", "admin")
        who = await svc.catalogue.authenticate(f"Bearer {token}")
        now = clock.time()
        url = "https://app.example.test/x"
        record = SessionRecord(
            tenant="bench",
            key="s1",
            owner="admin",
            kind="chromium",
            created_at=now,
            last_used_at=now,
            history=(HistoryEntry("https://app.example.test", url, now),),
        )
        store_key = record_key("bench", "s1")
        await svc.parts.seam.records.store.set(store_key, RECORD_JSON.dump_json(record), ttl=3600)
        await svc.parts.seam.records.put_snapshot("bench", "s1", SiteData(saved_at=now))
        body = SecretBody(hosts=["app.example.test"], values={"password": "dummy"})
        await svc.catalogue.put_secret(who, "login", body)
        headers = [(b"host", b"bench"), (b"authorization", f"Bearer {token}".encode())]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
        }

        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                assert message["status"] == 200, message

        async def client(count: int) -> None:
            for _ in range(count):
                await app({**scope, "state": {}}, receive, send)

        await client(200)  # warm-up
        started = clock.process_time()
        await asyncio.gather(*(client(total // clients) for _ in range(clients)))
        return (clock.process_time() - started) * 1000 / (total // clients * clients)


def in_process(
    total: int,
    clients: int,
    base: dict[str, str],
    setups: tuple[str, ...] = ("sqlite", "pg1"),
    reads: tuple[str, ...] = READS,
) -> None:
    """Print the app's CPU per request of each read on both store set-ups."""
    import logging

    import uvloop

    logging.disable(logging.INFO)
    print("in process (ASGI calls, no server): the app's CPU per request")
    with tempfile.TemporaryDirectory(prefix="sitekeep-bench-") as tmp:
        prefix = redis_prefix()
        with fresh_postgres_database() as database:
            stores = {
                "SQLite": {"SITEKEEP_DATA_DIR": f"{tmp}/embedded"},
                "Redis+PostgreSQL": {
                    "SITEKEEP_DATA_DIR": f"{tmp}/shared",
                    "SITEKEEP_SESSION_STORE": f"{REDIS_URL}?prefix={prefix}",
                    "SITEKEEP_DATABASE_URL": database,
                },
            }
            wanted = {"SQLite": "sqlite" in setups, "Redis+PostgreSQL": "pg1" in setups}
            try:
                for name, env in stores.items():
                    if not wanted[name]:
                        continue
                    for path in reads:
                        ms = uvloop.run(_in_process(path, total, clients, {**base, **env}))
                        print(
                            f"  {name:<18} {path:<18} {ms:6.3f} ms CPU/request  "
                            f"(one core: {1000 / ms:6.0f} req/s)",
                            flush=True,
                        )
            finally:
                clear_redis_prefix(REDIS_URL, prefix)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000, help="per read and set-up")
    parser.add_argument("--clients", type=int, default=50, help="concurrent connections")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="only the app's CPU per request, by ASGI calls in this process (no server)",
    )
    parser.add_argument(
        "--setups",
        default="sqlite,pg1,pg2",
        help="comma-separated, of sqlite, pg1, pg2 (--in-process: sqlite, pg1)",
    )
    parser.add_argument("--reads", default=",".join(READS), help="comma-separated paths")
    parser.add_argument(
        "--log-level",
        default="warning",
        help="the replicas' --log-level (info: one access-log line a request, to a file)",
    )
    args = parser.parse_args()
    setups = tuple(args.setups.split(","))
    reads = tuple(args.reads.split(","))
    unknown = [s for s in setups if s not in ("sqlite", "pg1", "pg2")]
    unknown += [r for r in reads if r not in READS]
    if unknown:
        parser.error(f"unknown set-up or read: {', '.join(unknown)}")
    if args.in_process:
        in_process(args.requests, args.clients, {}, setups, reads)
        return
    base = sitekeep_env(SITEKEEP_WARM_BROWSERS="0", SITEKEEP_REAP_INTERVAL="3600")
    before = os.getloadavg()[0]
    print(
        f"{args.requests} GETs per read, {args.clients} connections, {os.cpu_count()} cores, "
        f"replicas at --log-level {args.log_level}"
    )
    table: dict[str, dict[str, Result]] = {}
    with tempfile.TemporaryDirectory(prefix="sitekeep-bench-") as tmp:
        work = Path(tmp)
        if "sqlite" in setups:
            table["1 replica, SQLite"] = run_setup(
                "1 replica, SQLite",
                base,
                1,
                args.requests,
                args.clients,
                work / "embedded",
                reads,
                args.log_level,
            )
        prefix = redis_prefix()
        with fresh_postgres_database() as database:
            shared = {
                **base,
                "SITEKEEP_SESSION_STORE": f"{REDIS_URL}?prefix={prefix}",
                "SITEKEEP_DATABASE_URL": database,
                "SITEKEEP_MASTER_KEY": base64.b64encode(os.urandom(32)).decode(),
            }
            try:
                for replicas in (1, 2):
                    if f"pg{replicas}" not in setups:
                        continue
                    name = f"{replicas} replica{'s' if replicas > 1 else ''}, Redis+PostgreSQL"
                    table[name] = run_setup(
                        name,
                        shared,
                        replicas,
                        args.requests,
                        args.clients,
                        work / f"shared{replicas}",
                        reads,
                        args.log_level,
                    )
            finally:
                clear_redis_prefix(REDIS_URL, prefix)
    print()
    load = os.getloadavg()[0]
    print(
        f"load average (1 min) {before:.1f} at the start, {load:.1f} at the end, "
        f"on {os.cpu_count()} cores"
    )
    print(
        f"{'read':<18} {'set-up':<30} {'req/s':>8} {'p99 ms':>8} {'CPU ms':>7} "
        f"{'gen ms':>7}  target"
    )
    for path in reads:
        for name, results in table.items():
            r = results[path]
            ok = r.rps >= TARGET_RPS and r.pct(0.99) <= TARGET_P99_MS and not r.errors
            ceiling = 1000 / r.server_cpu_ms if r.server_cpu_ms else float("inf")
            print(
                f"{path:<18} {name:<30} {r.rps:8.0f} {r.pct(0.99):8.1f} {r.server_cpu_ms:7.2f} "
                f"{r.client_cpu_ms:7.2f}  "
                f"{'met' if ok else 'missed'} ({r.rps / TARGET_RPS:.2f}x of {TARGET_RPS} req/s; "
                f"one free core: {ceiling:.0f} req/s)"
            )
        if "pg1" in setups and "pg2" in setups:
            one = table["1 replica, Redis+PostgreSQL"][path].rps
            two = table["2 replicas, Redis+PostgreSQL"][path].rps
            print(f"{path:<18} {'2 replicas / 1 replica':<30} {two / one:8.2f}x")
    print(json.dumps({n: {p: round(r.rps) for p, r in rs.items()} for n, rs in table.items()}))


if __name__ == "__main__":
    main()
