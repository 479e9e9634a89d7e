"""``sitekeep keys rotate`` (SPEC §12) on a real data dir (SQLite, the key file): every
secret, profile, snapshot, session mask and version of a snapshot or a profile (issue #26)
resealed under the new key and still opening;
a blob moved to another record, tenant or kind never opens; a write landing during the
pass is never overwritten; old keys retired only once nothing uses them."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sitekeep.cli import app
from sitekeep.config import Settings
from sitekeep.errors import StoreUnavailable
from sitekeep.model import Cookie, OriginStorage, Principal, SessionRecord, SiteData
from sitekeep.profiles import captured
from sitekeep.service import Service
from sitekeep.stores.cipher import Cipher, KeyFile
from support import cli_data_dir, on_service

pytestmark = pytest.mark.anyio

WHO = Principal("t1", "ada", "admin")
PASS = "dummy-rotate-pass-1f0c"
TYPED = "dummy-rotate-typed-5a2e"
APP = "http://app.example.test:8001"


def site_data(value: str) -> SiteData:
    cookie = Cookie("sessionid", value, "app.example.test", http_only=True)
    return SiteData(cookies=(cookie,), origins={APP: OriginStorage({"k": value})}, saved_at=1.0)


async def seed_session(
    svc: Service, key: str, snapshot: SiteData, tenant: str = "t1", mask: tuple[str, ...] = ()
) -> None:
    now = time.time()
    record = svc.parts.seam.records.with_mask(
        SessionRecord(tenant, key, "ada", "chromium", now, now), mask
    )
    who = Principal(tenant, "ada", "admin")

    async def body() -> dict[str, Any]:
        await svc.parts.seam.records.load(tenant, key)
        await svc.parts.seam.records.put(record)
        await svc.parts.seam.records.put_snapshot(tenant, key, snapshot)
        return {}

    await svc.parts.seam.call(who, key, lambda _: body(), inspect=False)


async def seed(svc: Service) -> str:
    """A secret, a profile with site data and one version of it, and a session with a
    snapshot, one version of it and a mask; the profile's id."""
    await svc.parts.vault.put("t1", "login", "", ["app.example.test"], {"password": PASS})
    row = await svc.parts.profiles.create(WHO, "staging")
    for value in ("dummy-profile-before", "dummy-profile"):
        await svc.parts.profiles.write(WHO, row.id, captured(site_data(value), None, 2.0))
    await seed_session(svc, "s1", site_data("dummy-snapshot-before"))
    await seed_session(svc, "s1", site_data("dummy-snapshot"), mask=(TYPED,))
    return row.id


async def everything_opens(svc: Service, profile: str) -> None:
    assert await svc.parts.vault.reveal("t1", "login", "password") == PASS
    loaded = await svc.parts.profiles.load(WHO, profile, "use")
    assert loaded.site_data.cookies[0].value == "dummy-profile"
    snapshot = await svc.parts.seam.records.load_snapshot("t1", "s1")
    assert snapshot is not None and snapshot.cookies[0].value == "dummy-snapshot"
    record = await svc.parts.seam.records.load("t1", "s1")
    assert record is not None and svc.parts.seam.records.sealed_mask(record) == [TYPED]
    [(_, kept)] = await svc.parts.seam.records.versions.load_all("t1", "s1")
    assert kept.cookies[0].value == "dummy-snapshot-before"
    [(_, was)] = await svc.parts.profiles.versions(WHO, profile)
    assert was.cookies[0].value == "dummy-profile-before"


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    cli_data_dir(monkeypatch, tmp_path / "data")
    return Settings()


def test_rotate_reseals_every_blob_and_retire_drops_only_keys_nothing_uses(
    settings: Settings,
) -> None:
    profile = on_service(settings, seed)
    old = KeyFile(settings.key_file).ring().current.id

    result = CliRunner().invoke(app, ["keys", "rotate"])
    assert result.exit_code == 0, result.stderr
    assert "resealing" in result.stderr and PASS not in result.stdout + result.stderr
    assert re.search(r"mask\W+1\W+0", result.stdout), result.stdout
    assert re.search(r"site-data-version\W+1\W+0", result.stdout), result.stdout
    assert re.search(r"profile-version\W+1\W+0", result.stdout), result.stdout
    ring = KeyFile(settings.key_file).ring()
    new = ring.current.id
    assert new != old and ring.ids == (old, new)  # the old key is kept
    assert on_service(settings, lambda svc: svc.keys.key_use()) == {new: 6}
    on_service(settings, lambda svc: everything_opens(svc, profile))

    again = CliRunner().invoke(app, ["keys", "rotate", "--no-new-key", "--retire"])
    assert again.exit_code == 0, again.stderr
    assert f"retired keys no blob uses: {old}" in again.stderr
    assert KeyFile(settings.key_file).ring().ids == (new,)
    on_service(settings, lambda svc: everything_opens(svc, profile))


