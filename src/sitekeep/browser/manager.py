"""Starting, reattaching and closing browsers (SPEC §2), and the warm pool (SPEC §13).

Correctness never depends on this object's memory: a browser is found again from its
``BrowserRef`` alone (stateless reattach). The per-process cache of open BiDi sockets is
an optimisation — and it is what lets the leave tracker see every document leave.

The warm pool keeps ``warm_browsers`` started, never-used browsers ready per kind
(``chromium:2,firefox:1``). A new session takes one instead of waiting for a WebDriver
session (about 0.6 s for Chromium here, 2.4 s for Firefox), and a browser that has idled a
moment restores a third faster than one started just now (``bench/save_restore.py``). Pool
browsers never held a page, so they need no wipe — and before one is handed out that is
proven (:meth:`BrowserManager._proven_empty`): the user contexts it was born with and no
other (Firefox is born with its containers), no cookie in any of them, one top-level tab on
``about:blank`` without frames, and no document of any origin ever seen by its tracker
(storage lives only where a document lived). One that fails
is ended, never handed out. Their refs are kept in ``<data dir>/warm/<pid>.json``; a later
process ends the ones a dead process left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
from dataclasses import replace

import anyio.to_thread

from sitekeep.address import Refused, ServerAddress
from sitekeep.browser import banned, wire
from sitekeep.browser.bidi import BidiConnection
from sitekeep.browser.chromedriver import LocalChromedriver
from sitekeep.browser.geckodriver import LocalGeckodriver, find_geckodriver
from sitekeep.browser.guard import OwnAddressGuard
from sitekeep.browser.live import LiveBrowser
from sitekeep.browser.mapper import LocalMapper
from sitekeep.browser.proxy import ProxyAuth, ProxySettings
from sitekeep.browser.samesite import SameSiteLog
from sitekeep.browser.scripts import CHANNEL, PRELOAD
from sitekeep.browser.servers import write_private
from sitekeep.browser.tracker import LeaveTracker
from sitekeep.browser.webdriver import (
    SessionSpec,
    delete_session,
    session_alive,
    session_gone,
    start_session,
    unreachable,
)
from sitekeep.config import Settings
from sitekeep.errors import BidiError, BrowserUnavailable
from sitekeep.model import BrowserKind, BrowserRef
from sitekeep.sites import load_suffixes

__all__ = ["BrowserManager", "open_live"]

log = logging.getLogger(__name__)

_GONE = frozenset({"invalid session id", "no such window", "session not created"})
_TRACKED: tuple[str, ...] = (
    wire.SCRIPT_MESSAGE,
    wire.BROWSING_CONTEXT_CONTEXT_CREATED,
    wire.BROWSING_CONTEXT_NAVIGATION_COMMITTED,
    wire.BROWSING_CONTEXT_CONTEXT_DESTROYED,
)
"""What the leave tracker listens to, for the life of the socket."""

END_GRACE = 2.0
"""Seconds a Chromium may take to exit after chromedriver answered Delete Session before
it is ended with its process tree (``LocalChromedriver.end_browser``)."""


class BrowserManager:
    """Browsers on the configured endpoint: ``SITEKEEP_WEBDRIVER_URL`` or the embedded
    chromedriver."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._local = (
            None
            if settings.webdriver_url
            else LocalChromedriver(settings.data_dir, settings.chromedriver)
        )
        self._gecko = LocalGeckodriver(
            settings.data_dir, settings.geckodriver or find_geckodriver(), settings.cache_dir
        )
        self._mapper = LocalMapper(settings.data_dir)
        """Browsers of the opt-in mapper engine (``chromium_bidi=mapper``); always made, so
        that ``stop_local_drivers`` ends those a run with the setting left behind."""
        self._live: dict[str, LiveBrowser] = {}
        self._warm: dict[BrowserKind, list[LiveBrowser]] = {"chromium": [], "firefox": []}
        self._born_with: dict[str, list[str]] = {}
        """Pool browser generation → the user contexts it had when it was started."""
        self._filling: dict[BrowserKind, set[asyncio.Task[None]]] = {
            "chromium": set(),
            "firefox": set(),
        }
        self._pool_file = settings.data_dir / "warm" / f"{os.getpid()}.json"
        self.own_address = own_address(settings)
        """Where this server and its WebDriver/BiDi endpoints listen: every browser's
        requests there fail (SPEC §12)."""

    @property
    def local_driver(self) -> LocalChromedriver | None:
        return self._local

    def stop_local_drivers(self) -> int:
        """End the embedded drivers and every browser they still run; how many drivers."""
        stopped = self._gecko.stop_all() + self._mapper.stop_all()
        if self._local is not None and self._local.stop():
            stopped += 1
        return stopped

    async def endpoint(self, kind: BrowserKind = "chromium") -> str:
        """The WebDriver server URL for a new browser of ``kind``: the configured one, or
        the embedded chromedriver (started if needed), or a new geckodriver for Firefox."""
        if self._settings.webdriver_url:
            return self._settings.webdriver_url.rstrip("/")
        if kind == "firefox":
            if not self.uses_mapper:  # chromedriver's port is known before any browser's start
                await self.endpoint("chromium")  # (browser.banned)
            url = await anyio.to_thread.run_sync(self._gecko.spawn, self._settings.firefox)
        else:
            assert self._local is not None
            url = await anyio.to_thread.run_sync(self._local.ensure)
        await self.own_address.add(url)  # refused by every browser before it is used
        return url

    def _spec(
        self, kind: BrowserKind, insecure: bool, endpoint: str, proxy: ProxySettings | None = None
    ) -> SessionSpec:
        settings = self._settings
        capability = proxy.capability() if proxy is not None else None
        ports = self.own_address.ports  # refused at its network layer too (browser.banned)
        if kind == "firefox":
            prefs = banned.firefox_prefs(settings.firefox_prefs.items(), ports)
            profile = None if settings.webdriver_url else self._gecko.profile(endpoint)
            return SessionSpec(kind, settings.firefox, (), insecure, prefs, profile, capability)
        args = banned.chromium_args(settings.browser_args, ports)
        return SessionSpec(kind, settings.chromium, args, insecure, proxy=capability)

    async def start(
        self,
        kind: BrowserKind,
        *,
        insecure: bool = False,
        pooled: bool = True,
        proxy: ProxySettings | None = None,
    ) -> LiveBrowser:
        """A new browser, tracked from birth, that has loaded no page: from the warm pool
        of its kind when one there is proven empty (secure, no proxy) and ``pooled``, else
        started now — through ``proxy`` when given, its credentials answered over BiDi.

        Raises:
            BrowserUnavailable: no browser could be started.
        """
        pool = self._warm[kind]
        while pooled and not insecure and proxy is None and pool:
            live = pool.pop(0)
            self._save_pool()
            if await self._proven_empty(live, self._born_with.pop(live.ref.generation, [])):
                return live
            log.warning("a pooled %s browser was not empty: ended, never handed out", kind)
            with contextlib.suppress(Exception):
                await self.close(live.ref)
        return await self._launch(kind, insecure, proxy)

    @staticmethod
    async def _user_contexts(live: LiveBrowser) -> list[str]:
        users = await wire.call(live.conn, wire.browser_get_user_contexts())
        return sorted(str(u.get("userContext")) for u in users.get("userContexts") or [])

    async def _proven_empty(self, live: LiveBrowser, born_with: list[str]) -> bool:
        """Whether a pool browser is as it was born: see the module docstring."""
        if live.conn.closed or not live.tracker.pristine or not born_with:
            return False

        async def jars() -> list[wire.GetCookiesResult]:
            cookies = (wire.storage_get_cookies(user_context=u) for u in born_with)
            return await asyncio.gather(*(wire.call(live.conn, c) for c in cookies))

        # Every question at once: one round trip, not 2 + one per user context.
        try:
            tree, users, found = await asyncio.gather(
                wire.call(live.conn, wire.browsing_context_get_tree()),
                self._user_contexts(live),
                jars(),
            )
        except (BidiError, BrowserUnavailable):
            return False
        if users != born_with or any(f.get("cookies") for f in found):
            return False
        tops = tree.get("contexts") or []
        return (
            len(tops) == 1 and tops[0].get("url") == "about:blank" and not tops[0].get("children")
        )

    @property
    def uses_mapper(self) -> bool:
        """Whether local Chromium browsers run on the mapper engine (``browser.mapper``)."""
        return not self._settings.webdriver_url and self._settings.chromium_bidi == "mapper"

    def classic_webdriver(self, ref: BrowserRef) -> bool:
        """Whether ``ref``'s endpoint speaks WebDriver classic (a mapper's does not)."""
        return not self._mapper.owns(ref.endpoint)

    async def _launch(
        self, kind: BrowserKind, insecure: bool, proxy: ProxySettings | None = None
    ) -> LiveBrowser:
        if kind == "chromium" and self.uses_mapper:
            ref = await anyio.to_thread.run_sync(
                functools.partial(
                    self._mapper.launch,
                    self._settings.chromium,
                    args=banned.chromium_args(self._settings.browser_args, self.own_address.ports),
                    insecure=insecure,
                    proxy=proxy.capability() if proxy is not None else None,
                )
            )
        else:
            endpoint = await self.endpoint(kind)
            try:
                started = await anyio.to_thread.run_sync(
                    start_session, endpoint, self._spec(kind, insecure, endpoint, proxy)
                )
                ref = started.ref
                if kind == "firefox" and not self._settings.webdriver_url:
                    self._gecko.record_session(endpoint, ref.session_id)
                elif self._local is not None:  # what ends it if chromedriver cannot
                    self._local.record_browser(started)
            except BaseException:
                await self._end_driver(endpoint)
                raise
        try:
            return await self._open_live(ref, LeaveTracker.at_birth(), install=True, proxy=proxy)
        except BaseException:
            await self._end_browser(ref.endpoint, ref.session_id)
            raise

    async def attach(
        self, ref: BrowserRef, *, proxy: ProxySettings | None = None
    ) -> LiveBrowser | None:
        """The live browser ``ref`` names, or None when it is gone (died, reaped, closed).
        ``proxy``: the proxy it was started with, whose credentials a new connection must
        answer again.

        A cached socket to a remote endpoint (a Grid) is trusted only after the endpoint
        says the session still exists: another replica may have ended it, and a Grid keeps
        its BiDi relay to an ended session open, silent (one HTTP round trip per call; an
        embedded driver closes the socket itself)."""
        cached = self._live.get(ref.generation)
        if cached is not None and not cached.conn.closed:
            if not self._settings.webdriver_url:
                return cached
            try:
                if await session_alive(ref.endpoint, ref.session_id):
                    return cached
            except BrowserUnavailable:
                return None
            await cached.conn.close()
            self._live.pop(ref.generation, None)
            return None
        self._live.pop(ref.generation, None)
        if self._mapper.owns(ref.endpoint) and not await anyio.to_thread.run_sync(
            self._mapper.running, ref.endpoint, ref.session_id
        ):  # its port may be anyone's now: not one request to it (servers.PerBrowserServers)
            await self._forget_dead(ref)
            return None
        try:
            if not await session_alive(ref.endpoint, ref.session_id):
                await self._forget_dead(ref)
                return None
            return await self._open_live(ref, LeaveTracker(), install=False, proxy=proxy)
        except BidiError as exc:
            if exc.code in _GONE:
                return None
            raise
        except BrowserUnavailable:
            await self._forget_dead(ref)
            return None

    async def _forget_dead(self, ref: BrowserRef) -> None:
        """A browser found gone is gone for good: one its driver lost (a driver that
        died or does not answer) is ended, with whatever a dead driver left running;
        a per-browser server's profile (the browser's site data) and state go now, not
        at this data dir's next shutdown."""
        if self._settings.webdriver_url:
            return
        for servers in (self._gecko, self._mapper):
            if servers.owns(ref.endpoint):
                await anyio.to_thread.run_sync(servers.forget_dead, ref.endpoint, ref.session_id)
        if self._local is not None:
            await anyio.to_thread.run_sync(self._local.end_browser, ref.session_id)
        await self.end_orphans()

    async def end_orphans(self) -> int:
        """End the browsers this data dir's dead drivers left running — the embedded
        chromedriver's, each geckodriver's and mapper engine's — and forget those drivers
        (``chromedriver.LocalChromedriver.end_orphans``, ``PerBrowserServers.end_dead``): at
        start, by the reaper, when a browser is found gone. How many drivers or
        processes were found dead."""
        if self._settings.webdriver_url:
            return 0

        def end() -> int:
            found = self._gecko.end_dead() + self._mapper.end_dead()
            return found + (self._local.end_orphans() if self._local is not None else 0)

        return await anyio.to_thread.run_sync(end)

    async def gone(self, endpoint: str, session_id: str, *, here: bool) -> bool:
        """Whether the browser of WebDriver session ``session_id`` at ``endpoint``, one
        of sitekeep's own drivers, is known to be gone (never on a mere doubt): its
        per-browser server of this data dir no longer runs it, the endpoint answers
        "invalid session id", or — ``here``, the browser was started on this machine —
        nothing listens on its loopback endpoint any more (its driver died).

        Always False with ``SITEKEEP_WEBDRIVER_URL``: a Grid ends idle sessions itself
        (its session timeout), and a question every reaper pass would keep them alive."""
        if self._settings.webdriver_url:
            return False
        for servers in (self._gecko, self._mapper):
            if servers.owns(endpoint):
                return not await anyio.to_thread.run_sync(servers.running, endpoint, session_id)
        if await session_gone(endpoint, session_id):
            return True
        return here and await unreachable(endpoint)

    async def _open_live(
        self,
        ref: BrowserRef,
        tracker: LeaveTracker,
        *,
        install: bool,
        proxy: ProxySettings | None = None,
    ) -> LiveBrowser:
        # Its driver and BiDi socket (a geckodriver's Firefox listens on a port of its
        # own) are refused by every browser, this one included, before it is handed out.
        await self.own_address.add(ref.endpoint)
        await self.own_address.add(ref.ws_url)
        if ref.debugger:  # Chromium's DevTools HTTP endpoint (GET /json/close/… closes tabs)
            await self.own_address.add(f"http://{ref.debugger}")
        live = await open_live(
            ref,
            tracker,
            install=install,
            bidi_timeout=self._settings.bidi_timeout,
            navigation_timeout=self._settings.navigation_timeout,
            proxy=proxy,
            own=self.own_address,
        )
        self._live[ref.generation] = live
        return live

    async def close(self, ref: BrowserRef) -> None:
        """End the browser's WebDriver session; a gone one is fine."""
        live = self._live.pop(ref.generation, None)
        if live is not None:
            with contextlib.suppress(Exception):
                await live.conn.close()
        await self._end_browser(ref.endpoint, ref.session_id)

    async def end(self, endpoint: str, session_id: str) -> None:
        """End a browser known only by where it runs — one this process may never have
        reached (the reaper ends runs of every replica; SPEC §13). A gone one is fine."""
        for live in list(self._live.values()):
            if live.ref.session_id == session_id and live.ref.endpoint == endpoint:
                await self.close(live.ref)
                return
        await self._end_browser(endpoint, session_id)

    async def _end_browser(self, endpoint: str, session_id: str) -> None:
        """End a browser: a per-browser server (embedded Firefox's geckodriver, the mapper
        engine's Node process) goes with its whole process group, without W3C Delete
        Session first — that waited ~0.6 s for Firefox to quit cleanly into a profile copy
        that is removed next (0.07 s without it); any other browser through Delete Session."""
        if not await self._end_driver(endpoint, session_id):
            answered = await delete_session(endpoint, session_id)
            if self._local is not None:  # what chromedriver failed to end or to remove
                # A browser lingering after its driver answered gets a moment to exit.
                grace = END_GRACE if answered else 0.0
                await anyio.to_thread.run_sync(
                    functools.partial(self._local.end_browser, session_id, grace=grace)
                )
                await anyio.to_thread.run_sync(self._local.sweep_profiles)

    async def _end_driver(self, endpoint: str, session_id: str | None = None) -> bool:
        """End ``endpoint`` when it is a per-browser server this data dir started (in a
        worker thread: it waits up to ~13 s for the process group) — when ``session_id``
        is given, only if it still runs that session (its port may have been given to
        another browser since); whether it ended one (else Delete Session is the way)."""
        if self._settings.webdriver_url:
            return False
        for servers in (self._gecko, self._mapper):
            if servers.owns(endpoint):
                return await anyio.to_thread.run_sync(servers.stop, endpoint, session_id)
        return False

    # -- the warm pool --------------------------------------------------------------------

    @property
    def warm(self) -> int:
        """How many started browsers wait in the pools now."""
        return sum(len(pool) for pool in self._warm.values())

    async def warm_up(self) -> None:
        """End the browsers of drivers that died (:meth:`end_orphans`) and the pool
        browsers dead processes left behind, then fill the pool (in the
        background; a failure to start one is logged, and the next open starts its own),
        and parse the Public Suffix List in a worker thread."""
        await self.end_orphans()
        await self._end_leftovers()
        self._refill()
        asyncio.get_running_loop().run_in_executor(None, load_suffixes)

    async def pool_ready(self) -> None:
        """Wait until the pools are filled (for benchmarks and tests)."""
        while tasks := [t for filling in self._filling.values() for t in filling]:
            await asyncio.gather(*tasks, return_exceptions=True)

    def replenish(self) -> None:
        """Start refilling the pool in the background. Called once an open is done, not
        when the browser is taken: a browser starting beside a restore slows it down."""
        self._refill()

    def _refill(self) -> None:
        for kind, wanted in self._settings.warm_browsers.items():
            filling = self._filling[kind]
            for _ in range(wanted - len(self._warm[kind]) - len(filling)):
                task = asyncio.get_running_loop().create_task(
                    self._fill_one(kind), name=f"warm-{kind}"
                )
                filling.add(task)
                task.add_done_callback(filling.discard)

    async def _fill_one(self, kind: BrowserKind) -> None:
        try:
            live = await self._launch(kind, False)
        except Exception as exc:  # the pool is an optimisation: an open will start its own
            log.warning("could not start a warm %s browser: %s", kind, exc)
            return
        try:
            self._born_with[live.ref.generation] = await self._user_contexts(live)
        except (BidiError, BrowserUnavailable) as exc:
            log.warning("a warm %s browser did not answer: %s", kind, exc)
            await self.close(live.ref)
            return
        self._warm[kind].append(live)
        self._save_pool()

    def _save_pool(self) -> None:
        refs = [[w.ref.endpoint, w.ref.session_id] for pool in self._warm.values() for w in pool]
        try:
            self._pool_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_private(self._pool_file, json.dumps(refs))
        except OSError as exc:
            log.warning("could not record the warm pool: %s", exc)

    async def _end_leftovers(self, *, every: bool = False) -> None:
        """End the pool browsers recorded by dead processes (``every``: by any process)."""
        folder = self._pool_file.parent
        for path in folder.glob("*.json") if folder.is_dir() else ():
            if not every and (path == self._pool_file or _pid_alive(path.stem)):
                continue
            try:
                refs = json.loads(path.read_text(encoding="utf-8"))
                for endpoint, session_id in refs:
                    await self._end_browser(str(endpoint), str(session_id))
                path.unlink()
            except (OSError, ValueError, TypeError) as exc:
                log.warning("could not end a dead process's warm browsers: %s", exc)

    async def end_pools(self) -> None:
        """End the pool browsers of every process on this data dir (``sitekeep stop``)."""
        await self._end_leftovers(every=True)

    def holds(self, ref: BrowserRef) -> bool:
        """Whether this process holds an open socket to ``ref``'s browser (no round trip)."""
        return (live := self._live.get(ref.generation)) is not None and not live.conn.closed

    async def close_all(self) -> None:
        """End every browser this process has reached (tests, an operator's shutdown)."""
        for live in list(self._live.values()):
            await self.close(live.ref)

    async def aclose(self) -> None:
        """End the warm pool; close this process's sockets — session browsers live on
        (stateless reattach)."""
        # Not cancelled: a WebDriver session being created in a thread would be orphaned.
        await self.pool_ready()
        warm = [live for pool in self._warm.values() for live in pool]
        self._warm = {"chromium": [], "firefox": []}
        for live in warm:
            await self.close(live.ref)
        with contextlib.suppress(OSError):
            self._pool_file.unlink()
        lives, self._live = list(self._live.values()), {}
        await asyncio.gather(*(live.conn.close() for live in lives), return_exceptions=True)


