"""Private CA and node certificates for noon's mutual-TLS replication.

Model (see DESIGN.md, "Replication"): one private CA per person; every machine (node) holds a key
and a certificate signed by that CA whose subject CN is the node id. Both sides of a connection
present their certificate (mTLS) and the peer's identity is the CN, read with `peer_node_id`.

Keys are EC P-256 (accepted by every OpenSSL that Python's `ssl` links against), signatures are
ECDSA-SHA256. Private keys are written unencrypted as PKCS#8 PEM with mode 0600.

Layout:
    <ca_dir>/ca.key, <ca_dir>/ca.crt                      (`init_ca`)
    <out_dir>/<node>.key, <out_dir>/<node>.crt, ca.crt    (`issue_node_cert`)

Revocation is by node id list elsewhere (no CRLs here).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import os
import re
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from noon.errors import NoonError

__all__ = [
    "CA_CERT_NAME",
    "CA_KEY_NAME",
    "CaExistsError",
    "CaPaths",
    "CertError",
    "CertFileMissingError",
    "CertInfo",
    "CertParseError",
    "InvalidNodeIdError",
    "KeyMismatchError",
    "NodeCertExistsError",
    "NodePaths",
    "NotSignedByCaError",
    "PeerIdentityError",
    "cert_info",
    "check_node_files",
    "client_ssl_context",
    "init_ca",
    "issue_node_cert",
    "peer_node_id",
    "require_peer",
    "server_ssl_context",
    "validate_node_id",
]

CA_KEY_NAME = "ca.key"
CA_CERT_NAME = "ca.crt"

NODE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# RFC 5280 ub-common-name: a CN holds at most 64 characters, so certificates cap node ids there.
MAX_CERT_NODE_ID_LEN = 64
# Names that would collide with the CA files written next to node files.
_RESERVED_NODE_IDS = frozenset({"ca"})
_HOST_RE = re.compile(r"^(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_-]{1,63})*\.?$")
_CLOCK_SKEW = dt.timedelta(minutes=5)
_DEFAULT_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")

# --------------------------------------------------------------------------- errors


class CertError(NoonError):
    """Base class of every error raised by this module."""


class CertFileMissingError(CertError, FileNotFoundError):
    """A key, certificate or CA file that is needed does not exist."""


class CertParseError(CertError, ValueError):
    """A file exists but is not a readable PEM key or certificate."""


class CaExistsError(CertError, FileExistsError):
    """`init_ca` would overwrite an existing CA."""


class NodeCertExistsError(CertError, FileExistsError):
    """`issue_node_cert` would overwrite an existing node key/certificate or a different ca.crt."""


class KeyMismatchError(CertError):
    """A private key does not belong to the certificate it is paired with."""


class NotSignedByCaError(CertError):
    """A certificate was not issued by the given CA."""


class InvalidNodeIdError(CertError, ValueError):
    """A node id is not usable (charset, length, path tricks or reserved name)."""


class PeerIdentityError(CertError):
    """The TLS peer did not prove the expected node id."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CaPaths:
    dir: Path
    key: Path
    cert: Path


@dataclass(frozen=True)
class NodePaths:
    node_id: str
    dir: Path
    key: Path
    cert: Path
    ca: Path


@dataclass(frozen=True)
class CertInfo:
    path: Path
    common_name: str | None
    issuer_common_name: str | None
    serial: int
    not_before: dt.datetime  # timezone-aware UTC
    not_after: dt.datetime  # timezone-aware UTC
    days_left: int  # whole days until not_after; negative once expired
    is_ca: bool
    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]
    fingerprint_sha256: str  # hex, lowercase

    @property
    def expired(self) -> bool:
        return self.days_left < 0


