"""Reading and checking certificate and key files (PEM)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID

from noon.certs._types import (
    ROLE_NODE,
    CertFileMissingError,
    CertInfo,
    CertParseError,
    InvalidNodeIdError,
    KeyMismatchError,
    NotSignedByCaError,
    now_utc,
    role_of,
    validate_node_id,
)


def _require_file(path: Path, what: str) -> Path:
    path = Path(path)
    if not path.is_file():
        raise CertFileMissingError(f"{what} not found: {path}")
    return path


def read_cert(path: Path, what: str = "certificate") -> x509.Certificate:
    data = _require_file(path, what).read_bytes()
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError as e:
        raise CertParseError(f"{what} {path} is not a PEM X.509 certificate: {e}") from e


def read_key(path: Path, what: str = "private key") -> Any:
    data = _require_file(path, what).read_bytes()
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise CertParseError(f"{what} {path} is not an unencrypted PEM private key: {e}") from e


def _spki(public_key: Any) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def check_pair(cert: x509.Certificate, key: Any, cert_path: Path, key_path: Path) -> None:
    if _spki(cert.public_key()) != _spki(key.public_key()):
        raise KeyMismatchError(f"private key {key_path} does not match certificate {cert_path}")


def _check_signed_by(
    cert: x509.Certificate, ca: x509.Certificate, cert_path: Path, ca_path: Path
) -> None:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature) as e:
        raise NotSignedByCaError(
            f"certificate {cert_path} (issuer {cert.issuer.rfc4514_string()!r}) was not signed "
            f"by the CA {ca_path} ({ca.subject.rfc4514_string()!r}): {e or type(e).__name__}"
        ) from e


def common_name(name: x509.Name) -> str | None:
    attrs = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    if len(attrs) != 1:
        return None
    value = attrs[0].value
    return value if isinstance(value, str) else None


def check_node_files(cert: Path, key: Path, ca: Path) -> str:
    """Check that the files exist, the key matches the cert and the cert is signed by the CA.

    Returns the certificate's CN (the node id). Raises CertFileMissingError, CertParseError,
    KeyMismatchError, NotSignedByCaError or InvalidNodeIdError. Expiry is NOT checked here (see
    `cert_info`); an expired certificate fails at handshake time.
    """
    cert, key, ca = Path(cert), Path(key), Path(ca)
    ca_cert = read_cert(ca, "CA certificate")
    node_cert = read_cert(cert, "certificate")
    node_key = read_key(key, "private key")
    check_pair(node_cert, node_key, cert, key)
    _check_signed_by(node_cert, ca_cert, cert, ca)
    cn = common_name(node_cert.subject)
    if cn is None:
        raise InvalidNodeIdError(f"certificate {cert} has no single common name")
    units = [
        a.value for a in node_cert.subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME)
    ]
    if role_of(units) != ROLE_NODE:
        raise InvalidNodeIdError(
            f"certificate {cert} is not a node certificate (organizational unit {units}): a "
            "daemon needs one issued with `noon certs issue NODE`"
        )
    return validate_node_id(cn)


def cert_info(path: Path, *, now: dt.datetime | None = None) -> CertInfo:
    """Summarize a PEM certificate (for `noon doctor`)."""
    path = Path(path)
    cert = read_cert(path)
    now = now or now_utc()
    not_after = cert.not_valid_after_utc
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = tuple(san.get_values_for_type(x509.DNSName))
        ips = tuple(str(ip) for ip in san.get_values_for_type(x509.IPAddress))
    except x509.ExtensionNotFound:
        dns, ips = (), ()
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    return CertInfo(
        path=path,
        common_name=common_name(cert.subject),
        issuer_common_name=common_name(cert.issuer),
        serial=cert.serial_number,
        not_before=cert.not_valid_before_utc,
        not_after=not_after,
        days_left=(not_after - now) // dt.timedelta(days=1),
        is_ca=is_ca,
        dns_names=dns,
        ip_addresses=ips,
        fingerprint_sha256=cert.fingerprint(hashes.SHA256()).hex(),
    )
