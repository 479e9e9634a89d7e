"""What each agent operation does in a live browser (SPEC §5, §6, §7).

An operation runs inside one seam call (``sitekeep.seam``) with a narrow :class:`Context`:
the live browser, the refs it may use, the server's own origins, a reader of the tenant's
secrets and a reader of the session's site data. It changes nothing but the browser and
**returns its effects as a value** (:class:`Done`): its result without ``{url, title}``
(the seam adds where the browser landed, or withholds it, SPEC §7), the page when it
already looked, what happened to the snapshot refs, the secrets it typed, the snapshot a
save read. The operation context (``seam.context``) applies and journals those effects
(SPEC §8): a save's snapshot is stored there, once its begin is durable.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sitekeep import history as hist
from sitekeep.address import Refused, ServerAddress
from sitekeep.args import (
    AssertTextArgs,
    ClickArgs,
    NavigateArgs,
    NoArgs,
    PressArgs,
    ReadArgs,
    SaveArgs,
    SelectArgs,
    TypeArgs,
    TypeSecretArgs,
    WaitForArgs,
)
from sitekeep.browser import inputs, keys, page
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.errors import (
    AssertionFailed,
    BidiError,
    InvalidInput,
    SecretNotAllowed,
    StaleRef,
    quoted,
)
from sitekeep.journal.records import RefsStatus
from sitekeep.model import RefMap, SignIn, SiteData
from sitekeep.policy import check_url
from sitekeep.seam.saving import SiteDataRead
from sitekeep.secrets import SecretInfo, host_allowed

__all__ = ["HANDLERS", "MAX_TYPED_SECRETS", "Context", "Done", "SecretsReader", "SiteDataReader"]

_REF = re.compile(r"e([1-9][0-9]*)")
MAX_TYPED_SECRETS = 8


class SecretsReader(Protocol):
    """The caller's tenant's secrets, as an operation may read them (SPEC §7)."""

    async def info(self, name: str) -> SecretInfo: ...

    async def reveal(self, name: str, field: str) -> str: ...


class SiteDataReader(Protocol):
    """The session's site data as an operation may read it (``seam.saving.SiteReader``):
    composed over its snapshot, with the pages the call reached so far; nothing stored."""

    async def read(self, browser: LiveBrowser, *, full: bool, indexed_db: bool) -> SiteDataRead: ...


@dataclass(frozen=True, slots=True)
class Done:
    """What an operation did, as a value the seam folds and journals.

    Attributes:
        result: the operation's result, without ``{url, title}``.
        page: where the browser is, when the operation already looked (saves a round trip).
        refs: what happened to the snapshot refs (SPEC §8).
        snapshot: the new ref map, when ``refs`` is ``replaced``.
        typed: (secret, field) names typed, never values.
        saved: a save's counts (its journal finish carries them), when it saved.
        save: the snapshot a save read, which the operation context stores as the
            session's once the call's begin is durable.
        sign_in: each site's sign-in state as the operation judged the live browser
            (``SessionRecord.sign_in``); None: a save's own (``save.sign_in``), else
            unchanged.
    """

    result: Mapping[str, Any] = field(default_factory=dict)
    page: PageInfo | None = None
    refs: RefsStatus = "unknown"
    snapshot: RefMap | None = None
    typed: tuple[tuple[str, str], ...] = ()
    saved: Mapping[str, Any] | None = None
    save: SiteData | None = None
    sign_in: Mapping[str, SignIn] | None = None


@dataclass(frozen=True, slots=True)
class Context:
    """What an operation may use: the live browser, the refs of its last snapshot that
    are usable now (None while the session is unsettled or after a new browser), the
    server's own origins (SPEC §12), the tenant's secrets and the session's site data."""

    browser: LiveBrowser
    refs: RefMap | None
    own_origins: Sequence[str]
    secrets: SecretsReader
    site_data: SiteDataReader
    own: Refused | ServerAddress | None = None
    """Where the server listens: a URL reaching it in any spelling is refused (403)."""
    secret_typed: bool = False
    """Whether a secret was typed in this session: input that could move a value through
    a clipboard or the like is refused (403, ``browser.inputs``)."""

    async def target(self, ref: str | None, selector: str | None) -> str:
        """The ``sharedId`` a ref (of this browser's last snapshot) or a selector names.

        Raises:
            StaleRef: the ref is not from this browser's last snapshot (field ``ref``).
            InvalidInput / NotFound: a bad selector, or none matching (field ``selector``).
        """
        if selector is not None:
            return await page.locate(self.browser, selector)
        assert ref is not None
        match = _REF.fullmatch(ref)
        if match is None:
            raise InvalidInput("a ref looks like e1, e2… (from snapshot)", field="ref")
        refs = self.refs
        if refs is None or refs.generation != self.browser.ref.generation:
            raise StaleRef(ref, "no snapshot of this browser")
        index = int(match.group(1)) - 1
        if index >= len(refs.shared_ids):
            raise StaleRef(ref, f"snapshot s{refs.snapshot} has {len(refs.shared_ids)} refs")
        return refs.shared_ids[index]

    async def on_element(
        self, ref: str | None, selector: str | None, act: Callable[[str], Awaitable[Any]]
    ) -> Any:
        """Run ``act(sharedId)``; an element whose document is gone makes the ref stale
        (or, for a selector, a :class:`StaleRef` naming the selector: try again)."""
        shared_id = await self.target(ref, selector)
        try:
            return await act(shared_id)
        except BidiError as exc:
            if exc.code != "no such node":
                raise
            if selector is not None:
                raise StaleRef(None, "the page changed", selector=selector) from exc
            raise StaleRef(ref, "the page changed since the snapshot") from exc


