"""``sitekeep.stores.cipher``: AES-256-GCM envelopes bound to (tenant, kind, id) (SPEC §12)."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest

from sitekeep.errors import Conflict, InvalidInput, StoreUnavailable
from sitekeep.stores.cipher import Cipher, KeyFile, KeyRing, RingKey, key_id, load_or_create_key

KEY = bytes(range(32))
NEW_KEY = bytes(range(32, 64))
PLAIN = b'{"cookies":[{"name":"sid","value":"dummy-secret-value"}]}'
WHERE = {"tenant": "t1", "kind": "site-data", "ident": "session-1"}


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_a_sealed_blob_opens_to_the_same_bytes() -> None:
    cipher = Cipher(KEY)
    assert cipher.open(cipher.seal(PLAIN, **WHERE), **WHERE) == PLAIN
    assert cipher.open(cipher.seal(b"", **WHERE), **WHERE) == b""


def test_the_envelope_names_its_key_and_holds_no_plaintext() -> None:
    envelope = Cipher(KEY).seal(PLAIN, **WHERE)
    parsed = json.loads(envelope)
    assert parsed["v"] == 1
    assert parsed["kid"] == key_id(KEY)
    assert len(base64.b64decode(parsed["nonce"])) == 12
    assert b"dummy-secret-value" not in envelope
    assert b"dummy-secret-value" not in base64.b64decode(parsed["ct"])


def test_sealing_twice_uses_fresh_nonces() -> None:
    cipher = Cipher(KEY)
    assert cipher.seal(PLAIN, **WHERE) != cipher.seal(PLAIN, **WHERE)


@pytest.mark.parametrize(
    "moved_to",
    [
        {"tenant": "t2", "kind": "site-data", "ident": "session-1"},
        {"tenant": "t1", "kind": "profile", "ident": "session-1"},
        {"tenant": "t1", "kind": "site-data", "ident": "session-2"},
        {"tenant": "t1site-data", "kind": "", "ident": "session-1"},
    ],
    ids=["tenant", "kind", "ident", "concatenated"],
)
def test_a_blob_moved_to_another_record_does_not_open(moved_to: dict[str, str]) -> None:
    cipher = Cipher(KEY)
    envelope = cipher.seal(PLAIN, **WHERE)
    with pytest.raises(StoreUnavailable):
        cipher.open(envelope, **moved_to)


def test_a_tampered_ciphertext_does_not_open() -> None:
    cipher = Cipher(KEY)
    parsed = json.loads(cipher.seal(PLAIN, **WHERE))
    ct = bytearray(base64.b64decode(parsed["ct"]))
    ct[0] ^= 0x01
    parsed["ct"] = b64(bytes(ct))
    with pytest.raises(StoreUnavailable):
        cipher.open(json.dumps(parsed).encode(), **WHERE)


@pytest.mark.parametrize(
    "envelope",
    [b"not json", b"{}", b'{"kid": 1}', b"[]", b'{"kid":"x","nonce":"!","ct":"!"}'],
    ids=["not-json", "empty", "bad-kid", "list", "bad-base64"],
)
def test_a_malformed_envelope_is_store_unavailable(envelope: bytes) -> None:
    with pytest.raises(StoreUnavailable):
        Cipher(KEY).open(envelope, **WHERE)


def test_a_blob_sealed_with_an_unknown_key_does_not_open() -> None:
    envelope = Cipher(NEW_KEY).seal(PLAIN, **WHERE)
    with pytest.raises(StoreUnavailable):
        Cipher(KEY).open(envelope, **WHERE)


def test_rotation_opens_old_envelopes_and_seals_with_the_new_key() -> None:
    old_envelope = Cipher(KEY).seal(PLAIN, **WHERE)
    rotated = Cipher(NEW_KEY, older={key_id(KEY): KEY})
    assert rotated.current_key_id == key_id(NEW_KEY)
    assert rotated.open(old_envelope, **WHERE) == PLAIN
    new_envelope = rotated.seal(PLAIN, **WHERE)
    assert json.loads(new_envelope)["kid"] == key_id(NEW_KEY)
    with pytest.raises(StoreUnavailable):
        Cipher(KEY).open(new_envelope, **WHERE)


def test_key_id_is_sixteen_hex_digits_that_differ_per_key() -> None:
    assert len(key_id(KEY)) == 16
    int(key_id(KEY), 16)
    assert key_id(KEY) != key_id(NEW_KEY)


# --- the master key -----------------------------------------------------------------------


def test_an_absent_key_file_is_generated_with_mode_0600(tmp_path: Path) -> None:
    key_file = tmp_path / "keys" / "master.key"
    key = load_or_create_key(key_file, None)
    assert len(key) == 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert base64.b64decode(key_file.read_text(encoding="utf-8").strip()) == key


def test_a_present_key_file_is_reused(tmp_path: Path) -> None:
    key_file = tmp_path / "master.key"
    first = load_or_create_key(key_file, None)
    assert load_or_create_key(key_file, None) == first
    key_file.write_text(b64(KEY) + "\n", encoding="utf-8")
    assert load_or_create_key(key_file, None) == KEY


def test_the_env_key_wins_over_the_key_file(tmp_path: Path) -> None:
    key_file = tmp_path / "master.key"
    key_file.write_text(b64(KEY), encoding="utf-8")
    assert load_or_create_key(key_file, b64(NEW_KEY)) == NEW_KEY
    assert load_or_create_key(tmp_path / "absent.key", b64(NEW_KEY)) == NEW_KEY
    assert not (tmp_path / "absent.key").exists()


@pytest.mark.parametrize(
    "bad", ["not base64!", b64(b"short"), b64(bytes(33))], ids=["not-base64", "short", "long"]
)
def test_a_bad_env_key_is_invalid_input_naming_the_setting(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_or_create_key(tmp_path / "master.key", bad)
    assert caught.value.field == "SITEKEEP_MASTER_KEY"
    assert bad not in caught.value.message


def test_a_bad_key_file_is_invalid_input_naming_the_file(tmp_path: Path) -> None:
    key_file = tmp_path / "master.key"
    key_file.write_text(b64(b"too short"), encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        load_or_create_key(key_file, None)
    assert caught.value.field == str(key_file)


# --- the key ring -------------------------------------------------------------------------

THIRD_KEY = bytes(range(64, 96))


def test_a_ring_seals_with_its_newest_key_and_opens_with_any() -> None:
    older = Cipher(KEY).seal(PLAIN, **WHERE)
    ring = KeyRing.of(KEY, NEW_KEY)
    cipher = Cipher(ring)
    assert ring.current.id == key_id(NEW_KEY) == cipher.current_key_id
    assert ring.ids == (key_id(KEY), key_id(NEW_KEY))
    assert cipher.open(older, **WHERE) == PLAIN
    assert Cipher.sealed_with(cipher.seal(PLAIN, **WHERE)) == key_id(NEW_KEY)


def test_a_ring_key_never_shows_its_bytes() -> None:
    ring = KeyRing.of(KEY)
    assert b64(KEY) not in repr(ring.current)
    assert repr(KEY) not in repr(ring.current)


def test_a_ring_refuses_a_key_whose_id_is_not_its_own() -> None:
    with pytest.raises(InvalidInput):
        KeyRing([RingKey(key_id(NEW_KEY), KEY)])
    with pytest.raises(InvalidInput):
        KeyRing([])


def test_the_current_key_cannot_be_retired() -> None:
    ring = KeyRing.of(KEY, NEW_KEY)
    assert ring.without([key_id(KEY)]).ids == (key_id(NEW_KEY),)
    with pytest.raises(Conflict):
        ring.without([key_id(NEW_KEY)])


def test_a_legacy_one_key_file_opens_its_blobs_and_upgrades_when_a_key_is_added(
    tmp_path: Path,
) -> None:
    key_file = tmp_path / "master.key"
    key_file.write_text(b64(KEY) + "\n", encoding="utf-8")
    key_file.chmod(0o600)
    legacy = Cipher(load_or_create_key(key_file, None))  # as sitekeep sealed before rings
    envelope = legacy.seal(PLAIN, **WHERE)

    keys = KeyFile(key_file)
    assert keys.load().ids == (key_id(KEY),)
    ring = keys.add(NEW_KEY, now=1_700_000_000.0)
    assert ring.ids == (key_id(KEY), key_id(NEW_KEY))

    stored = json.loads(key_file.read_text(encoding="utf-8"))
    assert stored["version"] == 2
    assert [k["id"] for k in stored["keys"]] == [key_id(KEY), key_id(NEW_KEY)]
    assert stored["keys"][1]["created_at"] == 1_700_000_000.0
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    reopened = Cipher(KeyFile(key_file))
    assert reopened.open(envelope, **WHERE) == PLAIN
    assert reopened.current_key_id == key_id(NEW_KEY)
    assert load_or_create_key(key_file, None) == NEW_KEY


def test_adding_keys_keeps_every_old_one_and_a_fresh_key_is_random(tmp_path: Path) -> None:
    keys = KeyFile(tmp_path / "master.key")
    first = keys.load().current.id
    second = keys.add().current.id
    third = keys.add(THIRD_KEY).current.id
    assert len({first, second, third}) == 3
    assert KeyFile(tmp_path / "master.key").load().ids == (first, second, third)
    assert not list(tmp_path.glob(".*.tmp"))  # nothing staged is left behind


def test_a_cipher_on_a_key_file_picks_up_a_key_another_process_added(tmp_path: Path) -> None:
    key_file = tmp_path / "master.key"
    serving = Cipher(KeyFile(key_file))
    before = serving.seal(PLAIN, **WHERE)
    KeyFile(key_file).add(NEW_KEY)  # `sitekeep keys rotate` elsewhere
    after = serving.seal(PLAIN, **WHERE)
    assert Cipher.sealed_with(after) == key_id(NEW_KEY) != Cipher.sealed_with(before)
    assert serving.open(before, **WHERE) == PLAIN
    other = Cipher(KeyFile(key_file))
    assert other.open(after, **WHERE) == PLAIN


def test_retiring_a_key_leaves_its_blobs_unopenable(tmp_path: Path) -> None:
    keys = KeyFile(tmp_path / "master.key")
    old = keys.load().current.id
    envelope = Cipher(keys).seal(PLAIN, **WHERE)
    keys.add(NEW_KEY)
    keys.retire([old])
    with pytest.raises(StoreUnavailable):
        Cipher(keys).open(envelope, **WHERE)
    with pytest.raises(Conflict):
        keys.retire([key_id(NEW_KEY)])


def test_env_keys_form_a_ring_whose_last_key_seals_and_cannot_be_changed_here(
    tmp_path: Path,
) -> None:
    keys = KeyFile(tmp_path / "master.key", f"{b64(KEY)}, {b64(NEW_KEY)}")
    assert keys.load().ids == (key_id(KEY), key_id(NEW_KEY))
    assert Cipher(keys).current_key_id == key_id(NEW_KEY)
    with pytest.raises(InvalidInput) as caught:
        keys.add()
    assert caught.value.field == "SITEKEEP_MASTER_KEY"
    assert not (tmp_path / "master.key").exists()


@pytest.mark.parametrize(
    "text",
    ['{"version": 3, "keys": []}', '{"version": 2}', '{"version": 2, "keys": [{"id": "x"}]}', "{"],
    ids=["future-version", "no-keys", "bad-entry", "broken-json"],
)
def test_a_malformed_ring_file_is_invalid_input_naming_the_file(tmp_path: Path, text: str) -> None:
    key_file = tmp_path / "master.key"
    key_file.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        KeyFile(key_file).load()
    assert caught.value.field == str(key_file)


def test_reseal_moves_a_blob_to_the_newest_key_for_the_same_record() -> None:
    envelope = Cipher(KEY).seal(PLAIN, **WHERE)
    ring = Cipher(KeyRing.of(KEY, NEW_KEY))
    moved = ring.reseal(envelope, **WHERE)
    assert moved is not None
    assert Cipher.sealed_with(moved) == key_id(NEW_KEY)
    assert Cipher(NEW_KEY).open(moved, **WHERE) == PLAIN
    assert ring.reseal(moved, **WHERE) is None  # already under the newest key


@pytest.mark.parametrize(
    "moved_to",
    [
        {"tenant": "t2", "kind": "site-data", "ident": "session-1"},
        {"tenant": "t1", "kind": "profile", "ident": "session-1"},
        {"tenant": "t1", "kind": "site-data", "ident": "session-2"},
    ],
    ids=["tenant", "kind", "record"],
)
def test_a_resealed_blob_moved_to_another_record_tenant_or_kind_does_not_open(
    moved_to: dict[str, str],
) -> None:
    envelope = Cipher(KEY).seal(PLAIN, **WHERE)
    ring = Cipher(KeyRing.of(KEY, NEW_KEY))
    with pytest.raises(StoreUnavailable):
        ring.reseal(envelope, **moved_to)  # re-sealing cannot launder a moved blob
    moved = ring.reseal(envelope, **WHERE)
    assert moved is not None
    with pytest.raises(StoreUnavailable):
        ring.open(moved, **moved_to)


@pytest.mark.parametrize("envelope", [b"not json", b"[]", b'{"kid": 3}'])
def test_sealed_with_refuses_what_is_not_an_envelope(envelope: bytes) -> None:
    with pytest.raises(StoreUnavailable):
        Cipher.sealed_with(envelope)
