"""``sitekeep.stores.cipher``: AES-256-GCM envelopes bound to (tenant, kind, id) (SPEC §12)."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest

from sitekeep.errors import InvalidInput, StoreUnavailable
from sitekeep.stores.cipher import Cipher, key_id, load_or_create_key

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