# --------------------------------------------------------------------------- helpers


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def validate_node_id(node_id: object) -> str:
    """Return `node_id` if it is usable as a node id in a certificate, else raise.

    Rules: `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, no "..", at most 64 characters (the RFC 5280
    limit of a certificate CN), and not a name reserved for the CA files ("ca").
    """
    if not isinstance(node_id, str):
        raise InvalidNodeIdError(f"node id must be a string, got {type(node_id).__name__}")
    if not node_id:
        raise InvalidNodeIdError("node id must not be empty")
    if not NODE_ID_RE.fullmatch(node_id):
        raise InvalidNodeIdError(
            f"invalid node id {node_id[:80]!r}: must match {NODE_ID_RE.pattern} "
            "(start with a letter or digit; then letters, digits, '.', '_', '-'; max 128 chars)"
        )
    if ".." in node_id:
        raise InvalidNodeIdError(f"invalid node id {node_id!r}: must not contain '..'")
    if len(node_id) > MAX_CERT_NODE_ID_LEN:
        raise InvalidNodeIdError(
            f"invalid node id {node_id[:80]!r}: {len(node_id)} characters, but a certificate "
            f"common name holds at most {MAX_CERT_NODE_ID_LEN} (RFC 5280)"
        )
    if node_id.lower() in _RESERVED_NODE_IDS:
        raise InvalidNodeIdError(
            f"invalid node id {node_id!r}: reserved (it would collide with the CA files)"
        )
    return node_id


def _is_valid_node_id(value: str) -> bool:
    try:
        validate_node_id(value)
    except InvalidNodeIdError:
        return False
    return True


def _san_for_host(host: str) -> x509.GeneralName:
    if not isinstance(host, str) or not host:
        raise ValueError(f"invalid host {host!r}: must be a non-empty string")
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        pass
    if len(host) > 253 or not _HOST_RE.fullmatch(host):
        raise ValueError(
            f"invalid host {host[:80]!r}: expected an IP address or an ASCII DNS name "
            "(IDNs must be given in their xn-- form)"
        )
    return x509.DNSName(host.rstrip(".").lower())


def _require_file(path: Path, what: str) -> Path:
    path = Path(path)
    if not path.is_file():
        raise CertFileMissingError(f"{what} not found: {path}")
    return path


def _read_cert(path: Path, what: str = "certificate") -> x509.Certificate:
    data = _require_file(path, what).read_bytes()
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError as e:
        raise CertParseError(f"{what} {path} is not a PEM X.509 certificate: {e}") from e


def _read_key(path: Path, what: str = "private key") -> Any:
    data = _require_file(path, what).read_bytes()
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise CertParseError(f"{what} {path} is not an unencrypted PEM private key: {e}") from e


def _spki(public_key: Any) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _check_pair(cert: x509.Certificate, key: Any, cert_path: Path, key_path: Path) -> None:
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


def _common_name(name: x509.Name) -> str | None:
    attrs = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    if len(attrs) != 1:
        return None
    value = attrs[0].value
    return value if isinstance(value, str) else None


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to `path` via a temp file in the same directory, created with `mode`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _mkdir(path: Path) -> Path:
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


# --------------------------------------------------------------------------- CA


