"""Properties of rollback planning (noon/graph/undo.py), on pure simulated writers: a change
rolled back leaves every element it touched reading as if neither it nor the edits built on it
had been written, whatever other machines wrote concurrently (which it never takes away); a
rollback rolled back reads as before the rollback; a memory rolled back to a version gets that
version's text and the metadata of then; a version that is not held any more is refused, never
guessed. And the two cases that deleted what the change had not written: two machines creating
``core://notes`` while apart, and an op with no predecessor on an existing memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from noon.app.actor import WEB, Actor
from noon.app.changes import undo_changes
from noon.core.elements import boot_key, content_key, edge_key, entity_key, keyword_key, obs_key
from noon.core.ops import Draft, Key, Op
from noon.graph import plan, undo
from noon.graph.reader import GraphReader, change_id, live_text, version_id
from noon.graph.uri import Uri
from noon.store.access import service
from noon.store.readmodel import changes
from noon.store.rollback import lookup
from tests.harness.fold import Fold
from tests.harness.graphsim import NS, STEP, Replica, apply_step
from tests.harness.uri_graph import Graph
from tests.harness.web import agent_create
from tests.harness.web import open_store as open_web_store

KEYS: list[Key] = [
    content_key(NS, "m1"),
    content_key(NS, "m2"),
    edge_key(NS, "@core", "a"),
    edge_key(NS, "m1", "b"),
    keyword_key(NS, "tea", "m1"),
    boot_key(NS, "m2"),
    entity_key(NS, "Ada"),
    obs_key(NS, "Ada", "likes tea", 0),
]


def value(key: Key, n: int) -> dict[str, Any]:
    kind = key[0]
    if kind == "content":
        return {"text": f"text {n}"}
    if kind == "edge":
        return {"child": f"m{n % 2 + 1}", "priority": n % 4, "disclosure": f"when {n}"}
    if kind == "entity":
        return {"type": f"type {n % 3}"}
    return {}


def read(fold: Fold, key: Key) -> dict[str, Any] | None:
    el = fold.elements.get(key)
    return None if el is None or el.deleted else el.winner.val


ITEM = st.tuples(st.integers(0, len(KEYS) - 1), st.booleans(), st.integers(0, 99))
ITEMS = st.lists(ITEM, min_size=1, max_size=4, unique_by=lambda item: item[0])
BATCH = st.tuples(st.just("batch"), st.integers(0, 2), ITEMS)
SYNC = st.tuples(st.just("sync"), st.integers(0, 2), st.integers(0, 2))
HISTORY = st.lists(st.one_of(BATCH, BATCH, SYNC), min_size=1, max_size=30)


def write(r: Replica, drafts: list[Draft]) -> list[Op]:
    """Append ``drafts`` as one batch of ``r``; return its ops."""
    before = len(r.log)
    r.write(lambda g: (drafts, None))
    return r.log[before:]


def play(history: list[Any], pick: int) -> tuple[list[Replica], list[Op], dict[Key, Any]]:
    """Run ``history`` on three machines; return them, the ops of the picked batch of machine
    0 and what its elements read on machine 0 just before it."""
    writers = [Replica(name) for name in ("a", "b", "c")]
    mine = [i for i, step in enumerate(history) if step[0] == "batch" and step[1] == 0]
    chosen = mine[pick % len(mine)] if mine else None
    change: list[Op] = []
    before: dict[Key, Any] = {}
    for i, step in enumerate(history):
        if step[0] == "sync":
            writers[step[1]].receive(writers[step[2]].log)
            continue
        w = writers[step[1]]
        drafts = [Draft(KEYS[k], None if gone else value(KEYS[k], n)) for k, gone, n in step[2]]
        if i == chosen:
            before = {d.el: read(w.fold, d.el) for d in drafts}
            change = write(w, drafts)
        else:
            write(w, drafts)
    return writers, change, before


def merged(writers: list[Replica]) -> Replica:
    page = Replica("page")
    for w in writers:
        page.receive(w.log)
    return page


def built_on(change: list[Op], ops: list[Op]) -> set[Any]:
    """The ids of ``change`` and of every op of ``ops`` whose prev leads to one of them."""
    found = {op.id for op in change}
    grew = True
    while grew:
        grew = False
        for op in ops:
            if op.id not in found and found & set(op.prev or ()):
                found.add(op.id)
                grew = True
    return found


def without(writers: list[Replica], change: list[Op]) -> Fold:
    """Every op written anywhere but the change's and those built on them, folded: what a
    rollback must read as."""
    ops = list({op.id: op for w in writers for op in w.log}.values())
    gone = built_on(change, ops)
    fold = Fold()
    fold.apply_all([op for op in ops if op.id not in gone])
    return fold


@given(HISTORY, st.integers(0, 1000))
def test_a_rolled_back_change_reads_as_if_never_written_everywhere(
    history: list[Any], pick: int
) -> None:
    writers, change, before = play(history, pick)
    if not change:
        return
    page = merged(writers)
    expected = without(writers, change)
    planned = undo.undo([change], undo.element_lookup(page.fold.elements.get))
    write(page, planned.drafts)
    for key in before:
        assert read(page.fold, key) == read(expected, key), key
        heads = page.fold.elements[key].heads.values() if key in page.fold.elements else []
        assert len(heads) <= 1 or all(h.val is None for h in heads), "the rollback settles"
    # A machine that receives the rollback reads the same: it replicates like any write.
    other = writers[1]
    other.receive([op for w in writers for op in w.log] + page.log)
    assert {k: read(other.fold, k) for k in before} == {k: read(expected, k) for k in before}


@given(HISTORY, st.integers(0, 1000))
def test_a_rollback_rolled_back_reads_as_before_the_rollback(history: list[Any], pick: int) -> None:
    writers, change, _ = play(history, pick)
    if not change:
        return
    page = merged(writers)
    first = undo.undo([change], undo.element_lookup(page.fold.elements.get))
    mid = {key: read(page.fold, key) for key in {op.el for op in change}}
    rollback = write(page, first.drafts)
    if not rollback:
        return
    again = undo.undo([rollback], undo.element_lookup(page.fold.elements.get))
    write(page, again.drafts)
    for op in rollback:
        assert read(page.fold, op.el) == mid[op.el]


@given(HISTORY, st.integers(0, 1000))
def test_preview_says_what_it_restores_and_what_was_written_since(
    history: list[Any], pick: int
) -> None:
    writers, change, _ = play(history, pick)
    if not change:
        return
    page = merged(writers)
    ids = {op.id for op in change}
    expected = without(writers, change)
    gone = built_on(change, [op for w in writers for op in w.log])
    preview = undo.preview([change], undo.element_lookup(page.fold.elements.get))
    assert not preview.problems
    for step in preview.steps:
        assert step.before == read(expected, step.key)
        assert step.after == max((o for o in change if o.el == step.key), key=lambda o: o.order).val
        heads = page.fold.elements[step.key].heads.values()
        assert {h.id for h in step.later} == {h.id for h in heads if h.id in gone - ids}
        assert {h.id for h in step.concurrent} == {h.id for h in heads if h.id not in gone}
        assert (step.draft is None) == (
            read(page.fold, step.key) == step.before
            and (len(heads) == 1 or all(h.val is None for h in heads))
        )
        said = undo.describe(step)
        assert ("later edits" in said) == bool(step.later and step.draft)
        assert ("concurrently" in said) == bool(step.concurrent and step.draft)


@given(HISTORY, st.integers(0, 1000))
def test_a_replaced_version_no_longer_held_is_refused(history: list[Any], pick: int) -> None:
    writers, change, _ = play(history, pick)
    named = [
        (op.el, p) for op in change for p in (op.prev or ()) if p not in {o.id for o in change}
    ]
    if not named:
        return
    page = merged(writers)
    gone_key, gone = named[0]
    full = undo.element_lookup(page.fold.elements.get)

    def compacted(key: Key) -> undo.ElementState:
        state = full(key)
        if key != gone_key:
            return state
        return undo.ElementState(state.heads, {i: v for i, v in state.held.items() if i != gone})

    with pytest.raises(undo.UndoError, match="no longer held"):
        undo.undo([change], undo.Lookup(compacted))
    assert undo.preview([change], undo.Lookup(compacted)).problems


def graph_view(g: Graph) -> dict[str, Any]:
    """What a person sees of the graph: every live memory's text, URIs (with their priority
    and disclosure), keywords and boot membership; and the orphans."""
    out: dict[str, Any] = {}
    for n in sorted(g.live_nodes(NS)):
        el = g.content(NS, n)
        assert el is not None
        out[n] = {
            "text": live_text(el),
            "uris": sorted(
                (str(u), p.priority, p.disclosure)
                for u, _ in g.uris(NS, n)
                if (p := (g.resolve(NS, u) or ("", None))[1]) is not None
            ),
            "keywords": g.keywords_of(NS, n),
            "boot": n in g.boot_nodes(NS),
        }
    return {"memories": out, "orphans": g.orphans(NS)}


@given(st.lists(STEP, min_size=1, max_size=30))
def test_rolling_back_the_last_tool_call_restores_the_whole_graph(steps: list[Any]) -> None:
    r = Replica("a")
    for step in steps[:-1]:
        apply_step(r, step)
    seen = graph_view(r.graph)
    before = len(r.log)
    apply_step(r, steps[-1])
    change = r.log[before:]
    if not change:
        return
    r.write(lambda g: (undo.undo([change], undo.element_lookup(r.fold.elements.get)).drafts, None))
    assert graph_view(r.graph) == seen


@given(st.lists(st.integers(0, 1000), min_size=2, max_size=8), st.integers(0, 100))
def test_rolling_a_memory_back_to_a_version_restores_the_metadata_of_then(
    priorities: list[int], pick: int
) -> None:
    r = Replica("a")
    r.write(lambda g: plan.create(g, NS, Uri("core", ()), "m", "text 0", priorities[0], "d")[0:2])

    def edit(i: int, prio: int) -> None:
        def fn(g: Graph) -> tuple[list[Draft], None]:
            node, pl = plan.resolve_memory(g, NS, Uri("core", ("m",)))
            return [
                plan.set_text(NS, node, f"text {i}"),
                plan.place(g, NS, pl.parent, pl.key_name, node, prio, f"d{i}"),
            ], None

        r.write(fn)

    for i, prio in enumerate(priorities[1:], 1):
        edit(i, prio)
    node, _ = plan.resolve_memory(r.graph, NS, Uri("core", ("m",)))
    el = r.graph.content(NS, node)
    assert el is not None
    versions = sorted(el.versions, key=lambda o: o.order)
    k = pick % len(versions)
    target = versions[k]
    # The batches that wrote the versions after the target (each with its metadata edit).
    newer = {v.bat or v.seq for v in versions[k + 1 :]}
    later = [[op for op in r.log if (op.bat or op.seq) == b] for b in sorted(newer)]
    planned = undo.to_version(target, later, undo.element_lookup(r.fold.elements.get))
    assert bool(planned.drafts) == (k < len(versions) - 1)
    r.write(lambda g: (planned.drafts, None))
    _, pl = plan.resolve_memory(r.graph, NS, Uri("core", ("m",)))
    el = r.graph.content(NS, node)
    assert el is not None and live_text(el) == f"text {k}"
    assert pl.priority == priorities[k]
    assert pl.disclosure == ("d" if k == 0 else f"d{k}")
    if planned.drafts:
        assert version_id(el.winner) != version_id(target)  # a new version: history keeps all


def test_rolling_back_one_machines_creation_leaves_the_others_memory_placed() -> None:
    """Two machines create ``core://notes`` while apart; rolling back one's creation removes
    its memory and leaves the other's at the URI (before: an orphan)."""
    a, b = Replica("a"), Replica("b")
    core = Uri("core", ())
    a.write(lambda g: plan.create(g, NS, core, "notes", "from a", 1, "d")[0:2])
    change_a = list(a.log)
    b.write(lambda g: plan.create(g, NS, core, "notes", "from b", 1, "d")[0:2])
    node_b = plan.resolve_memory(b.graph, NS, Uri("core", ("notes",)))[0]
    page = merged([a, b])
    preview = undo.preview([change_a], undo.element_lookup(page.fold.elements.get))
    edge = next(s for s in preview.steps if s.key == edge_key(NS, "@core", "notes"))
    assert not edge.later and [h.node for h in edge.concurrent] == ["b"]
    said = undo.describe(edge)
    assert "back to the version prop on b wrote concurrently" in said and "later" not in said
    write(page, preview.drafts)
    node, _ = plan.resolve_memory(page.graph, NS, Uri("core", ("notes",)))
    assert node == node_b and page.graph.orphans(NS) == []
    el = page.graph.content(NS, node_b)
    assert el is not None and live_text(el) == "from b"
    assert graph_view(page.graph)["memories"].keys() == {node_b}


