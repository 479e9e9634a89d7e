"""Prometheus metrics (``GET /metrics``, SPEC §13), on the official ``prometheus-client``.

Each service has its own registry (several apps share one test process). Counters and
histograms are fed as things happen; the two gauges are read from the stores at scrape
time, so they hold for every replica:

- ``sitekeep_sessions`` — session records in the session store;
- ``sitekeep_browsers{browser}`` — live browsers in the run ledger (every replica's);
- ``sitekeep_save_seconds{outcome}`` / ``sitekeep_restore_seconds{outcome}`` — histograms
  of saves and restores (``outcome``: ``ok`` or ``error``; ``_count`` counts them);
- ``sitekeep_sessions_opened_total`` — ``open_session`` calls that succeeded;
- ``sitekeep_errors_total{type}`` — error answers by the error's ``type`` (SPEC §5 shape).

Labels never carry a key, URL, host or value: only the fixed words above — and no tenant:
a scrape sees every tenant's counts together, so it is for the operator alone. It needs
the scrape token of ``SITEKEEP_METRICS_TOKEN`` (:func:`check_scraper`); without that
setting ``/metrics`` is closed, since any tenant's agent could otherwise watch the others'
sessions come and go (SPEC §12).
"""

from __future__ import annotations

import hmac
import time
from collections import Counter as Tally
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from pydantic import SecretStr

from sitekeep.auth import bearer_token
from sitekeep.errors import Unauthorized

__all__ = ["CONTENT_TYPE", "Metrics", "check_scraper"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Saves and restores take tens of milliseconds to several seconds (bench/save_restore.py).
_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def check_scraper(expected: SecretStr | None, authorization: str | None) -> None:
    """Let a scrape through only with ``Authorization: Bearer <SITEKEEP_METRICS_TOKEN>``
    (compared in constant time; never echoed).

    Raises:
        Unauthorized: no scrape token is set, or the header does not carry it.
    """
    if expected is None:
        raise Unauthorized("/metrics is closed: set SITEKEEP_METRICS_TOKEN and scrape with it")
    given = bearer_token(authorization)
    if not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
        raise Unauthorized("that is not the scrape token (SITEKEEP_METRICS_TOKEN)")


class Metrics:
    """One service's metrics and their registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.sessions = Gauge("sitekeep_sessions", "Session records in the store.", registry=r)
        self.browsers = Gauge(
            "sitekeep_browsers", "Live browsers in the run ledger.", ["browser"], registry=r
        )
        self.saves = Histogram(
            "sitekeep_save_seconds",
            "Saves of site data.",
            ["outcome"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.restores = Histogram(
            "sitekeep_restore_seconds",
            "Restores of site data into a new browser.",
            ["outcome"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.opened = Counter(
            "sitekeep_sessions_opened", "open_session calls that succeeded.", registry=r
        )
        self.errors = Counter("sitekeep_errors", "Error answers by type.", ["type"], registry=r)

    @contextmanager
    def timed(self, histogram: Histogram) -> Iterator[None]:
        """Observe the block's wall time in ``histogram``, labelled ``ok`` or ``error``."""
        started = time.perf_counter()
        outcome = "error"
        try:
            yield
            outcome = "ok"
        finally:
            histogram.labels(outcome).observe(time.perf_counter() - started)

    def error(self, type_name: str) -> None:
        """Count one error answer of ``type_name`` (an error class's ``type_name``)."""
        self.errors.labels(type_name).inc()

    def render(self, *, sessions: int, browsers: Tally[str]) -> bytes:
        """The text exposition format, the gauges set to the counts just read."""
        self.sessions.set(sessions)
        for kind in ("chromium", "firefox", *browsers):
            self.browsers.labels(kind).set(browsers.get(kind, 0))
        return generate_latest(self.registry)
