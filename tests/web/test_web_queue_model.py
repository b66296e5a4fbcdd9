"""The page's review queue, memory timelines, entity changes and pending count, which ``noon
web`` answers with queries of the machine's read model, agree with a fresh in-memory fold of the
same shards (tests/harness/review_oracle.py) on random multi-node histories: agents writing on
two machines, each machine's page approving changes one by one or all at once, withdrawing
verdicts, rolling changes back and editing as the person, shards delivered in pieces (batches
cut mid-way) and compacted; and machines writing what an honest page never writes (review ops in
another machine's name, a watermark naming seqs not written yet, a rollback verdict without the
rollback, an agent calling itself ``web``). Checked while the history unfolds (the pending count
is kept per read-model generation: it must follow every fold) and at the end, every listing
paged through its cursor; and each memory's children as the page lists them (counts, snippets,
state)."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noon.config import Settings
from noon.core.elements import REVIEW, review_key
from noon.core.ops import Draft
from noon.graph import undo
from noon.graph.reader import live_text
from noon.graph.uri import node_view
from noon.store.compact import compact_dir
from noon.store.store import Store
from noon.web.data import WebData
from noon.web.views import snip
from tests.harness.graphsim import NS, Replica, apply_kg_step, apply_step
from tests.harness.oracle import fold_of_dir
from tests.harness.review_oracle import WEB, Oracle

NODES = ("a", "b")
EXAMPLES = int(os.environ.get("NOON_MODEL_EXAMPLES", "40"))
KINDS = {
    "write": 30,
    "kg": 8,
    "sync": 6,
    "deliver": 16,
    "approve": 6,
    "approve_all": 3,
    "unreview": 3,
    "rollback": 4,
    "forge": 3,
    "open_mark": 2,
    "fake_rollback": 2,
    "web_edit": 4,
    "compact": 2,
    "check": 4,
}
URI_STEPS = ["create"] * 4 + ["alias", "move", "move", "delete", "trigger", "boot", "edit", "edit"]
KG_STEPS = ["entity", "entity", "observe", "relate", "forget", "unobserve"]
PEOPLE = ["ann", "bob"]
MAX = (1 << 53) - 1


def events(rnd: random.Random) -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    for _ in range(rnd.randint(20, 90)):
        kind = rnd.choices(list(KINDS), weights=list(KINDS.values()))[0]
        node = rnd.choice(NODES)
        arg: Any = rnd.randint(0, 50)
        if kind in ("write", "web_edit"):
            arg = (rnd.choice(URI_STEPS), rnd.randint(0, 50), rnd.randint(0, 50),
                   rnd.choice("abcdef"), rnd.randint(0, 1))  # fmt: skip
        elif kind == "kg":
            arg = (rnd.choice(KG_STEPS), rnd.choice(PEOPLE), rnd.choice(PEOPLE), "tea")
        elif kind == "deliver":
            arg = rnd.randint(1, 12)
        out.append((kind, node, arg))
    return out


def page_action(r: Replica, kind: str, pick: int) -> None:
    """What the page of machine ``r`` writes (through the edge ``web``), planned on what ``r``
    holds; and what a hostile machine ``r`` writes in review elements."""
    seen = Oracle(r.fold, NS)
    agents = [c for c in seen.changes if c.via != WEB]
    other = NODES[1 - NODES.index(r.node)]
    drafts: list[Draft] = []
    if kind == "approve" and agents:
        chosen = agents[pick % len(agents)]
        drafts = [Draft(review_key(NS, chosen.id, r.node), {"verdict": "approved"})]
    elif kind == "approve_all" and agents:
        drafts = [Draft(review_key(NS, "upto", r.node), {"through": r.fold.frontier()})]
    elif kind == "unreview":
        held = sorted(
            (k, el)
            for k, el in r.fold.elements.items()
            if k[0] == REVIEW and k[2] != "upto" and not el.deleted
        )
        if held:
            key, el = held[pick % len(held)]
            own = [v.id for v in el.versions if v.node == key[3]]
            decided = {max(own, key=lambda i: i[1])} if own else set()
            drafts = [Draft(key, None, tuple(sorted(set(el.heads) | decided)))]
    elif kind == "rollback" and agents:
        chosen = agents[pick % len(agents)]
        try:
            planned = undo.undo([chosen.ops], undo.element_lookup(r.fold.elements.get))
        except undo.UndoError:
            return
        mark = Draft(review_key(NS, chosen.id, r.node), {"verdict": "rolled_back"})
        drafts = [*planned.drafts, mark]
    elif kind == "forge":  # in the other machine's name: every change, and everything after
        verdict = "approved" if pick % 2 else "rolled_back"
        drafts = [Draft(review_key(NS, c.id, other), {"verdict": verdict}) for c in agents]
        drafts.append(Draft(review_key(NS, "upto", other), {"through": dict.fromkeys(NODES, MAX)}))
    elif kind == "open_mark":  # its own, naming seqs not written yet
        drafts = [Draft(review_key(NS, "upto", r.node), {"through": dict.fromkeys(NODES, MAX)})]
        ahead = review_key(NS, f"{other}:{pick + 200}", r.node)
        drafts.append(Draft(ahead, {"verdict": "approved"}))
    elif kind == "fake_rollback" and agents:
        chosen = agents[pick % len(agents)]
        drafts = [Draft(review_key(NS, chosen.id, r.node), {"verdict": "rolled_back"})]
    if drafts:
        r.write(lambda g: (drafts, None), client=WEB, via=WEB)


def subject(item: dict[str, Any]) -> str | None:
    s = item["subject"]
    if s is None:
        return None
    return {"memory": s["label"], "entity": f"kg:{s.get('name')}"}.get(
        s["kind"], f"@edge:{s['label']}"
    )


def shown(item: dict[str, Any]) -> dict[str, Any]:
    by = item["reviewed_by"]
    return {
        **{k: item[k] for k in ("id", "time", "client", "machine", "ops", "status")},
        "subject": subject(item),
        "reviewed_by": None if by is None else (by["machine"], by["batch"]),
    }


def shown_child(item: dict[str, Any]) -> tuple[Any, ...]:
    keys = ("name", "node", "priority", "children", "snippet", "deleted", "conflicted", "boot")
    return tuple(item[k] for k in keys)


def expected_children(o: Oracle, node: str) -> list[tuple[Any, ...]]:
    """A memory's children as the in-memory graph has them."""
    out = []
    boot = o.graph.boot_nodes(NS)
    for kid in o.graph.children(NS, node):
        el = o.graph.content(NS, kid.child)
        text = snip(live_text(el)) if el is not None else ""
        grand = len(o.graph.children(NS, kid.child))
        deleted, conflicted = el is None or el.deleted, el is not None and el.conflicted
        out.append(
            (kid.name, kid.child, kid.priority, grand, text, deleted, conflicted, kid.child in boot)
        )
    return out