def test_rolling_back_an_op_without_predecessor_leaves_the_memory() -> None:
    """An op with no predecessor and a newer stamp on an existing memory (it wins, not knowing
    the memory's text): rolling it back puts the memory's own text back, never deletes it."""
    a, hostile = Replica("a"), Replica("b")
    a.write(lambda g: plan.create(g, NS, Uri("core", ()), "door", "PIN 4711", 1, "d")[0:2])
    hostile.receive(a.log)
    node = plan.resolve_memory(a.graph, NS, Uri("core", ("door",)))[0]
    key = content_key(NS, node)
    forged = write(hostile, [Draft(key, {"text": "overwritten"}, None)])
    page = merged([a, hostile])
    el = page.graph.content(NS, node)
    assert el is not None and live_text(el) == "overwritten" and len(el.heads) == 2
    preview = undo.preview([forged], undo.element_lookup(page.fold.elements.get))
    (step,) = preview.steps
    assert step.before == {"text": "PIN 4711"} and not step.later
    assert [h.node for h in step.concurrent] == ["a"]
    assert undo.describe(step) == (
        f"the text of {node}: back to the version prop on a wrote concurrently"
    )
    write(page, preview.drafts)
    el = page.graph.content(NS, node)
    assert el is not None and not el.deleted and live_text(el) == "PIN 4711"
    assert plan.resolve_memory(page.graph, NS, Uri("core", ("door",)))[0] == node


