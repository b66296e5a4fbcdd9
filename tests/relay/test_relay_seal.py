"""Sealing relay objects (PROTOCOL.md §14.2) and the mesh key file (§14.1): what opens is what
was sealed under that name; any change, cut or move is refused; names carry no node id."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon import certs
from noond.relay import seal
from tests.harness.mesh import ROOT

MESH = certs.MeshKey({1: b"\x07" * 32, 2: b"\x09" * 32})
K = seal.keys(MESH, 2)
nodes = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True).filter(
    lambda n: ".." not in n
)


@given(nodes, st.integers(1, 2**53 - 1), st.integers(0, 1000), st.binary(max_size=2000))
def test_a_sealed_segment_opens_under_its_name_only(
    node: str, first: int, extra: int, lines: bytes
) -> None:
    last = first + extra
    name = seal.segment_name(2, seal.tag(K, node), first, last)
    parsed = seal.parse_name(name)
    assert parsed == seal.Name(2, seal.tag(K, node), "seg", first, last)
    assert name == f"e2/{seal.tag(K, node)}/s/{first:016x}-{last:016x}.seg"  # no node id
    body = seal.seal(K, name, seal.segment_plain(node, first, last, lines))
    assert seal.open_segment(K, parsed, seal.unseal(K, name, body, seal.MAX_SEGMENT)) == (
        node,
        lines,
    )
    other = seal.segment_name(2, seal.tag(K, node), first, last + 1)
    with pytest.raises(seal.Refused) as moved:
        seal.unseal(K, other, body, seal.MAX_SEGMENT)
    assert moved.value.reason == "ciphertext"
    with pytest.raises(seal.Refused):
        seal.unseal(seal.keys(MESH, 1), name, body, seal.MAX_SEGMENT)


@given(st.binary(min_size=1, max_size=300), st.data())
def test_any_changed_or_cut_byte_is_refused(plain: bytes, data: st.DataObject) -> None:
    name = seal.head_name(2, seal.tag(K, "laptop"))
    body = seal.seal(K, name, plain)
    at = data.draw(st.integers(0, len(body) - 1))
    flipped = body[:at] + bytes([body[at] ^ data.draw(st.integers(1, 255))]) + body[at + 1 :]
    for bad in (flipped, body[:at]):
        with pytest.raises(seal.Refused):
            seal.unseal(K, name, bad, seal.MAX_HEAD)


def test_a_small_object_inflating_past_its_bound_is_refused() -> None:
    name = seal.head_name(2, seal.tag(K, "laptop"))
    bomb = seal.seal(K, name, b"\0" * (seal.MAX_HEAD + 1))
    assert len(bomb) < 8192
    with pytest.raises(seal.Refused) as refused:
        seal.unseal(K, name, bomb, seal.MAX_HEAD)
    assert refused.value.reason == "too_large"


@pytest.mark.parametrize(
    "name",
    [
        "e1/" + "a" * 32 + "/s/0000000000000001-0000000000000002.seg.sync-conflict-20261203",
        "e1/" + "a" * 32 + "/s/0000000000000001-0000000000000002 (conflicted copy).seg",
        "e1/" + "a" * 32 + "/s/.0000000000000001-0000000000000002.seg.1a2b.tmp",
        "e1/" + "a" * 32 + "/s/0000000000000002-0000000000000001.seg",
        "e1/" + "a" * 32 + "/head~",
        "e0/" + "a" * 32 + "/head",
        "../e1/" + "a" * 32 + "/head",
    ],
)
def test_names_outside_the_layout_are_not_objects(name: str) -> None:
    assert seal.parse_name(name) is None


@pytest.mark.integration
def test_relay_key_command_creates_rotates_and_never_overwrites(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("NOON_", "NOOND_"))},
        "PYTHONPATH": str(ROOT),
        "NOON_DIR": str(tmp_path / "noon"),
        "NOON_NODE_ID": "laptop",
    }
    ca = tmp_path / "ca"

    def relay_key(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "noon", "certs", "relay-key", "--ca-dir", str(ca), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    first = relay_key()
    assert first.returncode == 0, first.stderr
    master, copy = ca / "relay.key", tmp_path / "noon" / "certs" / "relay.key"
    assert "epoch 1" in first.stdout and str(copy) in first.stdout
    for path in (master, copy):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert certs.read_relay_key(master) == certs.read_relay_key(copy)
    again = relay_key()
    assert again.returncode == 1 and "--rotate" in again.stderr and not again.stdout
    assert certs.read_relay_key(master).epochs == certs.read_relay_key(copy).epochs
    rotated = relay_key("--rotate")
    assert rotated.returncode == 0 and "epoch 2" in rotated.stdout
    key = certs.read_relay_key(copy)
    assert set(key.epochs) == {1, 2} and key.epochs[1] == certs.read_relay_key(master).epochs[1]
    copy.write_text("noon-relay-key/1 1 short\n")
    with pytest.raises(certs.RelayKeyError, match="line 1"):
        certs.read_relay_key(copy)
