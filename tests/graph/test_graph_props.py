"""Properties of the pure URI graph (no files): URIs derived from placements resolve back to
their node, incremental indexes equal a rebuild, moves and aliases keep identity, and replicas
that exchange every op in any order derive the same graph, with every live memory reachable
or listed as an orphan that can be placed again."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from noon.graph import plan
from noon.graph.plan import REFUSED
from noon.graph.uri import Uri, check_name, node_view, parse
from tests.harness.graphsim import NAMES, NS, STEP, Replica, apply_step, canonical
from tests.harness.uri_graph import Graph


def node_at(g: Graph, uri: Uri) -> str:
    """The node ``uri`` resolves to (the test knows it resolves)."""
    found = g.resolve(NS, uri)
    assert found is not None, uri
    return found[0]


def text_held(g: Graph, node: str) -> object:
    el = g.content(NS, node)
    assert el is not None, node
    return el.winner.val


def check_uris_resolve(g: Graph) -> None:
    for n in g.live_nodes(NS):
        for uri, _ in g.uris(NS, n):
            assert parse(str(uri)) == uri
            found = g.resolve(NS, uri)
            assert found is not None and found[0] == n, (uri, n)


@given(st.lists(STEP, max_size=30))
def test_uris_resolve_and_incremental_equals_rebuild(steps: list[Any]) -> None:
    r = Replica("a")
    for step in steps:
        apply_step(r, step)
        check_uris_resolve(r.graph)
    assert canonical(r.graph) == canonical(Graph(r.fold))
    assert r.graph.orphans(NS) == []  # one writer never strands a memory


@given(
    st.lists(STEP, max_size=25),
    st.lists(STEP, max_size=25),
    st.lists(STEP, max_size=25),
    st.randoms(use_true_random=False),
)
def test_replicas_converge_in_any_delivery_order_and_lose_nothing(
    shared: list[Any], left: list[Any], right: list[Any], rnd: random.Random
) -> None:
    a, b = Replica("a"), Replica("b")
    for step in shared:
        apply_step(a, step)
    b.receive(list(a.log))
    for step in left:
        apply_step(a, step)
    for step in right:
        apply_step(b, step)
    a_ops, b_ops = list(a.log), list(b.log)
    rnd.shuffle(a_ops)
    rnd.shuffle(b_ops)
    a.receive(b_ops)
    b.receive(a_ops)
    ca, cb = canonical(a.graph), canonical(b.graph)
    assert ca == cb
    assert ca == canonical(Graph(a.fold))
    check_uris_resolve(a.graph)
    # Every live memory is reachable or an orphan, and each orphan can be placed again.
    live = set(ca["live"])
    reachable = {n for n in live if a.graph.uris(NS, n, 1)}
    assert live == reachable | set(ca["orphans"])
    for i, orphan in enumerate(ca["orphans"]):
        if not a.graph.uris(NS, orphan, 1):
            a.write(
                lambda g, o=orphan, i=i: (
                    plan.move(g, NS, o, None, Uri("core", (f"rescued{i}",)), 1, "placed again"),
                    None,
                )
            )
    assert a.graph.orphans(NS) == []
    assert all(a.graph.uris(NS, n, 1) for n in a.graph.live_nodes(NS))


@given(st.lists(STEP, max_size=20), st.integers(0, 50), NAMES)
def test_move_keeps_identity_content_and_subtree(steps: list[Any], pick: int, name: str) -> None:
    r = Replica("a")
    for step in steps:
        apply_step(r, step)
    g = r.graph
    nodes = sorted(g.live_nodes(NS))
    if not nodes:
        return
    node = nodes[pick % len(nodes)]
    uri = g.uris(NS, node)[0][0]
    below = sorted(g.subtree(NS, node))
    text = text_held(g, node)
    others = len(g.uris(NS, node))
    new = Uri("core", (f"moved-{name}",))
    try:
        r.write(lambda g: (plan.move(g, NS, node, g.resolve(NS, uri)[1], new, None, None), None))
    except REFUSED:
        return
    assert node_at(g, new) == node
    assert text_held(g, node) == text
    assert sorted(g.subtree(NS, node)) == below
    assert len(g.uris(NS, node)) <= others or others >= 32
    found = g.resolve(NS, uri)
    assert found is None or found[0] != node or len(g.placements(NS, node)) > 1


@given(st.lists(STEP, max_size=20), st.integers(0, 50), NAMES)
def test_alias_shares_the_node_and_its_subtree(steps: list[Any], pick: int, name: str) -> None:
    r = Replica("a")
    for step in steps:
        apply_step(r, step)
    g = r.graph
    nodes = sorted(g.live_nodes(NS))
    if not nodes:
        return
    node = nodes[pick % len(nodes)]
    alias_uri = Uri("alias", (name,))
    r.write(lambda g: ([plan.alias(g, NS, alias_uri, node, 1, "d")], None))
    assert node_at(g, alias_uri) == node
    for kid in g.children(NS, node):
        assert node_at(g, alias_uri.child(kid.name)) == kid.child
    assert node_view(node).endswith(node)


SEGMENTS = st.from_regex(r"\A[\w][\w.-]{0,20}\Z").filter(lambda s: ".." not in s)


@given(
    st.from_regex(r"\A[a-z_][a-z0-9_]{0,10}\Z").filter(lambda d: d not in ("system", "kg")),
    st.lists(SEGMENTS, max_size=6),
)
def test_uri_text_round_trips(domain: str, path: list[str]) -> None:
    uri = Uri(domain, tuple(path))
    assert parse(str(uri)) == uri
    assert parse(f"  {domain.upper()}://{'/'.join(path)}/ ") == uri
    for seg in path:
        check_name(seg)  # every name parse accepts here is also one noon would create