def names_a_deleted_memory(g: GraphReader) -> list[str]:
    """Memories that read as deleted yet are placed, bound to a keyword or on the boot list: a
    state only concurrent writers should leave (issue 26 finding 5b)."""
    found = []
    for node in sorted(g.memory_nodes(NS)):
        el = g.content(NS, node)
        if el is None or not el.deleted:
            continue
        placed = [f"{p.parent}/{p.name}" for p in g.placements(NS, node)]
        bound = g.keywords_of(NS, node)
        booted = node in g.boot_nodes(NS)
        if placed or bound or booted:
            found.append(f"{node}: placed {placed}, keywords {bound}, boot {booted}")
    return found


@given(st.lists(STEP, min_size=1, max_size=25), st.integers(0, 1000), st.booleans())
@example(  # undoing the move of a memory deleted since put its old placement back (CI's seed)
    steps=[
        ("create", 0, 0, "a", 0),
        ("create", 0, 0, "a", 0),
        ("move", 1, 0, "a", 0),
        ("delete", 1, 0, "a", 0),
    ],
    pick=2,
    to_version=False,
)
def test_a_rollback_on_one_machine_never_leaves_a_memory_deleted_yet_placed(
    steps: list[Any], pick: int, to_version: bool
) -> None:
    """Any tool calls on one machine, then the page's rollback of any one of them (or a memory
    rolled back to any version, as ``rollback_memory`` does): no memory reads as deleted while
    a placement, keyword or boot entry still names it. Before, undoing a creation after a move,
    an alias, a keyword or a boot entry left exactly that ("⚠ DELETED ... still placed",
    "Failed to load: <id>: deleted" at boot)."""
    r = Replica("a")
    for step in steps:
        apply_step(r, step)
    assert names_a_deleted_memory(r.graph) == []  # what the tools leave
    batches: dict[int, list[Op]] = {}
    for op in r.log:
        batches.setdefault(op.bat or op.seq, []).append(op)
    if not batches:
        return
    lookup = undo.element_lookup(r.graph.element, r.graph)
    if to_version:
        versions = sorted(
            (
                v
                for n in r.graph.memory_nodes(NS)
                if (el := r.graph.content(NS, n))
                for v in el.versions
                if v.val is not None
            ),
            key=lambda o: o.order,
        )
        if not versions:
            return
        target = versions[pick % len(versions)]
        el = r.graph.content(NS, target.el[2])
        assert el is not None
        newer = sorted({v.bat or v.seq for v in el.versions if v.order > target.order})
        try:
            planned = undo.to_version(target, [batches[b] for b in newer], lookup)
        except undo.UndoError:
            return
    else:
        change = list(batches.values())[pick % len(batches)]
        planned = undo.preview([change], lookup)
        if planned.problems:
            return
    r.write(lambda g: (planned.drafts, None))
    assert names_a_deleted_memory(r.graph) == []


