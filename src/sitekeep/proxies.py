"""The per-tenant proxy pool and the choice of a proxy by country (SPEC §14).

A proxy is ``{name, country, url, auth_secret?}``: ``url`` is ``http://host:port`` and
never holds credentials (:meth:`ProxySettings.from_url` refuses them); they are the
``username`` and ``password`` of the secret ``auth_secret`` names (SPEC §7), revealed
only to start or reattach a browser, and answered over BiDi (``browser.proxy``) — never
in a capability, a URL, a log line or a result. The secret's ``hosts`` rules bind here as
everywhere: it must allow the proxy URL's host (checked when the proxy is put and again
each time its credentials are revealed), so pointing a proxy at one's own server never
reads a secret meant for another host.

Managing the pool (put, delete) is for admins of the tenant; any member may list it and
open sessions through it.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from sitekeep.browser.proxy import ProxySettings
from sitekeep.errors import InvalidInput, NotFound, SecretNotAllowed, quoted
from sitekeep.profiles import check_country
from sitekeep.secrets import check_name, host_allowed
from sitekeep.stores.base import Clock, ProxyRow, ProxyStore, system_clock
from sitekeep.vault import Vault

__all__ = ["Proxies", "proxy_json"]

_KEYS = ("username", "password")


def proxy_json(row: ProxyRow) -> dict[str, Any]:
    """A proxy as every facade shows it (its URL holds no credentials)."""
    return {
        "name": row.name,
        "country": row.country,
        "url": row.url,
        "auth_secret": row.auth_secret,
        "updated_at": row.updated_at,
    }


class Proxies:
    """The pool's use cases over a ``ProxyStore`` and the secrets vault."""

    def __init__(self, store: ProxyStore, vault: Vault, clock: Clock = system_clock) -> None:
        self._store = store
        self._vault = vault
        self._clock = clock

    async def put(
        self, tenant: str, name: str, country: object, url: object, auth_secret: object = None
    ) -> ProxyRow:
        """Create or replace proxy ``name`` of ``tenant``.

        Raises:
            InvalidInput: a bad ``name``, ``country`` or ``url`` (credentials in it too),
                or an ``auth_secret`` that names no secret with ``username`` and
                ``password``, or one whose ``hosts`` do not allow the URL's host;
                nothing stored.
        """
        check_name(name)
        code = check_country(country)
        if not isinstance(url, str):
            raise InvalidInput("a proxy URL is http://host:port", field="url")
        ProxySettings.from_url(url)
        secret = None
        if auth_secret is not None:
            secret = await self._check_secret(tenant, auth_secret, _host(url))
        row = ProxyRow(tenant, name, code, url, secret, self._clock())
        await self._store.put(row)
        return row

    async def _check_secret(self, tenant: str, name: object, host: str) -> str:
        if not isinstance(name, str):
            raise InvalidInput("auth_secret is a secret's name", field="auth_secret")
        try:
            info = await self._vault.get_info(tenant, name)
        except NotFound as exc:
            raise InvalidInput(
                f"auth_secret names no secret of this tenant: {quoted(name)}", field="auth_secret"
            ) from exc
        if not set(_KEYS) <= set(info.keys):
            raise InvalidInput(
                "the auth_secret must hold the keys username and password", field="auth_secret"
            )
        if not host_allowed(host, info.hosts):
            raise InvalidInput(
                f"the auth_secret {quoted(name)} may not be used on the proxy's host "
                f"{quoted(host)}: add the host to the secret's hosts",
                field="auth_secret",
            )
        return name

    async def list(self, tenant: str) -> builtins.list[ProxyRow]:
        """The tenant's proxies, sorted by name."""
        return await self._store.list(tenant)

    async def get(self, tenant: str, name: str) -> ProxyRow:
        """One proxy. Raises: NotFound."""
        row = await self._store.get(tenant, name)
        if row is None:
            raise NotFound("proxy", name, field="name")
        return row

    async def delete(self, tenant: str, name: str) -> None:
        """Delete one proxy. Raises: NotFound."""
        if not await self._store.delete(tenant, name):
            raise NotFound("proxy", name, field="name")

    async def choose(self, tenant: str, country: object) -> ProxyRow:
        """A proxy of ``country`` from the tenant's pool (one at random when several).

        Raises:
            InvalidInput: ``country`` — not a country code, or none of the pool's; the
                message names the countries the pool has.
        """
        code = check_country(country)
        rows = await self._store.list(tenant)
        matching = [r for r in rows if r.country == code]
        if not matching:
            known = sorted({r.country for r in rows})
            have = ", ".join(known) if known else "none (PUT /v1/proxies/{name} adds one)"
            raise InvalidInput(
                f"no proxy for country {code!r}; the known countries are: {have}",
                field="country",
            )
        return random.choice(matching)

    async def settings(self, row: ProxyRow) -> ProxySettings:
        """What a browser needs to run through ``row``: its server and, from the secret,
        its credentials.

        Raises:
            NotFound: the secret is gone. StoreUnavailable: it does not open.
            SecretNotAllowed: the secret's ``hosts`` no longer allow the proxy's host
                (changed since the proxy was put); nothing revealed.
        """
        credentials: Mapping[str, str] = {}
        if row.auth_secret is not None:
            host = _host(row.url)
            info = await self._vault.get_info(row.tenant, row.auth_secret)
            if not host_allowed(host, info.hosts):
                raise SecretNotAllowed(
                    row.auth_secret,
                    host,
                    message=f"secret {quoted(row.auth_secret)} may not be used on the host of "
                    f"proxy {quoted(row.name)} ({quoted(host)}): add the host to the secret's "
                    "hosts",
                )
            credentials = {
                k: await self._vault.reveal(row.tenant, row.auth_secret, k) for k in _KEYS
            }
        return ProxySettings.from_url(
            row.url, username=credentials.get("username"), password=credentials.get("password")
        )


def _host(url: str) -> str:
    """The host name of a checked proxy URL (:meth:`ProxySettings.from_url`), lowercase,
    an IPv6 address without brackets — as :func:`host_allowed` takes it."""
    return (urlsplit(url).hostname or "").lower()