def init_ca(
    dir: Path,
    *,
    name: str = "noon CA",
    days: int = 3650,
    force: bool = False,
) -> CaPaths:
    """Create a private CA in `dir`: `ca.key` (0600) and a self-signed `ca.crt`.

    Refuses (CaExistsError) if either file already exists, unless `force=True`. Forcing a new CA
    invalidates every node certificate issued by the old one.
    """
    if not isinstance(name, str) or not 1 <= len(name.encode()) <= 64:
        raise ValueError(f"CA name must be 1..64 bytes, got {name!r}")
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    d = _mkdir(Path(dir))
    paths = CaPaths(dir=d, key=d / CA_KEY_NAME, cert=d / CA_CERT_NAME)
    existing = [p for p in (paths.key, paths.cert) if p.exists()]
    if existing and not force:
        raise CaExistsError(
            f"a CA already exists in {d} ({', '.join(p.name for p in existing)}); refusing to "
            "overwrite it (force=True replaces it and invalidates every node certificate)"
        )

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _atomic_write(paths.key, _key_pem(key), 0o600)
    _atomic_write(paths.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return paths


# --------------------------------------------------------------------------- node certificates


def issue_node_cert(
    ca_dir: Path,
    node_id: str,
    out_dir: Path,
    *,
    days: int = 825,
    hosts: list[str] | tuple[str, ...] = (),
    not_before: dt.datetime | None = None,
    not_after: dt.datetime | None = None,
    force: bool = False,
) -> NodePaths:
    """Issue a key and certificate for `node_id`, signed by the CA in `ca_dir`.

    CN = node id. SANs: DNS `node_id`, `localhost`, IP 127.0.0.1 and ::1, plus `hosts` (DNS names
    or IP literals). EKU serverAuth + clientAuth. Writes `<node>.key` (0600), `<node>.crt` and a
    copy of `ca.crt` into `out_dir`.

    Validity is `days` from now (capped at the CA's own expiry) unless `not_before`/`not_after`
    (timezone-aware) are given explicitly; explicit values are used as-is, which lets tests make
    expired or not-yet-valid certificates.

    Refuses (NodeCertExistsError) to overwrite an existing `<node>.key`/`<node>.crt`, or a
    `ca.crt` in `out_dir` that differs from the CA's, unless `force=True`.
    """
    validate_node_id(node_id)
    ca_dir = Path(ca_dir)
    ca_key_path, ca_cert_path = ca_dir / CA_KEY_NAME, ca_dir / CA_CERT_NAME
    ca_key = _read_key(ca_key_path, "CA private key")
    ca_cert = _read_cert(ca_cert_path, "CA certificate")
    _check_pair(ca_cert, ca_key, ca_cert_path, ca_key_path)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise CertParseError(f"CA private key {ca_key_path} is not an EC key")

    now = _now()
    if not_before is None:
        not_before = now - _CLOCK_SKEW
    if not_after is None:
        if days < 1:
            raise ValueError(f"days must be >= 1, got {days}")
        not_after = min(now + dt.timedelta(days=days), ca_cert.not_valid_after_utc)
    for label, value in (("not_before", not_before), ("not_after", not_after)):
        if value.tzinfo is None:
            raise ValueError(f"{label} must be timezone-aware, got {value!r}")
    if not_after <= not_before:
        raise ValueError(f"not_after ({not_after}) must be after not_before ({not_before})")

    sans: list[x509.GeneralName] = [x509.DNSName(node_id)]
    for host in (*_DEFAULT_HOSTS, *hosts):
        san = _san_for_host(host)
        if san not in sans:
            sans.append(san)

    out = _mkdir(Path(out_dir))
    paths = NodePaths(
        node_id=node_id,
        dir=out,
        key=out / f"{node_id}.key",
        cert=out / f"{node_id}.crt",
        ca=out / CA_CERT_NAME,
    )
    ca_pem = ca_cert_path.read_bytes()
    copy_ca = True
    try:
        same_file = paths.ca.resolve() == ca_cert_path.resolve()
    except OSError:
        same_file = False
    if same_file:
        copy_ca = False
    elif paths.ca.exists() and not force:
        if paths.ca.read_bytes() != ca_pem:
            raise NodeCertExistsError(
                f"{paths.ca} exists and is a different CA than {ca_cert_path}; refusing to "
                "overwrite it (force=True replaces it)"
            )
        copy_ca = False
    existing = [p for p in (paths.key, paths.cert) if p.exists()]
    if existing and not force:
        raise NodeCertExistsError(
            f"node {node_id!r} already has {', '.join(p.name for p in existing)} in {out}; "
            "refusing to overwrite (force=True re-issues)"
        )

    key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = _ca_ski(ca_cert)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, node_id)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
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
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    _atomic_write(paths.key, _key_pem(key), 0o600)
    _atomic_write(paths.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    if copy_ca:
        _atomic_write(paths.ca, ca_pem, 0o644)
    return paths


def _ca_ski(ca_cert: x509.Certificate) -> x509.SubjectKeyIdentifier:
    try:
        return ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.SubjectKeyIdentifier.from_public_key(ca_cert.public_key())


# --------------------------------------------------------------------------- checks / info


def check_node_files(cert: Path, key: Path, ca: Path) -> str:
    """Check that the files exist, the key matches the cert and the cert is signed by the CA.

    Returns the certificate's CN (the node id). Raises CertFileMissingError, CertParseError,
    KeyMismatchError, NotSignedByCaError or InvalidNodeIdError. Expiry is NOT checked here (see
    `cert_info`); an expired certificate fails at handshake time.
    """
    cert, key, ca = Path(cert), Path(key), Path(ca)
    ca_cert = _read_cert(ca, "CA certificate")
    node_cert = _read_cert(cert, "certificate")
    node_key = _read_key(key, "private key")
    _check_pair(node_cert, node_key, cert, key)
    _check_signed_by(node_cert, ca_cert, cert, ca)
    cn = _common_name(node_cert.subject)
    if cn is None:
        raise InvalidNodeIdError(f"certificate {cert} has no single common name")
    return validate_node_id(cn)


def cert_info(path: Path, *, now: dt.datetime | None = None) -> CertInfo:
    """Summarize a PEM certificate (for `noon doctor`)."""
    path = Path(path)
    cert = _read_cert(path)
    now = now or _now()
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
        common_name=_common_name(cert.subject),
        issuer_common_name=_common_name(cert.issuer),
        serial=cert.serial_number,
        not_before=cert.not_valid_before_utc,
        not_after=not_after,
        days_left=(not_after - now) // dt.timedelta(days=1),
        is_ca=is_ca,
        dns_names=dns,
        ip_addresses=ips,
        fingerprint_sha256=cert.fingerprint(hashes.SHA256()).hex(),
    )


