"""Writers of the URI graph and the knowledge graph on in-memory folds, with the store's stamping
rules, and random steps for them: what the property tests drive to build multi-node histories.
Node ids come from a counter (not at random) so hypothesis can replay an example exactly."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from noon.core.ops import AUTO, Draft, Op, decode, encode
from noon.graph import plan
from noon.graph.plan import REFUSED
from noon.graph.uri import Uri
from noon.kg import plan as kg_plan
from tests.harness.fold import Fold
from tests.harness.kg_view import View
from tests.harness.uri_graph import Graph

NS = "default"


class Replica:
    """A node writing to an in-memory fold, with the store's stamping rules. Node ids are
    drawn from a counter (not at random) so hypothesis can replay an example exactly."""

    clock = 0
    ids = 0
    client = "prop"
    """The client name its writes carry unless one is given."""
    via = "mcp"
    """The edge its writes are recorded as unless one is given (``web``: the page's)."""

    def __init__(self, node: str) -> None:
        if node == "a":  # a new history: replay it exactly
            Replica.ids = 0
            Replica.clock = 0
        self.node = node
        self.seq = 0
        self.fold = Fold()
        self.graph = Graph(self.fold)
        self.log: list[Op] = []
        self.lines: list[bytes] = []
        """This node's shard, line by line, as written."""

    def write(self, fn: Any, client: str | None = None, via: str | None = None) -> Any:
        """Plan ``fn(graph) -> (drafts, info)`` and append the drafts as one batch written by
        ``client`` through the edge ``via`` (defaults: :attr:`client`, :attr:`via`); return
        ``info``."""

        def next_id() -> str:
            Replica.ids += 1
            return f"{Replica.ids:024x}"

        saved, plan.new_node_id = plan.new_node_id, next_id
        try:
            drafts, info = fn(self.graph)
        finally:
            plan.new_node_id = saved
        ops = []
        last = self.seq + len(drafts)
        for d in drafts:
            self.seq += 1
            Replica.clock += 1
            el = self.fold.elements.get(d.el)
            prev = d.prev
            if prev == AUTO:
                prev = tuple(sorted(el.heads)) if el is not None and el.heads else None
            line = encode(
                node=self.node,
                seq=self.seq,
                hlc=Replica.clock << 16,
                el=d.el,
                val=d.val,
                prev=prev,
                by=client or self.client,
                bat=last if len(drafts) > 1 else None,
                via=via or self.via,
            )
            ops.append(decode(line))
            self.lines.append(line)
        self.receive(ops)
        self.log += ops
        return info

    def receive(self, ops: list[Op]) -> None:
        keys = self.fold.apply_all(ops)
        self.graph.update(self.fold, keys)


def canonical(g: Graph) -> dict[str, Any]:
    ns = g.ns(NS)
    return {
        "children": {
            p: {n: (pl.child, pl.priority, pl.disclosure) for n, pl in kids.items()}
            for p, kids in ns.children.items()
            if kids
        },
        "keywords": {k: sorted(v) for k, v in ns.keywords.items()},
        "boot": sorted(ns.boot),
        "uris": {n: [str(u) for u, _ in g.uris(NS, n)] for n in sorted(ns.nodes)},
        "live": sorted(g.live_nodes(NS)),
        "orphans": g.orphans(NS),
    }


NAMES = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"])
STEP = st.tuples(
    st.sampled_from(
        ["create", "create", "create", "alias", "move", "move", "delete", "trigger", "boot", "edit"]
    ),
    st.integers(0, 50),
    st.integers(0, 50),
    NAMES,
    st.integers(0, 1),
)


def apply_step(r: Replica, step: tuple[str, int, int, str, int]) -> None:
    kind, i, j, name, flag = step
    g = r.graph
    targets = [Uri("core", ())] + [u for n in sorted(g.live_nodes(NS)) for u, _ in g.uris(NS, n)]
    src, dst = targets[i % len(targets)], targets[j % len(targets)]
    try:
        if kind == "create":
            title = None if j % 3 == 0 else name  # a third are numbered after their siblings
            r.write(lambda g: plan.create(g, NS, src, title, f"text {name}", flag, "d")[0:2])
        elif kind == "edit" and not src.is_root:

            def edit(g: Graph) -> tuple[list[Draft], None]:
                node, _ = plan.resolve_memory(g, NS, src)
                return [plan.set_text(NS, node, f"edited by {r.node} {i}")], None

            r.write(edit)
        elif kind == "alias" and not src.is_root:

            def alias(g: Graph) -> tuple[list[Draft], None]:
                node, _ = plan.resolve_memory(g, NS, src)
                return [plan.alias(g, NS, dst.child(name), node, 1, "d")], None

            r.write(alias)
        elif kind == "move" and not src.is_root:

            def move(g: Graph) -> tuple[list[Draft], None]:
                node, pl = plan.resolve_memory(g, NS, src)
                return plan.move(g, NS, node, pl, dst.child(name), None, None), None

            r.write(move)
        elif kind == "delete" and not src.is_root:

            def delete(g: Graph) -> tuple[list[Draft], None]:
                node, pl = plan.resolve_memory(g, NS, src)
                return plan.delete(g, NS, node, str(src), pl, bool(flag))[0], None

            r.write(delete)
        elif kind == "trigger" and not src.is_root:

            def trig(g: Graph) -> tuple[list[Draft], None]:
                node, _ = plan.resolve_memory(g, NS, src)
                add, rem = ([name], []) if flag else ([], [name])
                return plan.triggers(g, NS, node, add, rem)[0], None

            r.write(trig)
        elif kind == "boot" and not src.is_root:

            def boot(g: Graph) -> tuple[list[Draft], None]:
                node, _ = plan.resolve_memory(g, NS, src)
                return plan.boot(g, NS, [node] if flag else [], [] if flag else [node]), None

            r.write(boot)
    except REFUSED:
        pass


KG_STEP = st.tuples(
    st.sampled_from(["entity", "entity", "observe", "relate", "forget", "unobserve", "unrelate"]),
    st.sampled_from(["ann", "bob", "cat"]),
    st.sampled_from(["ann", "bob", "cat"]),
    st.sampled_from(["tea", "Tea time", "x" * 1100, "σοφία"]),
)


def apply_kg_step(r: Replica, step: tuple[str, str, str, str]) -> None:
    """One knowledge-graph tool call planned on the replica's fold (refusals write nothing)."""
    kind, who, other, text = step
    calls: dict[str, tuple[Any, Any]] = {
        "entity": (
            kg_plan.create_entities,
            [{"name": who, "entityType": "person", "observations": [text]}],
        ),
        "observe": (kg_plan.add_observations, [{"entityName": who, "contents": [text]}]),
        "relate": (kg_plan.create_relations, [{"from": who, "to": other, "relationType": "knows"}]),
        "forget": (kg_plan.delete_entities, [who]),
        "unobserve": (
            kg_plan.delete_observations,
            [{"entityName": who, "observations": [text]}],
        ),
        "unrelate": (
            kg_plan.delete_relations,
            [{"from": who, "to": other, "relationType": "knows"}],
        ),
    }
    planner, arg = calls[kind]
    try:
        planned = planner(View(r.fold, NS), arg)
    except kg_plan.KGError:
        return
    r.write(lambda g: (planned.drafts, None))