Handler = Callable[[Context, Any], Awaitable[Done]]


async def _navigate(call: Context, args: NavigateArgs) -> Done:
    url = check_url(args.url, own=call.own, own_origins=call.own_origins)
    return Done(page=await call.browser.navigate(url, field="url"))


async def _back(call: Context, _: NoArgs) -> Done:
    return Done(page=await call.browser.traverse(-1))


async def _forward(call: Context, _: NoArgs) -> Done:
    return Done(page=await call.browser.traverse(1))


async def _snapshot(call: Context, _: NoArgs) -> Done:
    elements, shared_ids, total = await page.snapshot(call.browser)
    number = call.refs.snapshot + 1 if call.refs else 1
    refs = RefMap(number, call.browser.ref.generation, tuple(shared_ids))
    listed = [
        {"ref": f"e{i + 1}", "role": e.role, "name": e.name, **e.state}
        for i, e in enumerate(elements)
    ]
    result: dict[str, Any] = {"snapshot": f"s{number}", "elements": listed}
    if total > len(listed):
        result["omitted"] = total - len(listed)
    return Done(result, refs="replaced", snapshot=refs)


def _named_by(selector: str | None) -> str:
    """The argument that named the element: ``selector`` when given, else ``ref``."""
    return "ref" if selector is None else "selector"


async def _click(call: Context, args: ClickArgs) -> Done:
    field = _named_by(args.selector)

    async def act(shared_id: str) -> None:
        await page.settle(
            call.browser,
            lambda: page.click(call.browser, shared_id, field, secret_typed=call.secret_typed),
        )

    await call.on_element(args.ref, args.selector, act)
    return Done()


async def _type(call: Context, args: TypeArgs) -> Done:
    # Judged whole before anything is typed: a key code point in it holds to its end.
    text = inputs.presses(args.text, "keyboard")
    call.browser.input.admit(
        [text], secret_typed=call.secret_typed, field="text", alone=True, sticky=True
    )
    await _type_into(call, args.ref, args.selector, args.text, args.submit)
    return Done()


