"""A partial partition (PROTOCOL.md §13.4): a and b cannot reach each other, both reach c. Every
byte between the three daemons crosses a proxy (tests/harness/proxy.py) that refuses the pair's
connections both ways. What a and b write meanwhile reaches the other through c, as far as the
authors' signatures prove; revision 1 took a relayed shard no further than its author had last
reported to the taker, so a and b stalled at what they had told each other before the cut."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from noon.daemon_link import bodies
from tests.harness.mesh import Node, Pki, converged, start_all, wait_until
from tests.harness.proxy import Link, Proxy

pytestmark = pytest.mark.integration


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    p = Proxy(seed=22)
    yield p
    p.close()


def test_a_and_b_cut_apart_converge_through_c(
    spawn: list[Node], tmp_path: Path, pki: Pki, proxy: Proxy
):
    names = ("a", "b", "c")
    nodes = {n: Node(n, tmp_path, pki) for n in names}
    for i, (name, node) in enumerate(nodes.items()):
        source = f"127.0.0.{30 + i}"
        proxy.add(name, source, (node.host, node.port))
        node.env.update(NOOND_SOURCE_IP=source, NOOND_ADVERTISE=f"127.0.0.1:{proxy.ports[name]}")
    spawn += list(nodes.values())
    a, b, c = nodes["a"], nodes["b"], nodes["c"]
    start_all(
        *(
            (node, [f"{m}@127.0.0.1:{proxy.ports[m]}" for m in names if m != name])
            for name, node in nodes.items()
        )
    )
    a.write(("a0", "before the cut"))
    b.write(("b0", "before the cut"))
    wait_until(lambda: converged([a, b, c], expect=2), what="the mesh to converge")
    wait_until(
        lambda: _reported(a, "b", "b") >= 1 and _reported(b, "a", "a") >= 1,
        what="a and b to have told each other what they hold",
    )

    for src, dst in (("a", "b"), ("b", "a")):
        proxy.set(src, dst, Link(mode="refuse"))
    for i in range(1, 6):
        a.write((f"a{i}", "written while cut off from b"))
        b.write((f"b{i}", "written while cut off from a"))
    wait_until(
        lambda: converged([a, b, c], expect=12),
        what="a and b to converge through c",
        timeout=60,
    )
    # The pair stayed cut apart all along: each saw the other fail, and nothing crossed.
    assert proxy.stats["refused"] > 0
    assert _state(a, "b") != "alive" or _failures(a, "b") > 0
    assert _reported(a, "b", "b") == 1  # b never told a more: what a holds of b came via c


def _peer(node: Node, peer: str) -> bodies.PeerEntry:
    return next(p for p in node.peers().peers if p.node == peer)


def _reported(node: Node, peer: str, shard: str) -> int:
    return _peer(node, peer).heads.get(shard, 0)


def _state(node: Node, peer: str) -> str:
    return _peer(node, peer).state


def _failures(node: Node, peer: str) -> int:
    return _peer(node, peer).failures
