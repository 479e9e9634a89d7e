"""The Python client of the HTTP API (SPEC §5), sync and async, on httpx.

One method per route, named as the operation, its keyword arguments the route's body
fields; each returns the route's JSON. A failed call raises the server's own exception
(``sitekeep.errors``), rebuilt from the ``{"error": {type, message, field?…}}`` body, so
``except NotFound`` works on both sides of the wire::

    from sitekeep import Client

    with Client("http://127.0.0.1:8700", token) as client:
        demo = client.session("demo")
        demo.open(url="https://example.org/login")
        ...                                   # sign in
        demo.save_site_data()

``AsyncClient`` is the same with ``await``. The methods are written once
(:class:`_SessionCalls`): a sync handle's ``_call`` returns the JSON, an async handle's an
awaitable of it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

import httpx

from sitekeep.errors import SitekeepError, Unreachable, error_from_json

__all__ = ["JSON", "AsyncClient", "AsyncProfile", "AsyncSession", "Client", "Profile", "Session"]

JSON = dict[str, Any]
R = TypeVar("R")
Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
Then = Callable[[JSON], None] | None

DEFAULT_URL = "http://127.0.0.1:8700"


def _body(**fields: Any) -> JSON:
    """The fields that were given (None means "not given": the server's default)."""
    return {name: value for name, value in fields.items() if value is not None}


def _result(response: httpx.Response) -> JSON:
    """The JSON of a 2xx response.

    Raises:
        SitekeepError: the subclass the error body names (``error_from_json``).
    """
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if response.is_success and isinstance(payload, dict):
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        raise error_from_json(payload["error"])
    raise SitekeepError(f"HTTP {response.status_code} from {response.request.url.path}")


class _VersionCalls(Generic[R]):
    """The routes of the versions of saved site data (issue #26), a session's or a
    profile's; ``R`` is what ``_call`` returns."""

    def _call(self, method: Method, path: str, body: JSON | None = None, then: Then = None) -> R:
        raise NotImplementedError

    def _versions(self, tail: str = "") -> str:
        raise NotImplementedError

    def versions(self) -> R:
        """``GET …/versions``: the versions of the saved site data, newest first — per
        host counts, sizes and the recorded sign-in state, never a value."""
        return self._call("GET", self._versions())

    def version(self, version: str, site: str | None = None) -> R:
        """``GET …/versions/{version}`` (as listed), or ``…/{version}/hosts/{site}``: one
        host of it in full (who may see the values)."""
        tail = f"/{quote(version, safe='')}"
        if site is not None:
            tail += f"/hosts/{quote(site, safe='')}"
        return self._call("GET", self._versions(tail))

    def restore_version(self, version: str) -> R:
        """``POST …/versions/{version}/restore``: make the version the saved site data;
        the one it replaces is kept as a version."""
        return self._call("POST", self._versions(f"/{quote(version, safe='')}/restore"))


class _SessionCalls(_VersionCalls[R]):
    """The session routes of SPEC §5; ``R`` is what ``_call`` returns."""

    def __init__(self, key: str | None) -> None:
        self.key = key

    def _versions(self, tail: str = "") -> str:
        return self._path(f"/site-data/versions{tail}")

    def _adopt(self, result: JSON) -> None:
        self.key = str(result["key"])

    def _path(self, tail: str = "") -> str:
        if self.key is None:
            raise SitekeepError("this session has no key yet: call open() first")
        return f"/v1/sessions/{quote(self.key, safe='')}{tail}"

    def open(
        self,
        *,
        browser: str | None = None,
        url: str | None = None,
        profile: str | None = None,
        restore_site_data: bool | None = None,
        fresh: bool | None = None,
        insecure: bool | None = None,
        country: str | None = None,
        keep_user_agent: bool | None = None,
        autosave: bool | None = None,
    ) -> R:
        """``POST /v1/sessions``: open (or return to) the session's browser; a handle
        made without a key takes the key the server chose. Returns ``{key, url, title,
        site_data?, switched_browser?, hint?}``."""
        body = _body(
            key=self.key,
            browser=browser,
            url=url,
            profile=profile,
            restore_site_data=restore_site_data,
            fresh=fresh,
            insecure=insecure,
            country=country,
            keep_user_agent=keep_user_agent,
            autosave=autosave,
        )
        return self._call("POST", "/v1/sessions", body, self._adopt)

    def current(self) -> R:
        """``GET /v1/sessions/{key}``: the current page and a site-data summary."""
        return self._call("GET", self._path())

    def navigate(self, url: str) -> R:
        """``POST …/navigate``: go to an http(s) URL; returns ``{url, title}``."""
        return self._call("POST", self._path("/navigate"), {"url": url})

    def back(self) -> R:
        """``POST …/back``."""
        return self._call("POST", self._path("/back"))

    def forward(self) -> R:
        """``POST …/forward``."""
        return self._call("POST", self._path("/forward"))

    def snapshot(self) -> R:
        """``POST …/snapshot``: interactive elements and headings with refs ``e1``…"""
        return self._call("POST", self._path("/snapshot"))

    def click(self, ref: str | None = None, *, selector: str | None = None) -> R:
        """``POST …/click`` on a ref from :meth:`snapshot` or a CSS selector."""
        return self._call("POST", self._path("/click"), _body(ref=ref, selector=selector))

    def type(
        self,
        ref: str | None = None,
        *,
        text: str,
        selector: str | None = None,
        submit: bool = False,
    ) -> R:
        """``POST …/type``: replace the field's text (Enter after it with ``submit``)."""
        body = _body(ref=ref, selector=selector, text=text, submit=submit)
        return self._call("POST", self._path("/type"), body)

    def type_secret(
        self,
        ref: str | None = None,
        *,
        secret: str,
        field: str,
        selector: str | None = None,
        submit: bool = False,
    ) -> R:
        """``POST …/type-secret``: type one value of a stored secret (SPEC §7)."""
        body = _body(ref=ref, selector=selector, secret=secret, field=field, submit=submit)
        return self._call("POST", self._path("/type-secret"), body)

    def press(self, keys: str) -> R:
        """``POST …/press``: ``Enter``, ``Tab``, ``Control+A``…"""
        return self._call("POST", self._path("/press"), {"keys": keys})

    def select(self, ref: str | None = None, *, value: str, selector: str | None = None) -> R:
        """``POST …/select``: pick an option by value or visible label."""
        body = _body(ref=ref, selector=selector, value=value)
        return self._call("POST", self._path("/select"), body)

    def read(self, selector: str | None = None, *, max_chars: int | None = None) -> R:
        """``POST …/read``: visible text, truncated with a marker."""
        body = _body(selector=selector, max_chars=max_chars)
        return self._call("POST", self._path("/read"), body)

    def screenshot(self) -> R:
        """``POST …/screenshot``: a PNG, base64, in the result."""
        return self._call("POST", self._path("/screenshot"))

    def save_site_data(
        self, *, profile: str | None = None, indexed_db: bool = False, full: bool = False
    ) -> R:
        """``POST …/save-site-data``: snapshot the browser's cookies and storage."""
        body = _body(profile=profile, indexed_db=indexed_db, full=full)
        return self._call("POST", self._path("/save-site-data"), body)

    def run_flow(
        self, steps: list[Mapping[str, Any]], on_error: Literal["stop", "continue"] = "stop"
    ) -> R:
        """``POST …/flows``: steps ``[{op, on_error?, …args}]`` run in one call (SPEC §6)."""
        body = {"steps": [dict(step) for step in steps], "on_error": on_error}
        return self._call("POST", self._path("/flows"), body)

    def site_data(self, site: str | None = None) -> R:
        """``GET …/site-data`` (counts by host) or ``…/site-data/{site}`` (one host)."""
        tail = "/site-data" if site is None else f"/site-data/{quote(site, safe='')}"
        return self._call("GET", self._path(tail))

    def checks(self, host: str | None = None) -> R:
        """``GET …/checks`` (every sign-in check, by host) or ``…/checks/{host}``."""
        tail = "/checks" if host is None else f"/checks/{quote(host, safe='')}"
        return self._call("GET", self._path(tail))

    def set_check(
        self,
        host: str,
        *,
        url: str,
        signed_in: Mapping[str, str],
        signed_out: Mapping[str, str] | None = None,
    ) -> R:
        """``PUT …/checks/{host}``: define the sign-in check of ``host`` — ``url`` on that
        host, ``signed_in`` / ``signed_out`` each ``{"selector": …}`` or ``{"text": …}``."""
        body = _body(url=url, signed_in=dict(signed_in), signed_out=signed_out)
        return self._call("PUT", self._path(f"/checks/{quote(host, safe='')}"), body)

    def delete_check(self, host: str) -> R:
        """``DELETE …/checks/{host}``: remove the sign-in check of ``host``."""
        return self._call("DELETE", self._path(f"/checks/{quote(host, safe='')}"))

    def check(self) -> R:
        """``POST …/check``: judge every site's sign-in state now: ``{key, sign_in}``."""
        return self._call("POST", self._path("/check"))

    def webdriver(self) -> R:
        """``GET …/webdriver``: hand the live browser over (admin or owner; SPEC §21) —
        ``{key, browser, webdriver_url, session_id, bidi_url, context, expires_at}``,
        endpoints sitekeep serves that reach this browser only, until ``expires_at``."""
        return self._call("GET", self._path("/webdriver"))

    def close_browser(self, *, autosave: bool | None = None) -> R:
        """``DELETE …/browser``: close the browser; record, history and snapshot stay.
        It saves by itself first; ``autosave=False``: this close does not."""
        tail = "/browser" if autosave is None else f"/browser?autosave={str(autosave).lower()}"
        return self._call("DELETE", self._path(tail))

    def delete(self) -> R:
        """``DELETE /v1/sessions/{key}``: the session and everything keyed to it."""
        return self._call("DELETE", self._path())


class _ProfileCalls(_VersionCalls[R]):
    """A profile's routes (the versions of its site data); ``R`` is what ``_call``
    returns."""

    def __init__(self, ident: str) -> None:
        self.id = ident

    def _versions(self, tail: str = "") -> str:
        return f"/v1/profiles/{quote(self.id, safe='')}/versions{tail}"


class _Sync:
    """A handle's calls on an ``httpx.Client``: each returns the route's JSON."""

    _http: httpx.Client

    def _call(self, method: Method, path: str, body: JSON | None = None, then: Then = None) -> JSON:
        result = _send(self._http, method, path, body)
        if then is not None:
            then(result)
        return result


class _Async:
    """A handle's calls on an ``httpx.AsyncClient``: each is awaited."""

    _http: httpx.AsyncClient

    async def _call(
        self, method: Method, path: str, body: JSON | None = None, then: Then = None
    ) -> JSON:
        try:
            response = await self._http.request(method, path, json=body)
        except httpx.TransportError as exc:
            raise _unreachable(self._http.base_url, exc) from exc
        result = _result(response)
        if then is not None:
            then(result)
        return result


class Session(_Sync, _SessionCalls[JSON]):
    """A session's routes on a :class:`Client`; each call returns the route's JSON."""

    def __init__(self, http: httpx.Client, key: str | None) -> None:
        super().__init__(key)
        self._http = http


class AsyncSession(_Async, _SessionCalls[Awaitable[JSON]]):
    """A session's routes on an :class:`AsyncClient`; each call is awaited."""

    def __init__(self, http: httpx.AsyncClient, key: str | None) -> None:
        super().__init__(key)
        self._http = http


class Profile(_Sync, _ProfileCalls[JSON]):
    """A profile's routes on a :class:`Client` (the versions of its site data)."""

    def __init__(self, http: httpx.Client, ident: str) -> None:
        super().__init__(ident)
        self._http = http


class AsyncProfile(_Async, _ProfileCalls[Awaitable[JSON]]):
    """A profile's routes on an :class:`AsyncClient`; each call is awaited."""

    def __init__(self, http: httpx.AsyncClient, ident: str) -> None:
        super().__init__(ident)
        self._http = http


def _unreachable(base: httpx.URL, exc: httpx.TransportError) -> Unreachable:
    return Unreachable(f"the sitekeep server at {base} cannot be reached ({type(exc).__name__})")


def _send(http: httpx.Client, method: Method, path: str, body: JSON | None = None) -> JSON:
    try:
        return _result(http.request(method, path, json=body))
    except httpx.TransportError as exc:
        raise _unreachable(http.base_url, exc) from exc


def _options(url: str | None, token: str | None, timeout: float) -> JSON:
    token = token or os.environ.get("SITEKEEP_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    base = url or os.environ.get("SITEKEEP_URL") or DEFAULT_URL
    return {"base_url": base, "headers": headers, "timeout": timeout}


class Client:
    """A sync client of one sitekeep server.

    Args:
        url: the server's base URL (default ``SITEKEEP_URL``, else http://127.0.0.1:8700).
        token: a bearer token (default ``SITEKEEP_TOKEN``).
        timeout: seconds per call (a first open starts a browser: allow tens of seconds).
        transport: an httpx transport, e.g. to reach the app in process.

    Raises (from every call):
        SitekeepError: the subclass the server raised; ``Unreachable`` when the server
            cannot be reached at all.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(transport=transport, **_options(url, token, timeout))

    def session(self, key: str | None = None) -> Session:
        """A handle on session ``key`` (none yet: :meth:`Session.open` takes the server's)."""
        return Session(self._http, key)

    def profile(self, ident: str) -> Profile:
        """A handle on profile ``ident`` (the versions of its site data)."""
        return Profile(self._http, ident)

    def sessions(self) -> JSON:
        """``GET /v1/sessions``: ``{"sessions": [...]}``, the caller's sessions."""
        return _send(self._http, "GET", "/v1/sessions")

    def info(self) -> JSON:
        """``GET /``: the service's name, version and links."""
        return _send(self._http, "GET", "/")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """The async twin of :class:`Client` (same arguments; every call is awaited)."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(transport=transport, **_options(url, token, timeout))

    def session(self, key: str | None = None) -> AsyncSession:
        """A handle on session ``key`` (none yet: :meth:`AsyncSession.open` takes one)."""
        return AsyncSession(self._http, key)

    def profile(self, ident: str) -> AsyncProfile:
        """A handle on profile ``ident`` (the versions of its site data)."""
        return AsyncProfile(self._http, ident)

    async def sessions(self) -> JSON:
        """``GET /v1/sessions``: ``{"sessions": [...]}``, the caller's sessions."""
        return await self.session()._call("GET", "/v1/sessions")

    async def info(self) -> JSON:
        """``GET /``: the service's name, version and links."""
        return await self.session()._call("GET", "/")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
