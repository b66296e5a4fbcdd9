"""Creating the private CA and issuing node and monitoring certificates."""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from noon.certs._files import check_pair, read_cert, read_key
from noon.certs._signing import issue_signing_cert, signing_paths
from noon.certs._types import (
    BACKDATE,
    CA_CERT_NAME,
    CA_KEY_NAME,
    ROLE_METRICS,
    ROLE_NODE,
    ROLE_UNITS,
    CaExistsError,
    CaPaths,
    CertParseError,
    NodeCertExistsError,
    NodePaths,
    now_utc,
    validate_node_id,
)
from noon.store.shard import write_file

_HOST_RE = re.compile(r"^(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_-]{1,63})*\.?$")


_DEFAULT_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")


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
            "overwrite it (`noon certs init --force` replaces it and invalidates every node "
            "certificate)"
        )

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = now_utc()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
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
    write_file(paths.key, _key_pem(key), mode=0o600)
    write_file(paths.cert, cert.public_bytes(serialization.Encoding.PEM))
    return paths


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
    role: str = ROLE_NODE,
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

    `role="metrics"` issues a monitoring identity instead (OU `noon-metrics`, client
    authentication only): it reaches a daemon's `/metrics` and `/health`, nothing else.
    """
    validate_node_id(node_id)
    if role not in ROLE_UNITS:
        raise ValueError(f"role must be one of {sorted(ROLE_UNITS)}, got {role!r}")
    ca_dir = Path(ca_dir)
    ca_key_path, ca_cert_path = ca_dir / CA_KEY_NAME, ca_dir / CA_CERT_NAME
    ca_key = read_key(ca_key_path, "CA private key")
    ca_cert = read_cert(ca_cert_path, "CA certificate")
    check_pair(ca_cert, ca_key, ca_cert_path, ca_key_path)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise CertParseError(f"CA private key {ca_key_path} is not an EC key")

    now = now_utc()
    if not_before is None:
        not_before = now - BACKDATE
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
                "overwrite it (`--force` replaces it)"
            )
        copy_ca = False
    existing = [p for p in (paths.key, paths.cert) if p.exists()]
    if existing and not force:
        raise NodeCertExistsError(
            f"node {node_id!r} already has {', '.join(p.name for p in existing)} in {out}; "
            "refusing to overwrite (`--force` re-issues)"
        )

    key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = _ca_ski(ca_cert)
    subject = [x509.NameAttribute(NameOID.COMMON_NAME, node_id)]
    usages = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    if role == ROLE_METRICS:
        subject.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ROLE_UNITS[role]))
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
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
            x509.ExtendedKeyUsage(usages),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    write_file(paths.key, _key_pem(key), mode=0o600)
    write_file(paths.cert, cert.public_bytes(serialization.Encoding.PEM))
    if copy_ca:
        write_file(paths.ca, ca_pem)
    if role == ROLE_NODE and not signing_paths(out, node_id).key.exists():
        issue_signing_cert(ca_dir, node_id, out)
    return paths


def _ca_ski(ca_cert: x509.Certificate) -> x509.SubjectKeyIdentifier:
    try:
        return ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.SubjectKeyIdentifier.from_public_key(ca_cert.public_key())