def compare(data: WebData, directory: Path) -> None:
    fold = fold_of_dir(directory)
    o = Oracle(fold, NS)
    for view in ("pending", "reviewed", "all"):
        items: list[dict[str, Any]] = []
        before = None
        while True:
            page = data.changes(NS, view, "change", before, 3)
            assert page["pending"] == o.pending()
            items += page["items"]
            before = page["next"]
            if before is None:
                break
        assert [shown(i) for i in items] == o.listing(view), view
        grouped = data.changes(NS, view, "memory", None, 200)["items"]
        assert [{**shown(i), "ids": i["ids"]} for i in grouped] == o.by_memory(view), view
    for node in sorted(o.graph.memory_nodes(NS)):
        kids = data.children(NS, node_view(node), 0, 200)["items"]
        assert [shown_child(k) for k in kids] == expected_children(o, node), node
        history = data.history(NS, node_view(node), 0, 200)
        assert [i["id"] for i in history["items"]] == o.timeline(node), node
        assert history["total"] == len(o.timeline(node))
    for name in o.graph_entities():
        assert [c["id"] for c in data.entity(NS, name)["changes"]] == o.entity_changes(name)


def run(tmp: Path, history: list[tuple[str, str, Any]]) -> None:
    writers = {n: Replica(n) for n in NODES}
    config = Settings.from_env({}, dir=tmp, node_id="m", fsync=False, compact_after=0)
    store = Store(config)
    data = WebData(store, config)
    delivered = dict.fromkeys(NODES, 0)

    def deliver(r: Replica, count: int) -> None:
        lines = r.lines[delivered[r.node] : delivered[r.node] + count]
        if lines:
            with open(tmp / f"{r.node}.jsonl", "ab") as f:
                f.write(b"".join(line + b"\n" for line in lines))
            delivered[r.node] += len(lines)

    try:
        for kind, who, arg in history:
            r = writers[who]
            if kind == "write":
                apply_step(r, arg)
            elif kind == "web_edit":  # the page's edit; or an agent calling itself "web"
                r.client, r.via = WEB, WEB if arg[1] % 2 else "mcp"
                apply_step(r, arg)
                r.client, r.via = Replica.client, Replica.via
            elif kind == "kg":
                apply_kg_step(r, arg)
            elif kind == "sync":
                other = writers[NODES[1 - NODES.index(who)]]
                r.receive([op for op in other.log if not r.fold.holds(op.node, op.seq)])
            elif kind == "deliver":
                deliver(r, arg)
            elif kind == "compact" and (tmp / f"{who}.jsonl").exists():
                compact_dir(tmp, [f"{who}.jsonl"], history=arg % 3)
            elif kind == "check":
                compare(data, tmp)
            else:
                page_action(r, kind, arg)
        for r in writers.values():
            deliver(r, len(r.lines))
        compare(data, tmp)
    finally:
        store.close()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.randoms(use_true_random=False))
