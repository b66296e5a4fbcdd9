"""Private CA and node certificates for noon's mutual-TLS replication.

Model (PROTOCOL.md §2): one private CA per person; every machine (node) holds a key
and a certificate signed by that CA whose subject CN is the node id. Both sides of a connection
present their certificate (mTLS) and the peer's identity is the CN, read with `peer_node_id`.

Keys are EC P-256 (accepted by every OpenSSL that Python's `ssl` links against), signatures are
ECDSA-SHA256. Private keys are written unencrypted as PKCS#8 PEM with mode 0600.

Layout:
    <ca_dir>/ca.key, <ca_dir>/ca.crt                      (`init_ca`)
    <out_dir>/<node>.key, <out_dir>/<node>.crt, ca.crt    (`issue_node_cert`)

Roles: a certificate's subject may carry an organizational unit (OU) naming its role. Without
one (or with ``noon-node``) it is a *node*, a full member. With ``noon-metrics`` it is a
*monitoring identity* (``noon certs issue NAME --role metrics``): noond lets it read
``/metrics`` and ``/health`` and nothing else, never admits it as a member, and it is issued
for client authentication only. Any other OU is refused everywhere.

Signing: every node also holds an Ed25519 signing key certified by the CA
(``<node>.signing.key``, ``<node>.signing.crt``, OU ``noon-signer``): it signs the node's shards
(PROTOCOL.md §13). ``issue_node_cert`` issues one with the node certificate.

Relays: ``relay.key`` (``noon certs relay-key``) holds the mesh key, one per epoch, that seals
what a relay holds (PROTOCOL.md §14.1); it is handed to every machine like ``ca.crt``.

Revocation: a record signed with the CA key names a node and a cut-off stamp (``revoke``,
``parse_revocation``); it replicates between nodes (PROTOCOL.md §13.6). No CRLs.
"""

from __future__ import annotations

from noon.certs._files import cert_info, check_node_files
from noon.certs._issue import init_ca, issue_node_cert
from noon.certs._relaykey import (
    RELAY_KEY_NAME,
    MeshKey,
    RelayKeyError,
    copy_relay_key,
    create_relay_key,
    read_relay_key,
)
from noon.certs._revocation import MAX_RECORD, Revocation, parse_revocation, revoke
from noon.certs._signing import (
    SIGNER_UNIT,
    Signer,
    SigningPaths,
    ca_certificate,
    issue_signing_cert,
    read_signer,
    signer_from_pem,
    signing_paths,
)
from noon.certs._tls import (
    client_ssl_context,
    peer_identity,
    peer_node_id,
    require_peer,
    server_ssl_context,
)
from noon.certs._types import (
    CA_CERT_NAME,
    CA_KEY_NAME,
    MAX_CERT_NODE_ID_LEN,
    NODE_ID_RE,
    ROLE_METRICS,
    ROLE_NODE,
    ROLE_UNITS,
    CaExistsError,
    CaPaths,
    CertError,
    CertFileMissingError,
    CertInfo,
    CertParseError,
    InvalidNodeIdError,
    KeyMismatchError,
    NodeCertExistsError,
    NodePaths,
    NotSignedByCaError,
    PeerIdentityError,
    validate_node_id,
)

__all__ = [
    "CA_CERT_NAME",
    "CA_KEY_NAME",
    "MAX_CERT_NODE_ID_LEN",
    "MAX_RECORD",
    "NODE_ID_RE",
    "RELAY_KEY_NAME",
    "ROLE_METRICS",
    "ROLE_NODE",
    "ROLE_UNITS",
    "SIGNER_UNIT",
    "CaExistsError",
    "CaPaths",
    "CertError",
    "CertFileMissingError",
    "CertInfo",
    "CertParseError",
    "InvalidNodeIdError",
    "KeyMismatchError",
    "MeshKey",
    "NodeCertExistsError",
    "NodePaths",
    "NotSignedByCaError",
    "PeerIdentityError",
    "RelayKeyError",
    "Revocation",
    "Signer",
    "SigningPaths",
    "ca_certificate",
    "cert_info",
    "check_node_files",
    "client_ssl_context",
    "copy_relay_key",
    "create_relay_key",
    "init_ca",
    "issue_node_cert",
    "issue_signing_cert",
    "parse_revocation",
    "peer_identity",
    "peer_node_id",
    "read_relay_key",
    "read_signer",
    "require_peer",
    "revoke",
    "server_ssl_context",
    "signer_from_pem",
    "signing_paths",
    "validate_node_id",
]