async def _type_into(
    call: Context,
    ref: str | None,
    selector: str | None,
    text: str,
    submit: bool,
    guard: keys.Guard | None = None,
) -> None:
    field = _named_by(selector)

    async def act(shared_id: str) -> None:
        if guard is not None:
            # A secret: nothing a person or an earlier call left held (a key, the middle
            # button) stays down into a session holding a typed value (``browser.inputs``).
            await inputs.release(call.browser)

        def typing() -> Awaitable[None]:
            return keys.type_text(
                call.browser,
                shared_id,
                text,
                submit=submit,
                guard=guard,
                field=field,
                secret_typed=call.secret_typed,
            )

        if submit:
            await page.settle(call.browser, typing)
        else:
            await typing()

    await call.on_element(ref, selector, act)


async def _type_secret(call: Context, args: TypeSecretArgs) -> Done:
    """Type one value of a secret into a text field whose own document's host is allowed,
    checked before every chunk (SPEC §7, §12; ``browser.keys``). A secret revealed is
    counted as typed even when typing fails (the seam masks it from then on)."""
    info = await call.secrets.info(args.secret)
    origin = hist.origin_of((await call.browser.page_info()).url)
    host = hist.host_of(origin) if origin else ""
    if not host or not host_allowed(host, info.hosts):
        raise SecretNotAllowed(args.secret, host or "a page with no host", field="secret")
    value = await call.secrets.reveal(args.secret, args.field)
    typed = ((args.secret, args.field),)
    guard = keys.Guard(args.secret, lambda h: host_allowed(h, info.hosts))
    await _type_into(call, args.ref, args.selector, value, args.submit, guard)
    return Done({"typed": {"secret": args.secret, "field": args.field}}, typed=typed)


async def _press(call: Context, args: PressArgs) -> Done:
    # A bad key, or (SPEC §7) a clipboard chord, is refused before anything is pressed.
    await page.settle(
        call.browser, lambda: page.press(call.browser, args.keys, secret_typed=call.secret_typed)
    )
    return Done()


async def _select(call: Context, args: SelectArgs) -> Done:
    async def act(shared_id: str) -> list[str]:
        chosen: list[str] = await page.settle(
            call.browser,
            lambda: page.select(call.browser, shared_id, args.value, _named_by(args.selector)),
        )
        return chosen

    return Done({"selected": await call.on_element(args.ref, args.selector, act)})


async def _read(call: Context, args: ReadArgs) -> Done:
    text, length = await page.read(call.browser, args.selector, args.max_chars)
    truncated = length > len(text)
    if truncated:
        text += f"\n[… truncated: {len(text)} of {length} characters shown]"
    return Done({"text": text, "length": length, "truncated": truncated}, refs="reused")


async def _screenshot(call: Context, _: NoArgs) -> Done:
    png = await page.screenshot(call.browser)
    return Done({"mime_type": "image/png", "data": base64.b64encode(png).decode()}, refs="reused")


async def _wait_for(call: Context, args: WaitForArgs) -> Done:
    if not await page.wait_for(call.browser, args.text, args.selector, args.timeout):
        field, sought = (
            ("text", args.text) if args.text is not None else ("selector", args.selector)
        )
        what = f"{field} {quoted(sought or '')}"
        raise AssertionFailed(f"{what} did not appear within {args.timeout:g} s", field=field)
    return Done({"found": True}, refs="reused")


async def _assert_text(call: Context, args: AssertTextArgs) -> Done:
    if not await page.text_present(call.browser, args.text, None):
        raise AssertionFailed(f"the page does not show {quoted(args.text)}", field="text")
    return Done({"found": True}, refs="reused")


async def _save(call: Context, args: SaveArgs) -> Done:
    read = await call.site_data.read(call.browser, full=args.full, indexed_db=args.indexed_db)
    return Done(
        read.result(), page=read.page, refs="reused", saved=read.counts(), save=read.snapshot
    )


HANDLERS: dict[str, Handler] = {
    "navigate": _navigate,
    "back": _back,
    "forward": _forward,
    "snapshot": _snapshot,
    "click": _click,
    "type": _type,
    "type_secret": _type_secret,
    "press": _press,
    "select": _select,
    "read": _read,
    "screenshot": _screenshot,
    "wait_for": _wait_for,
    "assert_text": _assert_text,
    "save_site_data": _save,
}
"""Operation name → what it does; arguments as ``sitekeep.args`` validates them."""
