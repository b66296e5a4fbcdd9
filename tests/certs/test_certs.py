"""noon.certs' files and certificates: the layout and modes of what it writes, the contents
and extensions of what it issues, what it refuses, and the peer identity it reads. The
handshakes themselves are in test_handshakes.py."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from noon import certs
from noon.certs import (
    CaExistsError,
    CertFileMissingError,
    CertParseError,
    InvalidNodeIdError,
    KeyMismatchError,
    NodeCertExistsError,
    NotSignedByCaError,
    PeerIdentityError,
    cert_info,
    check_node_files,
    client_ssl_context,
    init_ca,
    issue_node_cert,
    peer_node_id,
    require_peer,
    server_ssl_context,
    validate_node_id,
)


def _mode(p: Path) -> int:
    return p.stat().st_mode & 0o777


def _load(p: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(p.read_bytes())


# --------------------------------------------------------------------------- files & contents


def test_init_ca_files_and_extensions(ca: certs.CaPaths) -> None:
    assert ca.key.name == "ca.key" and ca.cert.name == "ca.crt"
    assert _mode(ca.key) == 0o600
    cert = _load(ca.cert)
    assert cert.subject == cert.issuer
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "noon CA"
    bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert bc.critical and bc.value.ca
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert ku.key_cert_sign and ku.crl_sign and not ku.digital_signature
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    cert.verify_directly_issued_by(cert)  # self-signed
    info = cert_info(ca.cert)
    assert info.is_ca and info.common_name == "noon CA" and 3640 <= info.days_left <= 3650


def test_init_ca_refuses_overwrite_unless_forced(ca: certs.CaPaths) -> None:
    before = ca.cert.read_bytes()
    with pytest.raises(CaExistsError, match="already exists"):
        init_ca(ca.dir)
    assert ca.cert.read_bytes() == before
    ca.cert.unlink()  # a half-present CA is refused too
    with pytest.raises(CaExistsError, match=r"ca\.key"):
        init_ca(ca.dir)
    again = init_ca(ca.dir, name="second", force=True)
    assert cert_info(again.cert).common_name == "second"
    assert _mode(again.key) == 0o600


def test_issue_node_cert_contents(ca: certs.CaPaths, tmp_path: Path) -> None:
    n = issue_node_cert(
        ca.dir, "laptop.home", tmp_path / "n", hosts=["laptop.tail1234.ts.net", "192.0.2.7"]
    )
    assert n.key == tmp_path / "n" / "laptop.home.key"
    assert n.cert == tmp_path / "n" / "laptop.home.crt"
    assert n.ca.read_bytes() == ca.cert.read_bytes()
    assert _mode(n.key) == 0o600
    assert b"PRIVATE KEY" in n.key.read_bytes()

    cert = _load(n.cert)
    cert.verify_directly_issued_by(_load(ca.cert))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "laptop.home"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [
        "laptop.home",
        "localhost",
        "laptop.tail1234.ts.net",
    ]
    assert set(san.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
        ipaddress.ip_address("192.0.2.7"),
    }
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(eku) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert check_node_files(n.cert, n.key, n.ca) == "laptop.home"

    info = cert_info(n.cert)
    assert info.common_name == "laptop.home"
    assert info.issuer_common_name == "noon CA"
    assert info.serial == cert.serial_number
    assert 820 <= info.days_left <= 825 and not info.expired and not info.is_ca
    assert info.not_before < dt.datetime.now(dt.UTC) < info.not_after
    assert info.not_after.tzinfo is not None


def test_issue_refuses_overwrite_and_foreign_ca(ca: certs.CaPaths, tmp_path: Path) -> None:
    out = tmp_path / "n"
    first = issue_node_cert(ca.dir, "n1", out)
    before = first.cert.read_bytes()
    with pytest.raises(NodeCertExistsError, match="already has"):
        issue_node_cert(ca.dir, "n1", out)
    assert first.cert.read_bytes() == before
    assert issue_node_cert(ca.dir, "n1", out, force=True).cert.read_bytes() != before
    issue_node_cert(ca.dir, "n2", out)  # a second node sharing the same ca.crt is fine

    other = init_ca(tmp_path / "other")
    with pytest.raises(NodeCertExistsError, match="different CA"):
        issue_node_cert(other.dir, "n3", out)
    assert not (out / "n3.key").exists()


def test_issue_into_ca_dir_keeps_ca(ca: certs.CaPaths) -> None:
    ca_pem = ca.cert.read_bytes()
    n = issue_node_cert(ca.dir, "solo", ca.dir)
    assert ca.cert.read_bytes() == ca_pem and n.ca == ca.cert
    assert check_node_files(n.cert, n.key, n.ca) == "solo"


def test_issue_validity_capped_by_ca(tmp_path: Path) -> None:
    short = init_ca(tmp_path / "ca", days=10)
    n = issue_node_cert(short.dir, "n", tmp_path / "n")
    assert cert_info(n.cert).not_after == cert_info(short.cert).not_after


def test_issue_rejects_bad_validity_and_hosts(ca: certs.CaPaths, tmp_path: Path) -> None:
    now = dt.datetime.now(dt.UTC)
    with pytest.raises(ValueError, match="after"):
        issue_node_cert(ca.dir, "n", tmp_path / "n", not_before=now, not_after=now)
    with pytest.raises(ValueError, match="timezone-aware"):
        issue_node_cert(ca.dir, "n", tmp_path / "n", not_after=dt.datetime(2000, 1, 1))
    for bad in ["", "bad host", "a/b", "ünïcode.example"]:
        with pytest.raises(ValueError, match="invalid host"):
            issue_node_cert(ca.dir, "n", tmp_path / "n", hosts=[bad])


# --------------------------------------------------------------------------- node ids


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "../x",
        "a/b",
        "x/../y",
        "..",
        "a..b",
        ".hidden",
        "-x",
        "_x",
        "a b",
        "a\\b",
        "a\x00b",
        "nöde",
        "@knowledge",
        "x" * 129,
        "x" * 65,  # legal by the regex, but longer than a certificate CN may be
        "ca",
        "CA",
    ],
)
def test_invalid_node_ids_rejected(bad: str, ca: certs.CaPaths, tmp_path: Path) -> None:
    with pytest.raises(InvalidNodeIdError):
        validate_node_id(bad)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="node id"):  # InvalidNodeIdError is a ValueError
        issue_node_cert(ca.dir, bad, out)
    assert not out.exists()  # nothing written anywhere


def test_valid_node_ids(ca: certs.CaPaths, tmp_path: Path) -> None:
    for ok in ["a", "A9", "node-1.example_x", "x" * 64, "ca1", "0"]:
        assert validate_node_id(ok) == ok
    n = issue_node_cert(ca.dir, "x" * 64, tmp_path / "n")
    assert cert_info(n.cert).common_name == "x" * 64
    with pytest.raises(InvalidNodeIdError):
        validate_node_id(None)


# --------------------------------------------------------------------------- typed errors


def test_missing_files(node_a: certs.NodePaths, tmp_path: Path) -> None:
    with pytest.raises(CertFileMissingError, match="certificate not found"):
        server_ssl_context(tmp_path / "nope.crt", node_a.key, node_a.ca)
    with pytest.raises(CertFileMissingError, match="private key not found"):
        client_ssl_context(node_a.cert, tmp_path / "nope.key", node_a.ca)
    with pytest.raises(CertFileMissingError, match="CA certificate not found"):
        server_ssl_context(node_a.cert, node_a.key, tmp_path / "ca.crt")
    with pytest.raises(FileNotFoundError):
        issue_node_cert(tmp_path / "no-ca", "n", tmp_path / "n")
    with pytest.raises(CertFileMissingError):
        cert_info(tmp_path / "nope.crt")


def test_key_mismatch(node_a: certs.NodePaths, node_b: certs.NodePaths) -> None:
    with pytest.raises(KeyMismatchError, match="does not match"):
        server_ssl_context(node_a.cert, node_b.key, node_a.ca)
    with pytest.raises(KeyMismatchError):
        client_ssl_context(node_b.cert, node_a.key, node_b.ca)


def test_not_signed_by_ca(node_a: certs.NodePaths, tmp_path: Path) -> None:
    other = init_ca(tmp_path / "other", name="other CA")
    with pytest.raises(NotSignedByCaError, match="not signed"):
        server_ssl_context(node_a.cert, node_a.key, other.cert)
    with pytest.raises(NotSignedByCaError):
        client_ssl_context(node_a.cert, node_a.key, other.cert)


def test_garbage_files(node_a: certs.NodePaths, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a pem\n")
    with pytest.raises(CertParseError):
        server_ssl_context(junk, node_a.key, node_a.ca)
    with pytest.raises(CertParseError):
        server_ssl_context(node_a.cert, junk, node_a.ca)
    with pytest.raises(CertParseError):
        cert_info(junk)


# --------------------------------------------------------------------------- contexts


def test_peer_node_id_edge_cases() -> None:
    class Fake:
        def __init__(self, cert: object) -> None:
            self.cert = cert

        def getpeercert(self, binary_form: bool = False) -> object:
            return self.cert

    assert peer_node_id(None) is None
    assert peer_node_id(Fake(None)) is None
    assert peer_node_id(Fake({})) is None  # unverified peer
    assert peer_node_id(Fake({"subject": ((("commonName", "n1"),),)})) == "n1"
    two = {"subject": ((("commonName", "n1"),), (("commonName", "n2"),))}
    assert peer_node_id(Fake(two)) is None
    assert peer_node_id(Fake({"subject": ((("commonName", "../etc"),),)})) is None
    assert peer_node_id(Fake({"subject": ((("organizationName", "x"),),)})) is None
    with pytest.raises(PeerIdentityError, match="expected node 'n2'"):
        require_peer(Fake({"subject": ((("commonName", "n1"),),)}), "n2")


# --------------------------------------------------------------------------- real handshakes


class _FakeTls:
    def __init__(self, subject: tuple[tuple[tuple[str, str], ...], ...]) -> None:
        self.subject = subject

    def getpeercert(self) -> dict[str, object]:
        return {"subject": self.subject}


@pytest.mark.parametrize(
    "units,want",
    [
        ((), ("laptop", "node")),
        ((("organizationalUnitName", "noon-node"),), ("laptop", "node")),
        ((("organizationalUnitName", "noon-metrics"),), ("laptop", "metrics")),
        ((("organizationalUnitName", "admins"),), None),
        (
            (
                ("organizationalUnitName", "noon-metrics"),
                ("organizationalUnitName", "noon-node"),
            ),
            None,
        ),
    ],
)
def test_the_role_is_read_from_the_organizational_unit(units, want):
    from noon.certs import peer_identity, peer_node_id

    tls = _FakeTls(((("commonName", "laptop"),), *((u,) for u in units)))
    assert peer_identity(tls) == want
    assert peer_node_id(tls) == ("laptop" if want == ("laptop", "node") else None)


def test_a_metrics_certificate_is_for_clients_only(tmp_path):
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from noon import certs

    certs.init_ca(tmp_path / "ca")
    paths = certs.issue_node_cert(tmp_path / "ca", "prom", tmp_path / "out", role="metrics")
    cert = x509.load_pem_x509_certificate(paths.cert.read_bytes())
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_a_machine_a_day_behind_accepts_a_certificate_issued_now(
    ca: certs.CaPaths, tmp_path: Path
) -> None:
    """Certificates (the signing key's too) are valid from a day before they are issued
    (docs/noond.md says so): a peer whose clock is up to that far behind does not see them as
    not yet valid."""
    node = issue_node_cert(ca.dir, "fresh", tmp_path / "fresh")
    signer = certs.signing_paths(tmp_path / "fresh", "fresh")  # its signing key's, issued too
    behind = dt.datetime.now(dt.UTC) - dt.timedelta(hours=23, minutes=59)
    for path in (node.cert, signer.cert, ca.cert):
        cert = x509.load_pem_x509_certificate(path.read_bytes())
        assert cert.not_valid_before_utc <= behind < cert.not_valid_after_utc
