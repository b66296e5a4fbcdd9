"""The mesh key of relays (PROTOCOL.md §14.1): one random 32-byte key per epoch, in a 0600 file
handed to each machine like the CA certificate. Segments and heads in a relay are sealed with
the newest epoch's key; every epoch held stays readable. Rotating adds an epoch, so a machine
revoked before the rotation cannot read what is written after it."""

from __future__ import annotations

import base64
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from noon.certs._types import CertError
from noon.store.shard import read_regular, write_file

RELAY_KEY_NAME = "relay.key"
KEY_BYTES = 32
MAX_EPOCHS = 1000
_LINE = re.compile(rb"^noon-relay-key/1 ([1-9][0-9]{0,5}) ([A-Za-z0-9_-]{43})$")


class RelayKeyError(CertError):
    """A relay key file that is missing or cannot be used. The message names it."""


@dataclass(frozen=True)
class MeshKey:
    epochs: dict[int, bytes]
    """Epoch number → its 32-byte key."""

    @property
    def current(self) -> int:
        return max(self.epochs)


def _encode(key: MeshKey) -> bytes:
    return b"".join(
        b"noon-relay-key/1 %d %s\n" % (epoch, base64.urlsafe_b64encode(raw).rstrip(b"="))
        for epoch, raw in sorted(key.epochs.items())
    )


def read_relay_key(path: Path) -> MeshKey:
    try:
        data = read_regular(path, 1 << 20)
    except FileNotFoundError:
        raise RelayKeyError(
            f"no relay key at {path}: create one with `noon certs relay-key` and copy it to "
            "every machine's $NOON_DIR/certs/"
        ) from None
    except OSError as exc:
        raise RelayKeyError(f"relay key {path}: {exc}") from None
    epochs: dict[int, bytes] = {}
    for no, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line.strip())
        if m is None:
            raise RelayKeyError(f"relay key {path}, line {no}: not `noon-relay-key/1 EPOCH KEY`")
        raw = base64.urlsafe_b64decode(m.group(2) + b"=")
        if len(raw) != KEY_BYTES or int(m.group(1)) in epochs:
            raise RelayKeyError(f"relay key {path}, line {no}: a bad or repeated epoch")
        epochs[int(m.group(1))] = raw
    if not epochs:
        raise RelayKeyError(f"relay key {path} holds no epoch")
    return MeshKey(epochs)


def create_relay_key(path: Path, *, rotate: bool = False) -> MeshKey:
    """A new key file with epoch 1, or (``rotate``) the existing one with one epoch more.
    Refuses to replace an existing file otherwise (every machine holds a copy of it)."""
    if path.exists() and not rotate:
        raise RelayKeyError(
            f"{path} exists; every machine holds a copy of it. `--rotate` adds a new epoch "
            "(after revoking a machine)"
        )
    old = read_relay_key(path) if rotate else MeshKey({})
    if len(old.epochs) >= MAX_EPOCHS:
        raise RelayKeyError(f"{path} already holds {MAX_EPOCHS} epochs")
    epoch = max(old.epochs, default=0) + 1
    key = MeshKey({**old.epochs, epoch: secrets.token_bytes(KEY_BYTES)})
    write_file(path, _encode(key))
    return key


def copy_relay_key(key: MeshKey, path: Path) -> None:
    write_file(path, _encode(key))