async def test_a_blob_moved_to_another_record_tenant_or_kind_never_opens(
    settings: Settings,
) -> None:
    svc = Service.from_settings(settings)
    try:
        profile = await seed(svc)
        other = await svc.parts.profiles.create(WHO, "empty")
        theirs = await svc.parts.profiles.create(Principal("t2", "ada", "admin"), "theirs")
        sealed = (await svc.parts.stores.profiles.get("t1", profile)).sealed  # type: ignore[union-attr]
        assert sealed is not None
        for moved in (other, theirs):  # another record, another tenant
            await svc.parts.stores.profiles.put(type(moved)(**{**_fields(moved), "sealed": sealed}))
        await svc.parts.stores.sessions.set("site-data/t1/s2", sealed)  # another kind
        await seed_session(svc, "s3", site_data("x"), tenant="t2")
        snap = await svc.parts.stores.sessions.get("site-data/t1/s1")
        assert snap is not None
        await svc.parts.stores.sessions.set("site-data/t2/s3", snap)  # another tenant
        [version] = await svc.parts.stores.sessions.keys("site-data-version/t1/s1/")
        kept = await svc.parts.stores.sessions.get(version)
        assert kept is not None
        vid = version.rsplit("/", 1)[1]
        for place in ("t1/s2/" + vid, "t2/s1/" + vid, "t1/s1/" + ODD):
            await svc.parts.stores.sessions.set("site-data-version/" + place, kept)

        KeyFile(settings.key_file).add()
        report = await svc.keys.reseal_all()
        assert report.counts["profile"] == {"resealed": 1, "unreadable": 2}
        assert report.counts["site-data"] == {"resealed": 1, "unreadable": 2}
        assert report.counts["site-data-version"] == {"resealed": 1, "unreadable": 3}
        assert report.counts["profile-version"] == {"resealed": 1}
        assert not report.complete
        with pytest.raises(StoreUnavailable):
            await svc.parts.profiles.load(WHO, other.id, "use")
        with pytest.raises(StoreUnavailable):
            await svc.parts.profiles.load(Principal("t2", "ada", "admin"), theirs.id, "use")
        for tenant, key in (("t1", "s2"), ("t2", "s3")):
            with pytest.raises(StoreUnavailable):
                await svc.parts.seam.records.load_snapshot(tenant, key)
        versions = svc.parts.seam.records.versions
        for tenant, key, ident in (("t1", "s2", vid), ("t2", "s1", vid), ("t1", "s1", ODD)):
            with pytest.raises(StoreUnavailable):  # another session, tenant or id
                await versions.load(tenant, key, ident)
        await svc.parts.stores.sessions.delete(f"site-data-version/t1/s1/{ODD}")
        await everything_opens(svc, profile)
    finally:
        await svc.aclose()


ODD = "v0000000000001-0000"


def _fields(row: Any) -> dict[str, Any]:
    return {name: getattr(row, name) for name in row.__slots__}


async def test_a_save_landing_between_the_read_and_the_write_is_never_overwritten(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another replica (its lock run out) saves the snapshot right after the rotation read
    it: the rotation's write over the old revision fails, it reads again and reseals the
    new snapshot."""
    svc = Service.from_settings(settings)
    try:
        await seed_session(svc, "s1", site_data("dummy-before"))
        KeyFile(settings.key_file).add()
        store = svc.parts.stores.sessions
        real_read = store.read
        saved: list[bool] = []

        async def read_then_another_save(key: str) -> Any:
            found = await real_read(key)
            if key == "site-data/t1/s1" and not saved:
                saved.append(True)
                await store.set(
                    key,
                    svc.parts.cipher.seal(
                        _dump("dummy-after"), tenant="t1", kind="site-data", ident="s1"
                    ),
                )
            return found

        monkeypatch.setattr(store, "read", read_then_another_save)
        report = await svc.keys.reseal_all()
        assert saved and report.counts["site-data"] == {"current": 1}
        after = await svc.parts.seam.records.load_snapshot("t1", "s1")
        assert after is not None and after.cookies[0].value == "dummy-after"
        blob = await store.get("site-data/t1/s1")
        assert blob is not None and Cipher.sealed_with(blob) == svc.parts.cipher.current_key_id
    finally:
        await svc.aclose()


def _dump(value: str) -> bytes:
    from sitekeep.model import dump_site_data

    return dump_site_data(site_data(value))
