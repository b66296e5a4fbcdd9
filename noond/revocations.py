"""Revocations signed by the CA (PROTOCOL.md §13.6) that this node believes: each checked
against the person's CA before it counts, kept in ``NOON_DIR/.noon/revocations.jsonl`` (where
``noon certs revoke`` also writes; the file is read again when it changes), served on
``GET /revocations`` and fetched from a member whose digest names another set. The earliest
cut-off of a node wins: a record can only take more away, never give back."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from cryptography import x509

from noon import certs
from noon.core.collection import IMPORT_SUFFIX, member_of
from noon.core.ops import OpError, decode
from noon.names import shard_file
from noon.store import chainstate, receive
from noon.store.shard import locked, read_regular, write_file

log = logging.getLogger("noond")

MAX_RECORDS = 1000
"""Records kept and read from one answer (a person revokes a few machines in a lifetime)."""


class Revoked(receive.Unproven):
    """Ops of a revoked author stamped after its cut-off. Nothing of the body is stored."""


class Revocations:
    def __init__(self, directory: Path, ca: x509.Certificate | None) -> None:
        self.path = directory / ".noon" / "revocations.jsonl"
        self.ca = ca
        self._records: dict[str, certs.Revocation] = {}
        self._seen: tuple[int, int] | None = None
        self.reload()

    def reload(self) -> None:
        """Read the file again when it changed (``noon certs revoke`` appends to it)."""
        if self.ca is None:
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        if (st.st_ino, st.st_mtime_ns) == self._seen:
            return
        self._seen = (st.st_ino, st.st_mtime_ns)
        for line in read_regular(self.path, MAX_RECORDS * certs.MAX_RECORD).splitlines():
            if line.strip():
                try:
                    self._keep(certs.parse_revocation(line, self.ca))
                except certs.CertError as exc:
                    log.warning("ignored a revocation in %s: %s", self.path, exc)

    def _keep(self, record: certs.Revocation) -> bool:
        held = self._records.get(record.node)
        if held is not None and held.after <= record.after:
            return False
        if held is None and len(self._records) >= MAX_RECORDS:
            return False
        self._records[record.node] = record
        return True

    def add(self, text: bytes) -> certs.Revocation | None:
        """Check a record against the CA and keep it: the record, when it revokes more than
        what was known (None: nothing new). Raises :class:`noon.certs.CertError`."""
        if self.ca is None:
            raise certs.CertError("no CA here: revocations cannot be checked")
        record = certs.parse_revocation(text, self.ca)
        if not self._keep(record):
            return None
        self.path.parent.mkdir(mode=0o700, exist_ok=True)
        write_file(self.path, (r.encode() + b"\n" for r in self.records()))
        st = os.stat(self.path)
        self._seen = (st.st_ino, st.st_mtime_ns)
        return record

    def records(self) -> list[certs.Revocation]:
        return [self._records[n] for n in sorted(self._records)]

    def digest(self) -> str:
        """What a member compares to know whether to fetch ours ('' when there are none)."""
        if not self._records:
            return ""
        joined = b"".join(r.encode() for r in self.records())
        return hashlib.blake2b(joined, digest_size=8).hexdigest()

    def cutoff(self, shard: str) -> int | None:
        """The stamp past which ``shard``'s author is revoked, or None."""
        record = self._records.get(member_of(shard))
        return record.after if record is not None else None

    def check(self, shard: str, stamps: list[int]) -> None:
        """Raise :class:`Revoked` when any of ``stamps`` (of ``shard``'s ops) is past its
        author's cut-off."""
        cut = self.cutoff(shard)
        if cut is None:
            return
        late = [s for s in stamps if s > cut]
        if late:
            raise Revoked(
                f"{len(late)} ops of {member_of(shard)!r} are stamped after its revocation by "
                f"the CA (cut-off {cut})"
            )


def cut_back(directory: Path, record: certs.Revocation) -> int:
    """Drop from this node's copies of the revoked author's shards (its own and its import
    shard) the ops stamped after the cut-off, and an unfinished batch left before them: an
    author's stamps rise along its shard, so what goes is a tail. Returns how many lines."""
    dropped = 0
    for shard in (record.node, record.node + IMPORT_SUFFIX):
        path = directory / shard_file(shard)
        if not path.exists():
            continue
        with locked(path):
            lines = read_regular(path, 1 << 40).splitlines()
            keep = len(lines)
            for i, raw in enumerate(lines):
                try:
                    op = decode(raw)
                except OpError:
                    continue
                if not op.stub and op.hlc > record.after:
                    keep = i
                    break
            while keep and _unfinished(lines[keep - 1]):
                keep -= 1
            if keep < len(lines):
                dropped += len(lines) - keep
                write_file(path, (raw + b"\n" for raw in lines[:keep]))
                chainstate.forget(directory, shard)
    return dropped


def _unfinished(raw: bytes) -> bool:
    try:
        op = decode(raw)
    except OpError:
        return True
    return not op.stub and op.bat not in (None, op.seq)
