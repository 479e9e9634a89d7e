"""Pure rules: does a URL reach the sitekeep server itself? (SPEC §12; issue #8 item 5)

An agent must never drive sitekeep's own API or admin UI through its browser. Comparing
origins as text misses every other spelling of the same socket: ``127.1``, ``2130706433``,
``0x7f000001``, ``0177.0.0.1``, ``[::ffff:127.0.0.1]``, ``0.0.0.0`` (which Linux connects
to loopback), ``localhost.``, ``x.localhost``, percent-encoded or full-width digits, and any
name that resolves to the server's address. So the host is normalised the way browsers
do (the WHATWG URL Standard §3.5 host parsing: percent-decoding, the IDNA dot and digit
mappings, IPv4 numbers in every radix and any number of parts), resolved the way the
browser resolves it (its ``--host-resolver-rules`` MAP rules, Firefox's
``network.dns.forceResolve``/``localDomains``, the ``localhost`` names browsers keep on
loopback themselves, then the system resolver when the caller supplies one), and the
address **and** port compared with the server's listening socket. Another port on the
same address is someone else (the test sites run on 127.0.0.1 beside the server).

Known limit: names are resolved here, not by the browser; a DNS answer that changes
between the two lookups (rebinding) is only caught by the browser-side check when the
second answer is also seen here.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import ipaddress
import re
import socket
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "IPAddress",
    "Refused",
    "Resolver",
    "ServerAddress",
    "host_of",
    "literal_ip",
    "port_of",
    "system_resolve",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_IPV4_NUMBERS = re.compile(r"[0-9a-fx.]+")
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
"""The full stops IDNA maps to ``.`` (UTS #46), which browsers accept in hosts."""


def host_of(raw: str) -> str:
    """A URL host as a browser reads it: percent-decoded, NFKC-folded (full-width digits),
    IDNA full stops as ``.``, lower case, without brackets or trailing dots."""
    host = unicodedata.normalize("NFKC", unquote(raw)).translate(_DOTS).lower().strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.rstrip(".")


def literal_ip(host: str) -> IPAddress | None:
    """The address a host names literally, or None for a name. IPv4 in every form a
    browser accepts (``127.1``, ``2130706433``, ``0x7f.1``, ``0177.0.0.1``); an
    IPv4-mapped IPv6 address as its IPv4 address."""
    host = host_of(host)
    address: IPAddress
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not host or not _IPV4_NUMBERS.fullmatch(host):
            return None
        try:  # inet_aton reads the classic BSD forms, as browsers do
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def port_of(url: str) -> int | None:
    """The port ``url`` connects to (the scheme's default when none is written), or None."""
    try:
        parts = urlsplit(url.strip())
        return parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None


def _host_rules(browser_args: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The ``MAP pattern target`` rules of Chromium's ``--host-resolver-rules``."""
    rules: list[tuple[str, str]] = []
    for arg in browser_args:
        if not arg.startswith("--host-resolver-rules="):
            continue
        for rule in arg.split("=", 1)[1].strip("\"'").split(","):
            words = rule.split()
            if len(words) == 3 and words[0].upper() == "MAP":
                rules.append((words[1].lower(), words[2]))
    return tuple(rules)


Resolver = Callable[[str], Iterable[IPAddress]]
"""Resolves a name to its addresses (the system resolver, in a thread, for the browser
guard); an empty answer when it cannot."""


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """Where the sitekeep server listens, and how its browsers resolve names.

    Attributes:
        port: the listening port.
        addresses: the addresses it listens on (its host resolved).
        loopback: it listens on loopback or on every address, so every loopback address
            and the unspecified one (``0.0.0.0``, ``::``) reach it.
        rules: the browsers' MAP rules ``(glob, target)``.
        force: Firefox's ``network.dns.forceResolve``: every name resolves to it.
        local_domains: Firefox's ``network.dns.localDomains``: names on loopback.
    """

    port: int
    addresses: frozenset[IPAddress]
    loopback: bool
    rules: tuple[tuple[str, str], ...] = ()
    force: IPAddress | None = None
    local_domains: frozenset[str] = frozenset()

    @classmethod
    def listening(
        cls,
        host: str,
        port: int,
        *,
        browser_args: Iterable[str] = (),
        firefox_prefs: Mapping[str, Any] | None = None,
    ) -> ServerAddress:
        """The server bound to ``host``:``port`` (``0.0.0.0`` and ``::`` mean every
        address: then this machine's own addresses count too)."""
        prefs = firefox_prefs or {}
        addresses = set(_resolve_here(host))
        everywhere = any(a.is_unspecified for a in addresses)
        if everywhere:
            addresses |= set(_resolve_here(socket.gethostname()))
        force = prefs.get("network.dns.forceResolve")
        local = prefs.get("network.dns.localDomains")
        return cls(
            port=port,
            addresses=frozenset(addresses),
            loopback=everywhere or any(a.is_loopback for a in addresses),
            rules=_host_rules(browser_args),
            force=literal_ip(force) if isinstance(force, str) and force else None,
            local_domains=frozenset(
                host_of(d) for d in (local.split(",") if isinstance(local, str) else ())
            ),
        )

    def addresses_of(self, host: str, resolve: Resolver | None = None) -> list[IPAddress]:
        """What the browser connects to for ``host``: the literal address, else the
        browser's own resolution rules, else ``resolve`` (none: nothing known)."""
        host = host_of(host)
        literal = literal_ip(host)
        if literal is not None:
            return [literal]
        if host == "localhost" or host.endswith(".localhost") or host in self.local_domains:
            return [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
        for pattern, target in self.rules:
            if fnmatch.fnmatchcase(host, pattern):
                mapped = literal_ip(target)
                return [mapped] if mapped is not None else []
        if self.force is not None:
            return [self.force]
        return list(resolve(host)) if resolve is not None else []

    def is_own(self, address: IPAddress) -> bool:
        """Whether a connection to ``address`` (on the server's port) reaches the server."""
        if address in self.addresses:
            return True
        return self.loopback and (address.is_loopback or address.is_unspecified)

    def reaches(self, url: str, resolve: Resolver | None = None) -> bool:
        """Whether a request to ``url`` would reach this server (see the module docstring)."""
        if port_of(url) != self.port:
            return False
        try:
            host = urlsplit(url.strip()).hostname
        except ValueError:
            return False
        if not host:
            return False
        return any(self.is_own(a) for a in self.addresses_of(host, resolve))


class Refused:
    """Every socket the browsers must never reach (SPEC §12): the sitekeep server and each
    WebDriver/BiDi endpoint it drives browsers through — the embedded chromedriver, every
    geckodriver and its Firefox's BiDi port, a configured Grid or remote WebDriver server.
    A page that reached one of those could drive another tenant's browser (list its
    sessions, read its cookies and typed fields), so each is refused like the server itself:
    address **and** port, in every spelling (:class:`ServerAddress`).

    Endpoints appear while the server runs (a geckodriver per Firefox, the chromedriver when
    first needed): :meth:`add` tells every subscriber (each browser's guard) before the
    endpoint is used.

    Attributes:
        server: where the sitekeep server itself listens.
    """

    def __init__(
        self,
        server: ServerAddress,
        endpoints: Iterable[str] = (),
        *,
        browser_args: Iterable[str] = (),
        firefox_prefs: Mapping[str, Any] | None = None,
    ) -> None:
        """``endpoints``: WebDriver/BiDi URLs known from the start (a configured Grid)."""
        self.server = server
        self._args = tuple(browser_args)
        self._prefs = dict(firefox_prefs or {})
        self._sockets: dict[tuple[str, int], ServerAddress] = {}
        self._subscribers: list[Callable[[int], Awaitable[None]]] = []
        for url in endpoints:
            self._insert(url)

    @property
    def sockets(self) -> tuple[ServerAddress, ...]:
        """The server first, then every endpoint known so far."""
        return (self.server, *self._sockets.values())

    @property
    def ports(self) -> frozenset[int]:
        """Every refused port (on some address)."""
        return frozenset(s.port for s in self.sockets)

    def known(self, url: str) -> bool:
        """Whether the endpoint at ``url`` is already refused."""
        try:
            host, port = urlsplit(url.strip()).hostname or "", port_of(url)
        except ValueError:
            return False
        return port is not None and (host_of(host), port) in self._sockets

    async def add(self, url: str) -> None:
        """Refuse the endpoint at ``url`` (``http://host:port``, ``ws://…``) from now on;
        every subscriber has been told when this returns. A URL without a host or port
        is ignored."""
        port = self._insert(url)
        if port is not None:
            told = [subscriber(port) for subscriber in list(self._subscribers)]
            await asyncio.gather(*told, return_exceptions=True)

    def _insert(self, url: str) -> int | None:
        """Record the endpoint at ``url``; its port when no socket was refused on it."""
        try:
            host, port = urlsplit(url.strip()).hostname or "", port_of(url)
        except ValueError:
            return None
        if not host or port is None or (host_of(host), port) in self._sockets:
            return None
        new = port not in self.ports
        self._sockets[(host_of(host), port)] = ServerAddress.listening(
            host, port, browser_args=self._args, firefox_prefs=self._prefs
        )
        return port if new else None

    def subscribe(self, subscriber: Callable[[int], Awaitable[None]]) -> None:
        """Call ``subscriber(port)`` for each port refused from now on."""
        self._subscribers.append(subscriber)

    def unsubscribe(self, subscriber: Callable[[int], Awaitable[None]]) -> None:
        with contextlib.suppress(ValueError):
            self._subscribers.remove(subscriber)

    def on_port(self, port: int | None) -> list[ServerAddress]:
        """The refused sockets on ``port``."""
        return [s for s in self.sockets if s.port == port]

    def reaches(self, url: str, resolve: Resolver | None = None) -> bool:
        """Whether a request to ``url`` would reach a refused socket."""
        return any(s.reaches(url, resolve) for s in self.on_port(port_of(url)))


def _resolve_here(host: str) -> list[IPAddress]:
    literal = literal_ip(host)
    if literal is not None:
        return [literal]
    return system_resolve(host)


def system_resolve(host: str) -> list[IPAddress]:
    """The system resolver's addresses for ``host`` (blocking); none when it fails."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    found: list[IPAddress] = []
    for info in infos:
        address = literal_ip(str(info[4][0]).split("%", 1)[0])
        if address is not None and address not in found:
            found.append(address)
    return found
