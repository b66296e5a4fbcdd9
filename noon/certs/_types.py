"""Names, roles, errors and result types of noon's certificates."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noon.errors import NoonError

BACKDATE = dt.timedelta(days=1)
"""How far before its issue a certificate is valid from: a machine whose clock is up to a day
behind the issuer's still accepts it (a laptop back from a trip, a board without a battery)."""

CA_KEY_NAME = "ca.key"


CA_CERT_NAME = "ca.crt"


ROLE_NODE = "node"


ROLE_METRICS = "metrics"


ROLE_UNITS = {ROLE_NODE: "noon-node", ROLE_METRICS: "noon-metrics"}
"""The subject OU of each role; a certificate without an OU is a node (older certificates)."""


NODE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


# RFC 5280 ub-common-name: a CN holds at most 64 characters, so certificates cap node ids there.
MAX_CERT_NODE_ID_LEN = 64


# Names that would collide with the CA files written next to node files.
_RESERVED_NODE_IDS = frozenset({"ca"})


class CertError(NoonError):
    """Base class of every error noon.certs raises."""


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


def now_utc() -> dt.datetime:
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


def is_valid_node_id(value: str) -> bool:
    try:
        validate_node_id(value)
    except InvalidNodeIdError:
        return False
    return True


def role_of(units: list[Any]) -> str | None:
    """The role an OU list names: none is a node (older certificates), one known OU its role,
    anything else no role at all."""
    if not units:
        return ROLE_NODE
    known = {unit: role for role, unit in ROLE_UNITS.items()}
    if len(units) != 1 or units[0] not in known:
        return None
    return known[units[0]]
