"""``sitekeep sessions versions …`` and ``sitekeep profile versions …``: the versions of
saved site data (issue #26) from a shell — list them, show one by host, restore one.

Sessions are acted on as the tenant's operator (an admin, as ``sessions list``); profiles
as ``--as`` (an admin unless ``--member``), through the profile's gate as every caller.
No command prints a value: counts, sizes and the recorded sign-in state only.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sitekeep.cli.support import (
    FLAGS,
    Actor,
    Member,
    Tenant,
    acting,
    command_group,
    console,
    operator,
    show,
    when,
    with_service,
)

if TYPE_CHECKING:
    from rich.table import Table

    from sitekeep.service import Service

__all__ = ["profile_versions_app", "session_versions_app"]

session_versions_app = command_group(
    "Versions of a session's saved site data: each save keeps the one it replaces."
)
profile_versions_app = command_group(
    "Versions of a profile's site data: each capture or import keeps the one it replaces."
)

Key = Annotated[str, typer.Argument(help="The session's key.")]
Profile = Annotated[str, typer.Argument(help="The profile's id.")]
Version = Annotated[str, typer.Argument(help="The version's id, from the list.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]

_FLAGS = {**FLAGS, "key": "KEY", "id": "ID", "version": "VERSION"}
"""A service error's field → the argument of these commands that feeds it."""

Use = Callable[["Service"], Awaitable[dict[str, Any]]]


def _run(use: Use) -> dict[str, Any]:
    return with_service(use, flags=_FLAGS)


def _sign_in(version: dict[str, Any]) -> str:
    states = version.get("sign_in") or {}
    return ", ".join(f"{h}: {s.get('state', '?')}" for h, s in sorted(states.items())) or "—"


def _list_table(versions: list[dict[str, Any]]) -> Table:
    from rich.table import Table

    table = Table("id", "kept", "saved", "hosts", "cookies", "bytes", "sign-in")
    for v in versions:
        table.add_row(
            v["id"],
            when(v["kept_at"]),
            when(v["saved_at"]) or "—",
            ", ".join(h["site"] for h in v["hosts"]) or "—",
            str(sum(h["cookies"] for h in v["hosts"])),
            str(v["bytes"]),
            _sign_in(v),
        )
    return table


def _hosts_table(version: dict[str, Any]) -> Table:
    from rich.table import Table

    table = Table("site", "cookies", "shared", "localStorage", "sessionStorage", "bytes")
    for h in version["hosts"]:
        size = h["cookie_bytes"] + h["local_bytes"] + h["session_bytes"]
        table.add_row(
            h["site"],
            str(h["cookies"]),
            str(h["shared_cookies"]),
            str(h["local"]),
            str(h["session"]),
            str(size),
        )
    return table


def _listing(found: dict[str, Any], as_json: bool, whose: str) -> None:
    if as_json:
        print(json.dumps(found["versions"], indent=2))
    elif not found["versions"]:
        console().print(f"no versions of {whose}")
    else:
        show(_list_table(found["versions"]))


def _one(found: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(found, indent=2))
    else:
        show(_list_table([found]), _hosts_table(found))


def _restored(done: dict[str, Any], whose: str) -> None:
    restored = done["restored"]
    hosts = ", ".join(restored["hosts"]) or "no host"
    typer.echo(f"restored version {restored['id']} of {whose} ({hosts})")
    if done.get("hint"):
        typer.echo(f"note: {done['hint']}")


def _choice(version: str) -> Any:
    from sitekeep.args import VersionChoice, unchecked

    return unchecked(VersionChoice, version=version)


# -- sessions -------------------------------------------------------------------------


@session_versions_app.command("list")
def list_session_versions(key: Key, tenant: Tenant, as_json: AsJson = False) -> None:
    """The versions of the session's saved site data, newest first (never a value)."""
    who = operator(tenant)
    _listing(_run(lambda svc: svc.versions.of_session(who, key)), as_json, f"session {key}")


@session_versions_app.command("show")
def show_session_version(
    key: Key, version: Version, tenant: Tenant, as_json: AsJson = False
) -> None:
    """One version by host: counts and sizes (never a value)."""
    who = operator(tenant)
    _one(_run(lambda svc: svc.versions.session_version(who, key, _choice(version))), as_json)


@session_versions_app.command("restore")
def restore_session_version(key: Key, version: Version, tenant: Tenant) -> None:
    """Make the version the session's saved site data; the one it replaces is kept as a
    version. A live browser keeps what it has."""
    who = operator(tenant)
    done = _run(lambda svc: svc.versions.restore_session_version(who, key, _choice(version)))
    _restored(done, f"session {key}")


# -- profiles -------------------------------------------------------------------------


@profile_versions_app.command("list")
def list_profile_versions(
    ident: Profile,
    tenant: Tenant,
    subject: Actor = "cli",
    member: Member = False,
    as_json: AsJson = False,
) -> None:
    """The versions of the profile's site data, newest first (never a value)."""
    who = acting(tenant, subject, member)
    found = _run(lambda svc: svc.versions.of_profile(who, ident))
    _listing(found, as_json, f"profile {ident}")


@profile_versions_app.command("show")
def show_profile_version(
    ident: Profile,
    version: Version,
    tenant: Tenant,
    subject: Actor = "cli",
    member: Member = False,
    as_json: AsJson = False,
) -> None:
    """One version by host: counts and sizes (never a value)."""
    who = acting(tenant, subject, member)
    _one(_run(lambda svc: svc.versions.profile_version(who, ident, _choice(version))), as_json)


@profile_versions_app.command("restore")
def restore_profile_version(
    ident: Profile, version: Version, tenant: Tenant, subject: Actor = "cli", member: Member = False
) -> None:
    """Make the version the profile's site data; the one it replaces is kept as a version."""
    who = acting(tenant, subject, member)
    done = _run(lambda svc: svc.versions.restore_profile_version(who, ident, _choice(version)))
    _restored(done, f"profile {ident}")
