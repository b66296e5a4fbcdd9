"""The signing certificates this node knows (PROTOCOL.md §13.2): which keys may sign each
author's shards. Every certificate is checked against the person's CA before it counts, and
kept in ``NOON_DIR/.noon/signers.pem`` (one certificate after another), so a restart does not
ask again. A certificate travels with the shard: a node lacking the signer
of a shard it is about to pull asks the member serving it (``GET /signers/{node}``), which
cannot make a certificate the CA did not issue.

Without TLS there is no CA and so no signer: nothing is verified (a loopback test mesh)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from cryptography import x509

from noon import certs
from noon.core import checkpoint
from noon.core.chain import ChainError, Verify
from noon.core.checkpoint import Checkpoint
from noon.core.collection import IMPORT_SUFFIX, member_of
from noon.store import chainstate, checkpoints
from noon.store.shard import read_regular, write_file
from noond.revocations import Revocations

log = logging.getLogger("noond")

MAX_CHECKPOINTS = 48 << 20
"""The largest ``/signers`` answer read: two checkpoints (a node's and its import shard's)."""
MAX_SIGNERS_PER_NODE = 16
"""Certificates kept per node (rotations); a peer offering more is refused beyond it."""
_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----\s*", re.S)


class Signers:
    def __init__(self, directory: Path, ca: x509.Certificate | None) -> None:
        self.directory = directory
        self.path = directory / ".noon" / "signers.pem"
        self.revocations = Revocations(directory, ca)
        self.ca = ca
        self._by_node: dict[str, dict[str, certs.Signer]] = {}
        self.generation = 0
        """Moves whenever a certificate is kept or a checkpoint adopted (on the event loop: see
        :meth:`noond.pull.Puller.ask_signers`): a check that failed before it moved may pass
        after."""
        if ca is not None:
            self._load()

    @property
    def required(self) -> bool:
        """Whether shards must be signed here (there is a CA to check signers against)."""
        return self.ca is not None

    def _load(self) -> None:
        try:
            data = read_regular(self.path, 64 << 20)
        except FileNotFoundError:
            return
        for pem in _PEM.findall(data):
            try:
                self._keep(certs.signer_from_pem(pem, self.ca))  # type: ignore[arg-type]
            except certs.CertError as exc:
                log.warning("ignored a signing certificate in %s: %s", self.path, exc)

    def _keep(self, signer: certs.Signer) -> bool:
        known = self._by_node.setdefault(signer.node, {})
        if signer.fingerprint in known or len(known) >= MAX_SIGNERS_PER_NODE:
            return False
        known[signer.fingerprint] = signer
        self.generation += 1
        return True

    def certify(self, pem: bytes, node: str) -> certs.Signer:
        """Check ``pem`` against the CA as a signer of ``node``, without keeping it. Raises
        :class:`noon.certs.CertError` saying what is wrong."""
        if self.ca is None:
            raise certs.CertError("no CA here: signing certificates cannot be checked")
        signer = certs.signer_from_pem(pem, self.ca)
        if signer.node != node:
            raise certs.CertError(f"a signing certificate of {signer.node!r}, not of {node!r}")
        return signer

    def keep(self, signer: certs.Signer) -> None:
        """Know ``signer`` (from :meth:`certify`) from now on, here and after a restart."""
        if self._keep(signer):
            body = b"".join(s.pem for known in self._by_node.values() for s in known.values())
            write_file(self.path, body)

    def add(self, pem: bytes, node: str) -> certs.Signer:
        """:meth:`certify` and :meth:`keep`."""
        signer = self.certify(pem, node)
        self.keep(signer)
        return signer

    def of(self, node: str) -> list[certs.Signer]:
        return list(self._by_node.get(node, {}).values())

    def pems(self, node: str) -> list[str]:
        return [s.pem.decode() for s in self.of(node)]

    def check(self, shard: str, offered: list[certs.Signer] | None = None) -> Verify | None:
        """How to verify ``shard``'s signatures: any certified key of its author (an import
        shard's is its node's), and any of ``offered`` (certified, not kept yet). None when that
        author has no known signer."""
        keys = self.of(member_of(shard)) + (offered or [])
        if not keys:
            return None
        if len(keys) == 1:
            return keys[0].verify
        return lambda message, sig: any(k.verify(message, sig) for k in keys)

    def checkpoints(self, node: str) -> list[str]:
        """The checkpoints kept of ``node``'s shards (its own and its import shard)."""
        found = (chainstate.checkpoint(self.directory, s) for s in (node, node + IMPORT_SUFFIX))
        return [cp.encode().decode() for cp in found if cp is not None]

    def adopt(
        self, text: bytes, author: str, offered: list[certs.Signer] | None = None
    ) -> tuple[Checkpoint, int] | None:
        """Take a checkpoint offered for one of ``author``'s shards once it verifies with a
        certified key of ``author``, kept or ``offered`` (:mod:`noon.store.checkpoints`): (it,
        how many lines of the copy here it does not cover and were dropped), or None when one
        is kept already (the author signs one only). Raises
        :class:`noon.core.chain.ChainError` saying what is wrong."""
        shard = _checkpoint_node(text)
        if shard not in (author, author + IMPORT_SUFFIX):
            raise ChainError(f"a checkpoint of {shard!r} offered as one of {author!r}")
        check = self.check(shard, offered)
        if check is None:
            raise ChainError(f"no signing certificate of {author!r} to check its checkpoint")
        if chainstate.checkpoint(self.directory, shard) is not None:
            return None
        cp = checkpoint.parse(text, shard, check)
        return cp, checkpoints.adopt(self.directory, cp)


def _checkpoint_node(text: bytes) -> str:
    node = text[: 1 << 10].partition(b'"node":"')[2].partition(b'"')[0]
    try:
        return node.decode()
    except UnicodeDecodeError:
        return ""
