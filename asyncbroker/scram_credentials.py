"""ScramCredentials: the SCRAM users of this node, kept durably in its log directories.

Kafka keeps them in its metadata log (UserScramCredentialRecord: name, mechanism, salt,
stored key, server key, iterations) and changes them with AlterUserScramCredentials
(`kafka-configs.sh --entity-type users --alter --add-config 'SCRAM-SHA-256=[password=...]'`);
the broker never sees a password, only what RFC 5802 derives from the salted one. Here the
same fields go to `asyncbroker-scram-credentials.json` in every log directory, written
atomically like the dynamic broker configs.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from storage.cluster_metadata import first_cluster_metadata
from wire.metadata_records import UserScramCredentialRecord

from asyncbroker.log_dir_file import AsyncLogDirFile

__all__ = ["SCRAM_CREDENTIALS_FILE", "MECHANISMS", "ScramCredential", "ScramCredentials", "parse_add_scram"]

log = logging.getLogger(__name__)

SCRAM_CREDENTIALS_FILE = "asyncbroker-scram-credentials.json"
# ScramMechanism ids in the admin APIs -> (name, hash)
MECHANISMS: dict[int, tuple[str, str]] = {1: ("SCRAM-SHA-256", "sha256"), 2: ("SCRAM-SHA-512", "sha512")}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384


class ScramCredential(msgspec.Struct, frozen=True):
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, hash_name: str, salt: bytes, salted_password: bytes,
                             iterations: int) -> "ScramCredential":
        """RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
        HMAC(SaltedPassword, "Server Key")."""
        client_key = hmac.digest(salted_password, b"Client Key", hash_name)
        return cls(salt, hashlib.new(hash_name, client_key).digest(),
                   hmac.digest(salted_password, b"Server Key", hash_name), iterations)

    @classmethod
    def from_password(cls, hash_name: str, password: str, iterations: int = MIN_ITERATIONS,
                      salt: bytes | None = None) -> "ScramCredential":
        import os

        salt = os.urandom(32) if salt is None else salt
        salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
        return cls.from_salted_password(hash_name, salt, salted, iterations)


class ScramCredentials:
    """user -> mechanism name -> credential, persisted on every change (blocking writes:
    callers run them on the executor)."""

    def __init__(self, log_dirs: Sequence[str | Path]) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self._file = AsyncLogDirFile(self.log_dirs, SCRAM_CREDENTIALS_FILE)
        self._users: dict[str, dict[str, ScramCredential]] = self._read()

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {u: dict(m) for u, m in self._users.items()}

    def apply(self, upserts: dict[tuple[str, str], ScramCredential], deletions: set[tuple[str, str]]) -> None:
        """Change several credentials at once and persist them (one write)."""
        for user, mechanism in deletions:
            self._users.get(user, {}).pop(mechanism, None)
            if not self._users.get(user, True):
                del self._users[user]
        for (user, mechanism), credential in upserts.items():
            self._users.setdefault(user, {})[mechanism] = credential
        data = json.dumps({u: {m: {"salt": _b64(c.salt), "stored_key": _b64(c.stored_key),
                                   "server_key": _b64(c.server_key), "iterations": c.iterations}
                               for m, c in sorted(ms.items())} for u, ms in sorted(self._users.items())},
                          indent=1).encode()
        self._file.write(data)

    def _read(self) -> dict[str, dict[str, ScramCredential]]:
        for path, data in self._file.copies():
            try:
                found = json.loads(data)
            except ValueError as exc:
                log.error("Ignoring %s, which is not valid JSON: %s", path, exc)
                continue
            return {u: {m: ScramCredential(base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                                           base64.b64decode(c["server_key"]), int(c["iterations"]))
                        for m, c in ms.items()} for u, ms in found.items()}
        # No credential file: a directory Kafka wrote keeps them in the metadata log.
        image = first_cluster_metadata(self.log_dirs)
        return {} if image is None else _from_records(image.scram_credentials.values())

def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


_ADD_SCRAM = re.compile(r"^(SCRAM-SHA-256|SCRAM-SHA-512)=\[(.*)\]$")


def parse_add_scram(text: str) -> tuple[str, str, ScramCredential]:
    """A credential in the syntax of Kafka's `kafka-storage.sh format --add-scram`:
    `SCRAM-SHA-256=[name=alice,password=alice-secret]`, with an optional `iterations=N`
    (4096 to 16384). Returns (user, mechanism, credential); ValueError says what is wrong."""
    match = _ADD_SCRAM.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not MECHANISM=[name=USER,password=PASSWORD] with MECHANISM SCRAM-SHA-256 "
                         "or SCRAM-SHA-512")
    mechanism, body = match.groups()
    fields: dict[str, str] = {}
    for part in body.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"{text!r}: {part!r} is not key=value")
        fields[key.strip()] = value.strip().strip('"')
    unknown = set(fields) - {"name", "password", "iterations"}
    if unknown or "name" not in fields or "password" not in fields:
        raise ValueError(f"{text!r}: give name and password (and optionally iterations), not {sorted(unknown)}"
                         if unknown else f"{text!r}: name and password are both required")
    iterations = int(fields.get("iterations", MIN_ITERATIONS))
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"{text!r}: iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    hash_name = {name: h for name, h in MECHANISMS.values()}[mechanism]
    return fields["name"], mechanism, ScramCredential.from_password(hash_name, fields["password"], iterations)


def _from_records(records: Iterable[UserScramCredentialRecord]) -> dict[str, dict[str, ScramCredential]]:
    users: dict[str, dict[str, ScramCredential]] = {}
    for r in records:
        if r.mechanism in MECHANISMS:
            users.setdefault(r.name, {})[MECHANISMS[r.mechanism][0]] = ScramCredential(
                r.salt, r.stored_key, r.server_key, r.iterations)
    return users