def _pid_alive(name: str) -> bool:
    try:
        os.kill(int(name), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


async def open_live(
    ref: BrowserRef,
    tracker: LeaveTracker,
    *,
    install: bool,
    bidi_timeout: float,
    navigation_timeout: float,
    proxy: ProxySettings | None = None,
    own: Refused | ServerAddress | None = None,
) -> LiveBrowser:
    """A :class:`LiveBrowser` on a new BiDi socket to ``ref.ws_url``: the leave tracker's
    and (Chromium) the SameSite log's listeners subscribed, with ``install`` the preload
    script that captures storage on leave, on the main tab (``ref.context`` if it is
    still there, else the first top-level one, else a new tab). With ``own`` (where the
    server listens), every request of the browser there fails (``browser.guard``); while
    commands wait, the WebDriver endpoint is asked whether the browser is gone.

    Raises:
        BrowserUnavailable: the socket cannot be opened or a command fails.
    """
    conn = await BidiConnection.connect(ref.ws_url, timeout=bidi_timeout)
    conn.watch(lambda: session_gone(ref.endpoint, ref.session_id))
    guard = OwnAddressGuard(own) if own is not None else None
    same_site = SameSiteLog()
    events: tuple[str, ...] = _TRACKED
    if ref.kind == "chromium":  # it reports unspecified SameSite as none (browser.samesite)
        conn.add_listener(wire.NETWORK_RESPONSE_COMPLETED, same_site.on_response_completed)
        events = (*_TRACKED, wire.NETWORK_RESPONSE_COMPLETED)
    try:
        if guard is not None:
            await guard.install(conn)
        if proxy is not None and proxy.has_credentials:
            await ProxyAuth(proxy).install(conn, probe=ref.kind == "chromium")
        conn.add_listener(wire.SCRIPT_MESSAGE, tracker.on_message)
        conn.add_listener(wire.BROWSING_CONTEXT_CONTEXT_CREATED, tracker.on_context_created)
        conn.add_listener(
            wire.BROWSING_CONTEXT_NAVIGATION_COMMITTED, tracker.on_navigation_committed
        )
        conn.add_listener(wire.BROWSING_CONTEXT_CONTEXT_DESTROYED, tracker.on_context_destroyed)
        conn.on_close(tracker.lost)
        await conn.subscribe(events)
        if install:
            preload = wire.script_add_preload_script(
                PRELOAD, arguments=[wire.channel_value(CHANNEL)]
            )
            await wire.call(conn, preload)
        context = await _main_context(conn, ref.context)
    except BaseException:
        await conn.close()
        raise
    return LiveBrowser(
        ref=replace(ref, context=context),
        conn=conn,
        tracker=tracker,
        context=context,
        navigation_timeout=navigation_timeout,
        same_site=same_site,
        guard=guard,
    )


async def _main_context(conn: BidiConnection, wanted: str) -> str:
    tree = await wire.call(conn, wire.browsing_context_get_tree(max_depth=0))
    contexts = [str(c["context"]) for c in tree.get("contexts", [])]
    if wanted in contexts:
        return wanted
    if contexts:
        return contexts[0]
    created = await wire.call(conn, wire.browsing_context_create())
    return str(created["context"])


def own_address(settings: Settings) -> Refused:
    """Where the server of ``settings`` listens, and its configured WebDriver endpoint (a
    Grid), as its browsers resolve names; the embedded drivers are added as they start."""
    return Refused(
        ServerAddress.listening(
            settings.host,
            settings.port,
            browser_args=settings.browser_args,
            firefox_prefs=settings.firefox_prefs,
        ),
        [settings.webdriver_url] if settings.webdriver_url else [],
        browser_args=settings.browser_args,
        firefox_prefs=settings.firefox_prefs,
    )
