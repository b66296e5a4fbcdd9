"""A test author's signing key, a second one that is not the author's, and the shard lines
numbered as the chain functions of :mod:`noon.core.chain` take them."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import ed25519

from noon.store.lines import envelope

KEY = ed25519.Ed25519PrivateKey.generate()
OTHER = ed25519.Ed25519PrivateKey.generate()


def check(message: bytes, sig: bytes) -> bool:
    try:
        KEY.public_key().verify(sig, message)
    except Exception:
        return False
    return True


def numbered(lines: list[bytes]) -> list[tuple[int, bytes]]:
    out = []
    for raw in lines:
        env = envelope(raw)
        assert env is not None
        out.append((env.seq, raw))
    return out
