"""Signing keys: the Ed25519 key a node signs its shards with (PROTOCOL.md §13), certified by
the person's CA in a certificate of its own.

The TLS certificate proves who *sends*; the signing certificate proves who *wrote*. It is a
separate key (Ed25519 signs fast and verifies fast; the TLS key stays EC P-256 for every
OpenSSL) with its own certificate: CN = node id, OU ``noon-signer``, key usage digital
signature only and no TLS usage, so it can never open a connection (any OU but a role's is
refused by TLS, §2). Files: ``<node>.signing.key`` (0600) and ``<node>.signing.crt``."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

from noon.certs._files import check_pair, read_cert, read_key
from noon.certs._types import (
    BACKDATE,
    CA_CERT_NAME,
    CA_KEY_NAME,
    CertError,
    CertParseError,
    NodeCertExistsError,
    NotSignedByCaError,
    now_utc,
    validate_node_id,
)
from noon.store.shard import write_file

SIGNER_UNIT = "noon-signer"
MAX_SIGNER_PEM = 16 << 10
"""Largest signing certificate accepted from a peer (one is about 600 bytes)."""


@dataclass(frozen=True)
class SigningPaths:
    key: Path
    cert: Path


def signing_paths(directory: Path, node_id: str) -> SigningPaths:
    return SigningPaths(directory / f"{node_id}.signing.key", directory / f"{node_id}.signing.crt")


def issue_signing_cert(
    ca_dir: Path, node_id: str, out_dir: Path, *, days: int = 3650, force: bool = False
) -> SigningPaths:
    """A fresh Ed25519 signing key for ``node_id`` and its certificate by the CA in
    ``ca_dir``, written to ``out_dir``. Refuses to overwrite unless ``force`` (a new key:
    history signed with the old one stays valid, its certificate stays known to every node)."""
    validate_node_id(node_id)
    ca_key_path, ca_cert_path = Path(ca_dir) / CA_KEY_NAME, Path(ca_dir) / CA_CERT_NAME
    ca_key = read_key(ca_key_path, "CA private key")
    ca_cert = read_cert(ca_cert_path, "CA certificate")
    check_pair(ca_cert, ca_key, ca_cert_path, ca_key_path)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise CertParseError(f"CA private key {ca_key_path} is not an EC key")
    out = Path(out_dir)
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    paths = signing_paths(out, node_id)
    existing = [p for p in (paths.key, paths.cert) if p.exists()]
    if existing and not force:
        raise NodeCertExistsError(
            f"node {node_id!r} already has {', '.join(p.name for p in existing)} in {out}; "
            "refusing to overwrite (`--force` issues a new signing key)"
        )
    key = ed25519.Ed25519PrivateKey.generate()
    now = now_utc()
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.COMMON_NAME, node_id),
                    x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, SIGNER_UNIT),
                ]
            )
        )
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + dt.timedelta(days=days), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=True,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    write_file(
        paths.key,
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        mode=0o600,
    )
    write_file(paths.cert, cert.public_bytes(pem))
    return paths


@dataclass(frozen=True)
class Signer:
    """A CA-certified signing key: the node it signs for and its public key."""

    node: str
    key: ed25519.Ed25519PublicKey
    fingerprint: str
    pem: bytes

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            self.key.verify(signature, message)
        except InvalidSignature:
            return False
        return True


def signer_from_pem(pem: bytes, ca_cert: x509.Certificate) -> Signer:
    """Check a signing certificate (from a file or a peer) against the CA: issued by it, OU
    ``noon-signer``, a valid node id as CN, an Ed25519 key. Raises :class:`CertError` saying
    what is wrong. Expiry is not checked: a signature stays what it was when it was made;
    revocation is how a key stops counting."""
    if len(pem) > MAX_SIGNER_PEM:
        raise CertParseError(f"a signing certificate of {len(pem)} bytes is too large")
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError as e:
        raise CertParseError(f"not a PEM certificate: {e}") from None
    ca_key = ca_cert.public_key()
    if cert.issuer != ca_cert.subject or not isinstance(ca_key, ec.EllipticCurvePublicKey):
        raise NotSignedByCaError("the signing certificate was not issued by this CA")
    algorithm = cert.signature_hash_algorithm
    if algorithm is None:
        raise NotSignedByCaError("the signing certificate has no signature hash")
    try:
        ca_key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(algorithm))
    except InvalidSignature:
        raise NotSignedByCaError("the signing certificate's signature is not the CA's") from None
    units = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME)]
    if units != [SIGNER_UNIT]:
        raise CertError(f"not a signing certificate (OU {units!r}, expected {SIGNER_UNIT!r})")
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if len(names) != 1 or not isinstance(names[0].value, str):
        raise CertError("a signing certificate names exactly one node id")
    node = validate_node_id(names[0].value)
    key = cert.public_key()
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise CertError("a signing certificate holds an Ed25519 key")
    fingerprint = cert.fingerprint(hashes.SHA256()).hex()
    return Signer(node, key, fingerprint, cert.public_bytes(serialization.Encoding.PEM))


def read_signer(path: Path, ca_path: Path) -> Signer:
    """This node's own signing certificate, checked against the CA file."""
    return signer_from_pem(Path(path).read_bytes(), read_cert(ca_path, "CA certificate"))


def ca_certificate(ca_path: Path) -> x509.Certificate:
    return read_cert(ca_path, "CA certificate")


__all__ = [
    "CA_CERT_NAME",
    "MAX_SIGNER_PEM",
    "SIGNER_UNIT",
    "Signer",
    "SigningPaths",
    "ca_certificate",
    "issue_signing_cert",
    "read_signer",
    "signer_from_pem",
    "signing_paths",
]
