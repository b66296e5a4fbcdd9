"""Revocation signed by the CA (PROTOCOL.md §13.6): what ``noon certs revoke`` writes and says,
which records a node believes, and how it cuts its copy of a revoked author back."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from noon import certs
from noon.config import Settings
from noon.core.ops import Draft
from noon.store.store import Store
from noond.revocations import Revocations, Revoked, cut_back
from tests.harness.mesh import Pki, noon_command, subprocess_env
from tests.harness.stores import plan_of


@pytest.mark.integration
def test_noon_certs_revoke_writes_a_record_the_ca_signed_and_says_where(tmp_path, pki: Pki):
    home = tmp_path / "home"
    env = subprocess_env(NOON_DIR=str(home), NOON_NODE_ID="laptop")
    done = noon_command(
        "certs", "revoke", "phone", "--ca-dir", str(pki.root / "ca"), "--after", "77", env=env
    )
    assert done.returncode == 0, done.stderr
    target = home / ".noon" / "revocations.jsonl"
    assert done.stdout.splitlines()[0] == (
        f"revoked phone from stamp 77 on, signed by the CA; written to {target}"
    )
    ca = certs.ca_certificate(pki.root / "ca" / "ca.crt")
    record = certs.parse_revocation(target.read_bytes().strip(), ca)
    assert (record.node, record.after) == ("phone", 77)
    assert target.stat().st_mode & 0o077 == 0
    # Without the CA's key it says what it needs and writes nothing more.
    missing = noon_command("certs", "revoke", "phone", "--ca-dir", str(tmp_path / "no"), env=env)
    assert missing.returncode == 1 and "revoking needs the CA's key" in missing.stderr
    assert len(target.read_bytes().splitlines()) == 1


def test_only_the_cas_records_count_and_the_earliest_cut_off_wins(tmp_path, pki: Pki):
    ca = certs.ca_certificate(pki.root / "ca" / "ca.crt")
    known = Revocations(tmp_path, ca)
    later = certs.revoke(pki.root / "ca", "phone", 500, 1)
    earlier = certs.revoke(pki.root / "ca", "phone", 300, 2)
    assert known.add(later.encode()) == later
    assert known.add(earlier.encode()) == earlier
    assert known.add(later.encode()) is None  # gives nothing back
    assert known.cutoff("phone") == 300 and known.cutoff("phone-import") == 300
    pki.foreign("tablet")
    with pytest.raises(certs.CertError, match="not signed by this CA"):
        known.add(certs.revoke(pki.root / "foreign" / "ca", "tablet", 0, 0).encode())
    changed = orjson.loads(earlier.encode())
    changed["after"] = 10**9
    with pytest.raises(certs.CertError, match="not signed by this CA"):
        known.add(orjson.dumps(changed))
    with pytest.raises(certs.CertError):
        known.add(b'{"node":"x","after":1,"issued":1,"sig":"AA","more":1}')
    with pytest.raises(Revoked, match="stamped after its revocation"):
        known.check("phone", [299, 301])
    known.check("phone", [1, 300])
    # Kept on disk, and read back by the next start.
    assert Revocations(tmp_path, ca).records() == [earlier]


def test_a_revoked_authors_copy_is_cut_back_to_its_cut_off(tmp_path, pki: Pki):
    store = Store(Settings(dir=tmp_path, node_id="phone", fsync=False))
    for batch in (["a", "b"], ["c"], ["d", "e"]):
        store.write(plan_of([Draft(("content", "default", t), {"text": t}) for t in batch]))
    store.close()
    lines = (tmp_path / "phone.jsonl").read_bytes().splitlines()
    cut = orjson.loads(lines[2])["hlc"]
    record = certs.revoke(pki.root / "ca", "phone", cut, 0)
    assert cut_back(tmp_path, record) == 2
    assert (tmp_path / "phone.jsonl").read_bytes().splitlines() == lines[:3]
    assert cut_back(tmp_path, record) == 0


def test_the_signature_covers_every_field(pki: Pki, tmp_path: Path):
    record = certs.revoke(pki.root / "ca", "phone", 5, 6)
    assert certs.parse_revocation(record.encode(), certs.ca_certificate(pki.root / "ca" / "ca.crt"))
    assert b"noon/revocation/1" in record.signed_part()
