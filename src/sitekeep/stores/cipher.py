"""AES-256-GCM envelopes for blobs at rest, and the ring of keys that seal them (SPEC §12).

An envelope is compact JSON ``{"v": 1, "kid": "<key id>", "nonce": b64, "ct": b64}``. The
associated data is ``[tenant, kind, id]`` as JSON, so a ciphertext opens only under the
record it was written for: a blob moved to another record fails to open. Keys have ids (the
first 16 hex digits of the key's SHA-256) so they can be rotated: the newest key seals,
every known key opens.

**The key ring.** :class:`KeyRing` holds several keys, oldest first; the last one seals.
:class:`KeyFile` keeps it on disk (mode 0600) and adds a key without losing the old ones.
Its format grew compatibly: a file of one base64 line (what sitekeep always wrote, and
still writes for a fresh file) is a ring of that one key, and its id is the one every
envelope sealed under it carries, so they keep opening. Adding a key rewrites the file as
JSON ``{"version": 2, "keys": [{"id", "key", "created_at"}, …]}``, staged, fsynced and
renamed under a lock, so a crash leaves the old file or the new one, never half of one.
``SITEKEEP_MASTER_KEY`` may list several keys, comma-separated, the last one sealing.

A :class:`Cipher` made from a :class:`KeyFile` notices a key another process added (one
``stat`` per seal, and per open of an envelope naming a key it does not know yet): every
process seals under the newest key soon after a rotation, and opens envelopes sealed under
it. Opening under a key it knows costs no ``stat`` (a hot read opens a snapshot on every
call). :meth:`Cipher.reseal` moves one envelope to the newest key;
a key is retired only once no envelope names it (the store-wide pass, ``sitekeep keys
rotate``, belongs with the stores).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from sitekeep.errors import Conflict, InvalidInput, StoreUnavailable

__all__ = ["Cipher", "KeyFile", "KeyRing", "RingKey", "key_id", "load_or_create_key"]

_NONCE_BYTES = 12  # NIST SP 800-38D §8.2: 96-bit nonces
_ENV = "SITEKEEP_MASTER_KEY"


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


@dataclass(frozen=True, slots=True)
class RingKey:
    """One key of a ring: its id, its 32 bytes, when it was added (seconds since the epoch;
    0 when not known, as for a key from a one-line file or the environment)."""

    id: str
    key: bytes
    created_at: float = 0.0

    def __repr__(self) -> str:  # never the key
        return f"RingKey(id={self.id!r}, created_at={self.created_at!r})"


class KeyRing:
    """Keys by id, oldest first: the last one seals, any of them opens.

    Raises:
        InvalidInput: (constructor) no key, a key not of 32 bytes, or an id that is not
            the key's own.
    """

    def __init__(self, keys: Sequence[RingKey]) -> None:
        if not keys:
            raise InvalidInput("a key ring needs at least one key", field="keys")
        for entry in keys:
            if len(entry.key) != 32 or entry.id != key_id(entry.key):
                raise InvalidInput(f"key {entry.id!r} is not a 32-byte key of that id")
        self._keys = tuple(keys)
        self._by_id = {k.id: k.key for k in self._keys}

    @classmethod
    def of(cls, *keys: bytes) -> KeyRing:
        """A ring of raw keys, oldest first."""
        return cls([RingKey(key_id(k), k) for k in keys])

    @property
    def current(self) -> RingKey:
        """The key that seals: the newest."""
        return self._keys[-1]

    @property
    def ids(self) -> tuple[str, ...]:
        """Every key id, oldest first."""
        return tuple(k.id for k in self._keys)

    def __iter__(self) -> Iterator[RingKey]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, kid: object) -> bool:
        return kid in self._by_id

    def key(self, kid: str) -> bytes | None:
        """The key of id ``kid``, or None when the ring has none of that id."""
        return self._by_id.get(kid)

    def adding(self, key: bytes, created_at: float) -> KeyRing:
        """This ring with ``key`` as the newest (moved to the end if already there)."""
        kept = [k for k in self._keys if k.id != key_id(key)]
        return KeyRing([*kept, RingKey(key_id(key), key, created_at)])

    def without(self, kids: Iterable[str]) -> KeyRing:
        """This ring without the keys ``kids``.

        Raises:
            Conflict: ``kids`` names the current key (it seals everything new).
        """
        drop = set(kids)
        if self.current.id in drop:
            raise Conflict(f"key {self.current.id} seals new blobs: it cannot be retired")
        return KeyRing([k for k in self._keys if k.id not in drop])


def _ring_from_text(text: str, source: str) -> KeyRing:
    """A ring from a key file's text: one base64 line (legacy, one key) or version 2 JSON."""
    if not text.lstrip().startswith("{"):
        return KeyRing.of(_decode_key(text, source))
    try:
        data = json.loads(text)
        entries = data["keys"]
        if data.get("version") != 2 or not isinstance(entries, list):
            raise ValueError("not a version 2 key file")
        keys = [
            RingKey(str(e["id"]), _decode_key(str(e["key"]), source), float(e["created_at"]))
            for e in entries
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{source} is not a sitekeep key file", field=source) from exc
    return KeyRing(keys)


def _ring_to_text(ring: KeyRing) -> str:
    entries = [
        {"id": k.id, "key": base64.b64encode(k.key).decode(), "created_at": k.created_at}
        for k in ring
    ]
    return json.dumps({"version": 2, "keys": entries}, indent=1) + "\n"


def _ring_from_env(value: str) -> KeyRing:
    return KeyRing.of(*(_decode_key(part, _ENV) for part in value.split(",") if part.strip()))


class KeyFile:
    """The key ring on disk (``master.key``, mode 0600), or in ``SITEKEEP_MASTER_KEY``.

    Args:
        path: the key file; generated (one fresh key) the first time it is read.
        env_value: ``SITEKEEP_MASTER_KEY`` when set: base64 keys, comma-separated, the
            last one sealing. It wins over the file and is read-only here.
    """

    def __init__(self, path: Path, env_value: str | None = None) -> None:
        self.path = path
        self._env = env_value or None
        self._cached: tuple[tuple[int, int, int], KeyRing] | None = None

    @property
    def from_env(self) -> bool:
        return self._env is not None

    def load(self) -> KeyRing:
        """The ring, the file generated when absent (32 random bytes, base64, mode 0600).

        Raises:
            InvalidInput: a key that is not base64 of 32 bytes, or a malformed file.
        """
        if self._env is not None:
            return _ring_from_env(self._env)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return self._read()[1]
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(base64.b64encode(os.urandom(32)).decode() + "\n")
            out.flush()
            os.fsync(out.fileno())
        return self._read()[1]

    def _read(self) -> tuple[tuple[int, int, int], KeyRing]:
        """The file's identity and its ring, both from one open file (a rename between
        a stat and a read cannot pair one file's stamp with another's keys)."""
        with open(self.path, encoding="utf-8") as file:
            st = os.fstat(file.fileno())
            text = file.read()
        return (st.st_ino, st.st_size, st.st_mtime_ns), _ring_from_text(text, str(self.path))

    def ring(self) -> KeyRing:
        """The ring as the file holds it now: read again only when the file changed."""
        if self._env is not None:
            if self._cached is None:
                self._cached = ((0, 0, 0), _ring_from_env(self._env))
            return self._cached[1]
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self.load()
            st = self.path.stat()
        if self._cached is None or self._cached[0] != (st.st_ino, st.st_size, st.st_mtime_ns):
            self._cached = self._read()
        return self._cached[1]

    def add(self, key: bytes | None = None, *, now: float | None = None) -> KeyRing:
        """Add ``key`` (default: 32 fresh random bytes) as the newest key, keeping the
        others; the ring written back. Returns the new ring.

        Raises:
            InvalidInput: the keys come from ``SITEKEEP_MASTER_KEY`` (add it there), or
                ``key`` is not 32 bytes.
        """
        new = os.urandom(32) if key is None else key
        if len(new) != 32:
            raise InvalidInput("a key must be 32 bytes (AES-256)", field="key")
        at = time.time() if now is None else now
        return self._update(lambda ring: ring.adding(new, at))

    def retire(self, kids: Iterable[str]) -> KeyRing:
        """Remove the keys ``kids`` (never the current one); the ring written back.

        Raises:
            Conflict: ``kids`` names the current key.
            InvalidInput: the keys come from ``SITEKEEP_MASTER_KEY``.
        """
        drop = list(kids)
        return self._update(lambda ring: ring.without(drop))

    def _update(self, change: Callable[[KeyRing], KeyRing]) -> KeyRing:
        if self._env is not None:
            raise InvalidInput(
                f"the keys come from {_ENV}: change them there (comma-separated, the last "
                "one seals)",
                field=_ENV,
            )
        with self._locked():
            ring = change(self.load())
            self._write(ring)
        self._cached = None
        return ring

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write(self, ring: KeyRing) -> None:
        """Staged (mode 0600), fsynced, renamed over the file, the folder fsynced."""
        staged = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(_ring_to_text(ring))
                out.flush()
                os.fsync(out.fileno())
            os.replace(staged, self.path)
        except BaseException:
            staged.unlink(missing_ok=True)
            raise
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def load_or_create_key(key_file: Path, env_value: str | None) -> bytes:
    """The current (sealing) key: from ``SITEKEEP_MASTER_KEY`` when set, else from
    ``key_file``, generated (32 random bytes, base64, mode 0600) when absent.

    Raises:
        InvalidInput: the key is not base64 of 32 bytes.
    """
    return KeyFile(key_file, env_value).load().current.key


class Cipher:
    """Seals and opens blobs with AES-256-GCM bound to (tenant, kind, id).

    Args:
        current: the sealing key, or a whole :class:`KeyRing`, or a :class:`KeyFile`
            (then a key another process adds is picked up).
        older: more keys that open, by id (with a raw ``current`` key only).
    """

    def __init__(
        self, current: bytes | KeyRing | KeyFile, older: Mapping[str, bytes] | None = None
    ) -> None:
        self._file: KeyFile | None = None
        if isinstance(current, KeyFile):
            self._file = current
            self._ring = current.ring()
        elif isinstance(current, KeyRing):
            self._ring = current
        else:
            olders = [RingKey(kid, key) for kid, key in (older or {}).items()]
            self._ring = KeyRing([*olders, RingKey(key_id(current), current)])

    def _keys(self) -> KeyRing:
        if self._file is not None:
            self._ring = self._file.ring()
        return self._ring

    @property
    def current_key_id(self) -> str:
        return self._keys().current.id

    @property
    def ring(self) -> KeyRing:
        return self._keys()

    @staticmethod
    def _aad(tenant: str, kind: str, ident: str) -> bytes:
        return json.dumps([tenant, kind, ident], separators=(",", ":")).encode()

    def seal(self, plaintext: bytes, *, tenant: str, kind: str, ident: str) -> bytes:
        """The envelope of ``plaintext`` under the current key."""
        current = self._keys().current
        nonce = os.urandom(_NONCE_BYTES)
        ct = AESGCM(current.key).encrypt(nonce, plaintext, self._aad(tenant, kind, ident))
        envelope = {
            "v": 1,
            "kid": current.id,
            "nonce": base64.b64encode(nonce).decode(),
            "ct": base64.b64encode(ct).decode(),
        }
        return json.dumps(envelope, separators=(",", ":")).encode()

    @staticmethod
    def sealed_with(envelope: bytes) -> str:
        """The id of the key an envelope names (read without opening it).

        Raises:
            StoreUnavailable: not an envelope.
        """
        try:
            kid = json.loads(envelope)["kid"]
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreUnavailable("a stored blob is not a sealed envelope") from exc
        if not isinstance(kid, str):
            raise StoreUnavailable("a stored blob is not a sealed envelope")
        return kid

    def open(self, envelope: bytes, *, tenant: str, kind: str, ident: str) -> bytes:
        """The plaintext of an envelope written for (tenant, kind, ident).

        Raises:
            StoreUnavailable: unknown key id, a malformed envelope, or a ciphertext that
                does not open under this (tenant, kind, id) — moved or tampered with.
        """
        try:
            parsed = json.loads(envelope)
            key = self._ring.key(parsed["kid"]) or self._keys().key(parsed["kid"])
            if key is None:
                raise KeyError(parsed["kid"])
            nonce = base64.b64decode(parsed["nonce"])
            ct = base64.b64decode(parsed["ct"])
            return AESGCM(key).decrypt(nonce, ct, self._aad(tenant, kind, ident))
        except KeyError as exc:
            raise StoreUnavailable(f"a stored {kind} was sealed with an unknown key") from exc
        except (InvalidTag, ValueError, TypeError) as exc:
            raise StoreUnavailable(f"a stored {kind} does not open for this record") from exc

    def reseal(self, envelope: bytes, *, tenant: str, kind: str, ident: str) -> bytes | None:
        """``envelope`` sealed again under the current key, for the same (tenant, kind,
        id); None when it already is (nothing to write).

        Raises:
            StoreUnavailable: it does not open for this record (see :meth:`open`).
        """
        if self.sealed_with(envelope) == self.current_key_id:
            return None
        plain = self.open(envelope, tenant=tenant, kind=kind, ident=ident)
        return self.seal(plain, tenant=tenant, kind=kind, ident=ident)