# --------------------------------------------------------------------------- TLS contexts


def _base_context(protocol: int, cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    check_node_files(cert, key, ca)
    ctx = ssl.SSLContext(protocol)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_cert_chain(certfile=str(cert), keyfile=str(key))
    ctx.load_verify_locations(cafile=str(ca))
    return ctx


def server_ssl_context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    """TLS 1.2+ server context presenting `cert` and requiring a client cert signed by `ca`.

    Only the CA in `ca` is trusted (never the system store). The peer's identity is
    `peer_node_id(ssl_object)`; revocation by node id is the caller's job.
    """
    return _base_context(ssl.PROTOCOL_TLS_SERVER, cert, key, ca)


def client_ssl_context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    """TLS 1.2+ client context presenting `cert` and verifying the server against `ca` only.

    Hostname checking is OFF: peers are dialled by address and the identity that matters is the
    certificate's CN. Callers MUST check it after the handshake with
    `require_peer(ssl_object, expected_node_id)` (or compare `peer_node_id` themselves).
    """
    ctx = _base_context(ssl.PROTOCOL_TLS_CLIENT, cert, key, ca)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED  # re-assert: check_hostname=False must not weaken it
    return ctx


class _HasPeerCert(Protocol):
    def getpeercert(self) -> Any: ...


def peer_node_id(ssl_object: _HasPeerCert | None) -> str | None:
    """The node id (subject CN) of the verified TLS peer, or None.

    Works with `ssl.SSLSocket` and `ssl.SSLObject` (aiohttp: `transport.get_extra_info(
    "ssl_object")`). Returns None if there is no verified peer certificate, the subject has zero
    or several CNs, or the CN is not a valid node id (so the result is always path-safe).
    """
    if ssl_object is None:
        return None
    try:
        peer = ssl_object.getpeercert()
    except (ValueError, ssl.SSLError):  # handshake not done / connection closed
        return None
    if not peer:
        return None
    cns = [
        value for rdn in peer.get("subject", ()) for (attr, value) in rdn if attr == "commonName"
    ]
    if len(cns) != 1 or not isinstance(cns[0], str):
        return None
    return cns[0] if _is_valid_node_id(cns[0]) else None


def require_peer(ssl_object: _HasPeerCert | None, expected_node_id: str) -> str:
    """Return the peer's node id if it equals `expected_node_id`, else raise PeerIdentityError."""
    got = peer_node_id(ssl_object)
    if got is None or got != expected_node_id:
        raise PeerIdentityError(
            f"TLS peer identity mismatch: expected node {expected_node_id!r}, "
            f"certificate proves {got!r}"
        )
    return got
