"""Revocation signed by the CA (PROTOCOL.md §13.6): a record naming a node and a cut-off stamp,
signed with the CA's key, so every node that holds the CA certificate can check it wherever
the record came from, and it replicates like a membership record. Ops of that node (and of its
import shard) stamped after the cut-off are refused everywhere; what it wrote before stays
proven by its signatures."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

import orjson
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from noon.certs._files import check_pair, read_cert, read_key
from noon.certs._types import (
    CA_CERT_NAME,
    CA_KEY_NAME,
    CertError,
    CertParseError,
    NotSignedByCaError,
    validate_node_id,
)

MAX_RECORD = 1024
"""A record's largest encoded size (one is about 200 bytes)."""
_LABEL = b"noon/revocation/1\0"


@dataclass(frozen=True)
class Revocation:
    node: str
    after: int
    """The cut-off: the node's ops stamped (HLC) above it are refused."""
    issued: int
    """When the CA's holder signed it, ms since the epoch (information only)."""
    sig: bytes

    def signed_part(self) -> bytes:
        return _LABEL + orjson.dumps(
            {"after": self.after, "issued": self.issued, "node": self.node},
            option=orjson.OPT_SORT_KEYS,
        )

    def encode(self) -> bytes:
        sig = base64.urlsafe_b64encode(self.sig).rstrip(b"=").decode()
        return orjson.dumps(
            {"node": self.node, "after": self.after, "issued": self.issued, "sig": sig}
        )


def revoke(ca_dir: Path, node: str, after: int, issued: int) -> Revocation:
    """A revocation of ``node`` from HLC ``after`` on, signed with the CA key in ``ca_dir``."""
    validate_node_id(node)
    key_path, cert_path = Path(ca_dir) / CA_KEY_NAME, Path(ca_dir) / CA_CERT_NAME
    key, cert = read_key(key_path, "CA private key"), read_cert(cert_path, "CA certificate")
    check_pair(cert, key, cert_path, key_path)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertParseError(f"CA private key {key_path} is not an EC key")
    if not 0 <= after < 1 << 64:
        raise CertError(f"a cut-off stamp is a 64-bit HLC, not {after}")
    unsigned = Revocation(node, after, issued, b"")
    return Revocation(
        node, after, issued, key.sign(unsigned.signed_part(), ec.ECDSA(hashes.SHA256()))
    )


def parse_revocation(text: bytes, ca_cert: x509.Certificate) -> Revocation:
    """A record the CA signed, or :class:`CertError` saying what is wrong with it."""
    if len(text) > MAX_RECORD:
        raise CertParseError(f"a revocation of {len(text)} bytes is too large")
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise CertParseError("a revocation is not JSON") from None
    if type(obj) is not dict or set(obj) != {"node", "after", "issued", "sig"}:
        raise CertParseError("a revocation holds node, after, issued and sig, nothing else")
    node, after, issued, sig_text = obj["node"], obj["after"], obj["issued"], obj["sig"]
    if not (
        isinstance(node, str)
        and type(after) is int
        and 0 <= after < 1 << 64
        and type(issued) is int
        and 0 <= issued < 1 << 53
        and isinstance(sig_text, str)
        and len(sig_text) <= 200
    ):
        raise CertParseError("a revocation's fields are malformed")
    validate_node_id(node)
    try:
        sig = base64.urlsafe_b64decode(sig_text + "=" * (-len(sig_text) % 4))
    except ValueError:
        raise CertParseError("a revocation's signature is not base64url") from None
    found = Revocation(node, after, issued, sig)
    key = ca_cert.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise NotSignedByCaError("the CA certificate holds no EC key")
    try:
        key.verify(sig, found.signed_part(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise NotSignedByCaError(f"the revocation of {node!r} is not signed by this CA") from None
    return found
