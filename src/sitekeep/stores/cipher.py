"""AES-256-GCM envelopes for blobs at rest (SPEC §12).

An envelope is compact JSON ``{"v": 1, "kid": "<key id>", "nonce": b64, "ct": b64}``. The
associated data is ``[tenant, kind, id]`` as JSON, so a ciphertext opens only under the
record it was written for: a blob moved to another record fails to open. Keys have ids (the
first 16 hex digits of the key's SHA-256) so they can be rotated: the newest key seals,
every known key opens.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from sitekeep.errors import InvalidInput, StoreUnavailable

__all__ = ["Cipher", "key_id", "load_or_create_key"]

_NONCE_BYTES = 12  # NIST SP 800-38D §8.2: 96-bit nonces


def key_id(key: bytes) -> str:
    """The id of a key: 16 hex digits of its SHA-256."""
    return hashlib.sha256(key).hexdigest()[:16]


def _decode_key(text: str, source: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"{source} is not base64", field=source) from exc
    if len(key) != 32:
        raise InvalidInput(f"{source} must hold 32 bytes (AES-256), not {len(key)}", field=source)
    return key


def load_or_create_key(key_file: Path, env_value: str | None) -> bytes:
    """The master key: from ``SITEKEEP_MASTER_KEY`` when set, else from ``key_file``,
    generated (32 random bytes, base64, mode 0600) when absent.

    Raises:
        InvalidInput: the key is not base64 of 32 bytes.
    """
    if env_value:
        return _decode_key(env_value, "SITEKEEP_MASTER_KEY")
    key_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _decode_key(key_file.read_text(encoding="utf-8"), str(key_file))
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(base64.b64encode(os.urandom(32)).decode() + "\n")
        out.flush()
        os.fsync(out.fileno())
    return _decode_key(key_file.read_text(encoding="utf-8"), str(key_file))


class Cipher:
    """Seals and opens blobs with AES-256-GCM bound to (tenant, kind, id)."""

    def __init__(self, current: bytes, older: Mapping[str, bytes] | None = None) -> None:
        self._current = key_id(current)
        self._keys = {**(older or {}), self._current: current}

    @property
    def current_key_id(self) -> str:
        return self._current

    @staticmethod
    def _aad(tenant: str, kind: str, ident: str) -> bytes:
        return json.dumps([tenant, kind, ident], separators=(",", ":")).encode()

    def seal(self, plaintext: bytes, *, tenant: str, kind: str, ident: str) -> bytes:
        """The envelope of ``plaintext`` under the current key."""
        nonce = os.urandom(_NONCE_BYTES)
        ct = AESGCM(self._keys[self._current]).encrypt(
            nonce, plaintext, self._aad(tenant, kind, ident)
        )
        envelope = {
            "v": 1,
            "kid": self._current,
            "nonce": base64.b64encode(nonce).decode(),
            "ct": base64.b64encode(ct).decode(),
        }
        return json.dumps(envelope, separators=(",", ":")).encode()

    def open(self, envelope: bytes, *, tenant: str, kind: str, ident: str) -> bytes:
        """The plaintext of an envelope written for (tenant, kind, ident).

        Raises:
            StoreUnavailable: unknown key id, a malformed envelope, or a ciphertext that
                does not open under this (tenant, kind, id) — moved or tampered with.
        """
        try:
            parsed = json.loads(envelope)
            key = self._keys[parsed["kid"]]
            nonce = base64.b64decode(parsed["nonce"])
            ct = base64.b64decode(parsed["ct"])
            return AESGCM(key).decrypt(nonce, ct, self._aad(tenant, kind, ident))
        except KeyError as exc:
            raise StoreUnavailable(f"a stored {kind} was sealed with an unknown key") from exc
        except (InvalidTag, ValueError, TypeError) as exc:
            raise StoreUnavailable(f"a stored {kind} does not open for this record") from exc