def test_the_pages_rollback_of_a_creation_takes_out_what_named_it_since(tmp_path: Path) -> None:
    """The reproducer of finding 5b, on the read model as the page rolls back: a memory
    created, then moved, aliased, bound to a keyword and put on the boot list; rolling back its
    creation leaves nothing that names it (before: "⚠ DELETED ... still placed" and a boot
    failure naming its id), and the preview says why each goes."""
    store = open_web_store(tmp_path)
    svc = service(store)
    node = agent_create(store, "core://", "a", "hello")
    created = change_id(store.fold.elements[content_key(NS, node)].winner)

    def later(g: GraphReader) -> tuple[list[Draft], None]:
        _, _, pl = plan.locate(g, NS, "core://a")
        drafts = plan.move(g, NS, node, pl, Uri("core", ("b",)), None, None)
        drafts.append(plan.alias(g, NS, Uri("core", ("c",)), node, 1, "d"))
        drafts += plan.triggers(g, NS, node, ["hello"], [])[0]
        return [*drafts, *plan.boot(g, NS, [node], [])], None

    svc.write(later, "agent", "mcp")

    def preview(s: Any) -> list[str]:
        ref = changes.ref(s.graph.conn, created)
        assert ref is not None
        ops = changes.load_ops(s.graph.conn, ref)
        return [undo.describe(step) for step in undo.preview([ops], lookup(s.graph)).steps]

    said = svc.read(preview)
    undone = undo_changes(svc, Actor(NS, WEB, WEB), [created], None, True)
    assert undone.restored == 5  # the text, core://b (moved there), core://c, keyword, boot
    assert sum("names the memory the change created" in line for line in said) == 4, said
    assert svc.read(lambda s: names_a_deleted_memory(s.graph)) == []
    assert svc.read(lambda s: s.graph.content(NS, node).deleted)  # type: ignore[union-attr]


