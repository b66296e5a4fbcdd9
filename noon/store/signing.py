"""The own signing key, as the store uses it: found beside the node's certificates
(``NOON_DIR/certs/<node>.signing.key``, or ``NOON_SIGNING_KEY``), loaded once per process. An
import shard ``<node>-import`` is signed with ``<node>``'s key. Without a key the store writes
unsigned lines, as revision 1 did; members that require signatures refuse them (PROTOCOL.md
§13), and noond says so when it starts."""

from __future__ import annotations

from pathlib import Path

from noon.config import Settings
from noon.core.chain import Sign
from noon.core.collection import member_of
from noon.errors import Unavailable
from noon.store.shard import read_regular


class SigningKeyError(Unavailable, ValueError):
    """A signing key file that exists but cannot be used. The message names it."""


def key_path(settings: Settings) -> Path:
    if settings.signing_key is not None:
        return settings.signing_key
    return settings.dir / "certs" / f"{member_of(settings.node_id)}.signing.key"


def cert_path(settings: Settings) -> Path:
    """The signing certificate beside the key (``<node>.signing.crt``)."""
    key = key_path(settings)
    return key.with_name(key.name.removesuffix(".key") + ".crt")


def load(settings: Settings) -> Sign | None:
    """The signing function of ``settings``' node, or None when it has no key."""
    path = key_path(settings)
    try:
        pem = read_regular(path, 64 << 10)
    except FileNotFoundError:
        if settings.signing_key is not None:
            raise SigningKeyError(f"NOON_SIGNING_KEY names {path}, which does not exist") from None
        return None
    # cryptography only for a node that has a key: a session of a store without one (most
    # stores on one machine) starts sooner without it.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"{path} is not an unencrypted PEM private key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise SigningKeyError(f"{path} is not an Ed25519 key")
    return key.sign