def test_the_queue_timelines_and_pending_count_agree_with_a_fresh_fold(
    tmp_path_factory: Any, rnd: random.Random
) -> None:
    run(tmp_path_factory.mktemp("queue"), events(rnd))


def test_changes_whose_ops_interleave_in_time_are_listed_once_in_order(tmp_path: Path) -> None:
    """Two machines writing at the same moment: one batch's ops stamped between another's, one at
    the same hlc as its first. Each change is listed once, by its newest op, on every page."""
    from noon.core.elements import content_key
    from noon.core.ops import encode

    def line(node: str, seq: int, hlc: int, name: str, bat: int | None) -> bytes:
        el = content_key(NS, name)
        return encode(node=node, seq=seq, hlc=hlc << 16, el=el, val={"text": name}, bat=bat)

    shards = {
        "a": [line("a", 1, 10, "a1", 3), line("a", 2, 12, "a2", 3), line("a", 3, 15, "a3", 3),
              line("a", 4, 16, "a4", None)],
        "b": [line("b", 1, 10, "b1", 2), line("b", 2, 13, "b2", 2), line("b", 3, 14, "b3", None)],
    }  # fmt: skip
    for node, lines in shards.items():
        (tmp_path / f"{node}.jsonl").write_bytes(b"".join(x + b"\n" for x in lines))
    config = Settings.from_env({}, dir=tmp_path, node_id="m", fsync=False)
    store = Store(config)
    try:
        data = WebData(store, config)
        expected = Oracle(fold_of_dir(tmp_path), NS).listing("all")
        assert [c["id"] for c in expected] == ["a:4", "a:3", "b:3", "b:2"]
        for limit in (1, 2, 50):
            items, before = [], None
            while True:
                page = data.changes(NS, "all", "change", before, limit)
                items += page["items"]
                if (before := page["next"]) is None:
                    break
            assert [shown(i) for i in items] == expected, limit
    finally:
        store.close()


def test_a_watermark_ending_inside_a_compacted_batch_leaves_the_batch_pending(
    tmp_path: Path,
) -> None:
    """A watermark whose last covered op is the first of a batch (the batch's other op was
    compacted away): the batch waits in the listing and in the pending count alike. The count
    started its walk after the watermark's seq and missed it (hypothesis found it)."""
    run(
        tmp_path,
        [
            ("kg", "b", ("entity", "ann", "ann", "tea")),
            ("open_mark", "a", 35),
            ("kg", "b", ("unobserve", "ann", "ann", "tea")),
            ("rollback", "b", 46),
            ("deliver", "b", 5),
            ("compact", "b", 45),
        ],
    )
