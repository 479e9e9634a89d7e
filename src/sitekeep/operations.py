"""What each agent operation does in a live browser (SPEC §5, §6, §7).

An operation runs inside one seam call (``Service._seam``) with a :class:`Call`: the live
browser, the session record as the call changes it (refs, secrets typed, history flushed
by a flow) and the services it needs. It returns its result without ``{url, title}``:
the seam adds where the browser landed, or withholds it (SPEC §7).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sitekeep import history as hist
from sitekeep.browser import page
from sitekeep.browser.live import LiveBrowser, PageInfo
from sitekeep.errors import AssertionFailed, BidiError, InvalidInput, SecretNotAllowed, StaleRef
from sitekeep.model import Principal, RefMap, SessionRecord
from sitekeep.policy import check_url
from sitekeep.secrets import host_allowed
from sitekeep.steps import (
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

if TYPE_CHECKING:
    from sitekeep.service import Service

__all__ = ["HANDLERS", "Call"]

_REF = re.compile(r"e([1-9][0-9]*)")
MAX_TYPED_SECRETS = 8


@dataclass
class Call:
    """One seam call's working state.

    Attributes:
        page: where the browser is, when an operation already looked (saves a round trip).
        landed: URLs the call reached, in order, for the history (SPEC §4).
    """

    service: Service
    who: Principal
    browser: LiveBrowser
    record: SessionRecord
    page: PageInfo | None = None
    landed: list[str] = field(default_factory=list)

    async def target(self, ref: str | None, selector: str | None) -> str:
        """The ``sharedId`` a ref (of this browser's last snapshot) or a selector names.

        Raises:
            StaleRef: the ref is not from this browser's last snapshot.
            InvalidInput / NotFound: a bad selector, or none matching.
        """
        if selector is not None:
            return await page.locate(self.browser, selector)
        assert ref is not None
        match = _REF.fullmatch(ref)
        if match is None:
            raise InvalidInput("a ref looks like e1, e2… (from snapshot)", field="ref")
        refs = self.record.refs
        if refs is None or refs.generation != self.browser.ref.generation:
            raise StaleRef(ref, "no snapshot of this browser")
        index = int(match.group(1)) - 1
        if index >= len(refs.shared_ids):
            raise StaleRef(ref, f"snapshot s{refs.snapshot} has {len(refs.shared_ids)} refs")
        return refs.shared_ids[index]

    async def on_element(
        self, ref: str | None, selector: str | None, act: Callable[[str], Awaitable[Any]]
    ) -> Any:
        """Run ``act(sharedId)``; an element whose document is gone makes the ref stale."""
        shared_id = await self.target(ref, selector)
        try:
            return await act(shared_id)
        except BidiError as exc:
            if exc.code == "no such node":
                raise StaleRef(
                    ref or selector or "", "the page changed since the snapshot"
                ) from exc
            raise


Handler = Callable[[Call, Any], Awaitable[dict[str, Any]]]


async def _navigate(call: Call, args: NavigateArgs) -> dict[str, Any]:
    url = check_url(args.url, own=call.service.own_address, own_origins=call.service.own_origins())
    call.page = await call.browser.navigate(url)
    return {}


async def _back(call: Call, _: NoArgs) -> dict[str, Any]:
    call.page = await call.browser.traverse(-1)
    return {}


async def _forward(call: Call, _: NoArgs) -> dict[str, Any]:
    call.page = await call.browser.traverse(1)
    return {}


async def _snapshot(call: Call, _: NoArgs) -> dict[str, Any]:
    elements, shared_ids, total = await page.snapshot(call.browser)
    number = call.record.refs.snapshot + 1 if call.record.refs else 1
    refs = RefMap(number, call.browser.ref.generation, tuple(shared_ids))
    call.record = replace(call.record, refs=refs)
    listed = [
        {"ref": f"e{i + 1}", "role": e.role, "name": e.name, **e.state}
        for i, e in enumerate(elements)
    ]
    result: dict[str, Any] = {"snapshot": f"s{number}", "elements": listed}
    if total > len(listed):
        result["omitted"] = total - len(listed)
    return result


async def _click(call: Call, args: ClickArgs) -> dict[str, Any]:
    async def act(shared_id: str) -> None:
        await page.settle(call.browser, lambda: page.click(call.browser, shared_id))

    await call.on_element(args.ref, args.selector, act)
    return {}


async def _type(call: Call, args: TypeArgs) -> dict[str, Any]:
    await _type_into(call, args.ref, args.selector, args.text, args.submit)
    return {}


async def _type_into(
    call: Call, ref: str | None, selector: str | None, text: str, submit: bool
) -> None:
    async def act(shared_id: str) -> None:
        typing = page.type_text(call.browser, shared_id, text, submit=submit)
        if submit:
            await page.settle(call.browser, lambda: typing)
        else:
            await typing

    await call.on_element(ref, selector, act)


async def _type_secret(call: Call, args: TypeSecretArgs) -> dict[str, Any]:
    """Type one value of a secret, only while the page's host is allowed (SPEC §7)."""
    service, tenant = call.service, call.who.tenant
    info = await service.secrets.get_info(tenant, args.secret)
    origin = hist.origin_of((await call.browser.page_info()).url)
    host = hist.host_of(origin) if origin else ""
    if not host or not host_allowed(host, info.hosts):
        raise SecretNotAllowed(args.secret, host or "a page with no host")
    value = await service.secrets.reveal(tenant, args.secret, args.field)
    typed = (*[t for t in call.record.typed_secrets if t != (args.secret, args.field)],)
    call.record = replace(
        call.record, typed_secrets=(*typed, (args.secret, args.field))[-MAX_TYPED_SECRETS:]
    )
    await _type_into(call, args.ref, args.selector, value, args.submit)
    return {"typed": {"secret": args.secret, "field": args.field}}


async def _press(call: Call, args: PressArgs) -> dict[str, Any]:
    page.parse_keys(args.keys)  # a bad key is refused before anything is pressed
    await page.settle(call.browser, lambda: page.press(call.browser, args.keys))
    return {}


async def _select(call: Call, args: SelectArgs) -> dict[str, Any]:
    async def act(shared_id: str) -> list[str]:
        chosen: list[str] = await page.settle(
            call.browser, lambda: page.select(call.browser, shared_id, args.value)
        )
        return chosen

    return {"selected": await call.on_element(args.ref, args.selector, act)}


async def _read(call: Call, args: ReadArgs) -> dict[str, Any]:
    text, length = await page.read(call.browser, args.selector, args.max_chars)
    truncated = length > len(text)
    if truncated:
        text += f"\n[… truncated: {len(text)} of {length} characters shown]"
    return {"text": text, "length": length, "truncated": truncated}


async def _screenshot(call: Call, _: NoArgs) -> dict[str, Any]:
    png = await page.screenshot(call.browser)
    return {"mime_type": "image/png", "data": base64.b64encode(png).decode()}


async def _wait_for(call: Call, args: WaitForArgs) -> dict[str, Any]:
    if not await page.wait_for(call.browser, args.text, args.selector, args.timeout):
        what = f"text {args.text!r}" if args.text is not None else f"selector {args.selector!r}"
        raise AssertionFailed(f"{what} did not appear within {args.timeout:g} s")
    return {"found": True}


async def _assert_text(call: Call, args: AssertTextArgs) -> dict[str, Any]:
    if not await page.text_present(call.browser, args.text, None):
        raise AssertionFailed(f"the page does not show {args.text!r}")
    return {"found": True}


async def _save(call: Call, args: SaveArgs) -> dict[str, Any]:
    return await call.service.save_in(call, indexed_db=args.indexed_db)


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
"""Operation name → what it does; arguments as ``sitekeep.steps`` validates them."""