def test_undoing_a_move_with_the_later_deletion_brings_the_memory_back_in_its_old_place() -> None:
    """Alone, undoing the move of a memory deleted since is refused (it would place a deleted
    memory); selected with the deletion, the memory comes back where it was before the move."""
    r = Replica("a")
    for step in [
        ("create", 0, 0, "a", 0),
        ("create", 0, 0, "a", 0),
        ("move", 1, 0, "a", 0),
        ("delete", 1, 0, "a", 0),
    ]:
        apply_step(r, step)
    batches: dict[int, list[Op]] = {}
    for op in r.log:
        batches.setdefault(op.bat or op.seq, []).append(op)
    _, _, moved, deleted = batches.values()
    gone = [n for n in r.graph.memory_nodes(NS) if (e := r.graph.content(NS, n)) and e.deleted]
    assert len(gone) == 1
    lookup = undo.element_lookup(r.graph.element, r.graph)
    alone = undo.preview([moved], lookup)
    assert any("deleted since" in p for p in alone.problems)
    with pytest.raises(undo.UndoError, match="deleted since"):
        undo.undo([moved], lookup)
    both = undo.undo([moved, deleted], lookup)
    r.write(lambda g: (both.drafts, None))
    assert names_a_deleted_memory(r.graph) == []
    el = r.graph.content(NS, gone[0])
    assert el is not None and not el.deleted
    (place,) = r.graph.placements(NS, gone[0])
    assert all(op.el != edge_key(NS, place.parent, place.key_name) for op in moved if op.val)
