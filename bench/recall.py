"""Recall on LoCoMo: does ``search_memory`` find what was stored?

    python -m bench.recall [--data DIR] [--sizes 1000,100000] [--conversations 0-4]
        [--session-memories 1000]

Every dialogue turn of LoCoMo's conversations (``../shared/data/locomo/`` beside the repository
unless ``--data`` says where; skipped, saying why, where it is absent) is written as a memory
through the write path the tools use (``noon.graph.plan.create`` through ``GraphService.write``:
the real append and fold into the read model), one namespace per conversation. Each question of
categories 1-4 is sent, as asked, to ``search_memory``'s own function; a hit at k is one of the
question's evidence turns among the first k results. The same again with LoCoMo's
``observation`` facts as the memories (a fact is evidence when the turn it came from is). A
plain SQLite FTS5 ``bm25()`` over the same texts (English stop words removed, OR of the words)
is the anchor, measured in the same run.

Then query latency at each ``--sizes`` memories (the synthetic store of :mod:`bench.uri_latency`;
LoCoMo's questions, two common words and two rare words as queries: :func:`latency`), p50 / p99
of the wall clock and p50 of the process's CPU time
(every thread: the model embeds the query on its own), which other work on the machine
disturbs far less; and what the ``semantic`` extra costs (:mod:`bench.recall_cost`): its
install size and a ``noon serve`` session's RSS with the model loaded, at
``--session-memories`` memories (0: not measured).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bench.recall_cost import measure as measure_cost
from bench.recall_cost import print_cost
from bench.recall_semantic import Semantic, missing
from bench.stats import percentiles
from bench.uri_latency import build, rare_words, text_of
from noon.config import Settings
from noon.graph import plan
from noon.graph.stopwords import STOP_WORDS
from noon.graph.uri import parse
from noon.mcp.uri_read import search as search_memory
from noon.store.access import GraphService, service
from noon.store.readmodel import vectors
from noon.store.readmodel.embedder import DIMENSIONS, MODEL
from noon.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)


@dataclass
class Conversation:
    name: str
    memories: dict[str, str] = field(default_factory=dict)
    """key (a dia_id, or a dia_id and a number for facts) -> text"""
    evidence_of: dict[str, str] = field(default_factory=dict)
    """memory key -> the turn it holds or came from"""
    questions: list[tuple[str, int, frozenset[str]]] = field(default_factory=list)


def load(path: Path, kind: str, which: range | None = None) -> list[Conversation]:
    """The conversations of ``locomo-dev.json``, as turns or as observation facts."""
    samples = json.loads((path / "locomo-dev.json").read_text())
    out = []
    for i, sample in enumerate(samples):
        if which is not None and i not in which:
            continue
        conv = Conversation(sample["sample_id"])
        if kind == "turns":
            talk = sample["conversation"]
            for key in sorted(k for k in talk if re.fullmatch(r"session_\d+", k)):
                for turn in talk[key]:
                    text = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        text += f" [shares {turn['blip_caption']}]"
                    conv.memories[turn["dia_id"]] = text
                    conv.evidence_of[turn["dia_id"]] = turn["dia_id"]
        else:
            for session in sample["observation"].values():
                for facts in session.values():
                    for fact, source in facts:
                        key = f"{source}#{len(conv.memories)}"
                        conv.memories[key] = fact
                        conv.evidence_of[key] = source if isinstance(source, str) else source[0]
        for qa in sample["qa"]:
            if qa["category"] in CATEGORIES:
                evidence = frozenset(e.strip() for e in qa["evidence"])
                conv.questions.append((qa["question"], qa["category"], evidence))
        out.append(conv)
    return out


Ranker = Callable[[str, str, int], list[str]]
"""(conversation, question, k) -> memory keys, best first."""


@dataclass
class NoonRankers:
    lexical: Ranker
    hybrid: Ranker | None
    """None without the ``semantic`` extra."""
    vectors_per_s: float = 0.0
    """Every memory embedded by the vectorizer's own steps, as ``noon reindex`` does."""


@contextmanager
def semantic(on: bool) -> Iterator[None]:
    """Search as with ``NOON_SEMANTIC`` set to off (lexical) or unset."""
    before = os.environ.get("NOON_SEMANTIC")
    os.environ["NOON_SEMANTIC"] = "on" if on else "off"
    try:
        yield
    finally:
        if before is None:
            del os.environ["NOON_SEMANTIC"]
        else:
            os.environ["NOON_SEMANTIC"] = before


@contextmanager
def noon_store(conversations: list[Conversation]) -> Iterator[NoonRankers]:
    """A store holding every memory, written through the tools' planning code, and rankers that
    ask ``search_memory``'s function: lexical, and hybrid once every memory is embedded."""
    with tempfile.TemporaryDirectory(prefix="noon-bench-recall-") as d:
        store = Store(Settings.from_env({}, dir=Path(d), node_id="bench", fsync=False))
        svc = service(store)
        keys: dict[str, dict[str, str]] = {}
        for conv in conversations:
            keys[conv.name] = write_all(svc, conv)

        def ranker(on: bool) -> Ranker:
            def rank(ns: str, question: str, k: int) -> list[str]:
                with semantic(on):
                    _, data = svc.read(lambda s: search_memory(s, ns, question, None, k))
                return [keys[ns][r["memory_id"]] for r in data["results"]]

            return rank

        rankers = NoonRankers(ranker(False), None)
        if store.vectorizer.enabled:
            MODEL.embed(["load the model before the clock starts"])
            t0 = time.perf_counter()
            embedded = store.vectorizer.catch_up()
            rankers.vectors_per_s = embedded / (time.perf_counter() - t0)
            rankers.hybrid = ranker(True)
        try:
            yield rankers
        finally:
            store.close()


def write_all(svc: GraphService, conv: Conversation) -> dict[str, str]:
    """Each memory created under ``core://`` of the conversation's namespace, 100 to a batch;
    memory id -> key."""
    parent = parse("core://")
    items = list(conv.memories.items())
    ids: dict[str, str] = {}
    for start in range(0, len(items), 100):
        chunk = list(enumerate(items[start : start + 100], start))

        def planner(graph: Any, chunk: list[tuple[int, tuple[str, str]]] = chunk) -> Any:
            drafts, made = [], []
            for i, (key, text) in chunk:
                more, node, _ = plan.create(
                    graph, conv.name, parent, f"m{i}", text, 2, "When the conversation comes up"
                )
                drafts += more
                made.append((node, key))
            return drafts, made

        _, made = svc.write(planner, client="bench")
        ids.update(made)
    return ids


WORD = re.compile(r"\w+")


@contextmanager
def bm25_anchor(conversations: list[Conversation]) -> Iterator[Ranker]:
    """SQLite FTS5 ``bm25()`` alone: stop words removed, the rest OR'ed."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5 (ns UNINDEXED, key UNINDEXED, text)")
    for conv in conversations:
        conn.executemany(
            "INSERT INTO docs (ns, key, text) VALUES (?, ?, ?)",
            [(conv.name, k, t) for k, t in conv.memories.items()],
        )

    def rank(ns: str, question: str, k: int) -> list[str]:
        words = [w for w in WORD.findall(question.lower()) if w not in STOP_WORDS]
        if not words:
            return []
        expression = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))
        rows = conn.execute(
            "SELECT key FROM docs WHERE docs MATCH ? AND ns = ? ORDER BY bm25(docs) LIMIT ?",
            (expression, ns, k),
        ).fetchall()
        return [r[0] for r in rows]

    try:
        yield rank
    finally:
        conn.close()


def recall(conversations: list[Conversation], rank: Ranker) -> dict[str, Any]:
    """recall@k per category and overall, and the time a question took (p50 / p99 ms)."""
    hits = {(c, k): 0 for c in [*CATEGORIES, 0] for k in KS}
    asked = dict.fromkeys([*CATEGORIES, 0], 0)
    times = []
    for conv in conversations:
        for question, category, evidence in conv.questions:
            t0 = time.perf_counter()
            found = [conv.evidence_of[key] for key in rank(conv.name, question, max(KS))]
            times.append((time.perf_counter() - t0) * 1000)
            for c in (category, 0):
                asked[c] += 1
                for k in KS:
                    hits[c, k] += bool(evidence.intersection(found[:k]))
    out: dict[str, Any] = {}
    for c in [0, *CATEGORIES]:
        name = CATEGORIES.get(c, "all")
        if asked[c]:
            out[name] = {f"@{k}": round(hits[c, k] / asked[c], 4) for k in KS} | {"n": asked[c]}
    out["query_ms"] = percentiles(times)
    return out


def measure_recall(
    data: Path,
    which: range | None,
    kinds: list[str],
    semantic: str | None = None,
    weight: float = 0.3,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in kinds:
        conversations = load(data, kind, which)
        memories = sum(len(c.memories) for c in conversations)
        t0 = time.perf_counter()
        with noon_store(conversations) as noon:
            written = time.perf_counter() - t0
            out[kind] = {"memories": memories, "write_s": written}
            out[kind]["noon"] = recall(conversations, noon.lexical)
            if noon.hybrid is not None:
                out[kind]["hybrid"] = recall(conversations, noon.hybrid)
                out[kind]["vectors_per_s"] = noon.vectors_per_s
            if semantic is not None:
                model = Semantic(semantic, conversations)
                out[kind]["dense"] = recall(conversations, model.dense)
                out[kind]["fused"] = recall(conversations, model.fused(noon.lexical, weight))
                out[kind]["model"] = {
                    "name": semantic,
                    "fuse_weight": weight,
                    "vectors_per_s": model.vectors_per_s,
                    "query_embed_ms": percentiles(model.query_ms),
                }
        with bm25_anchor(conversations) as rank:
            out[kind]["bm25"] = recall(conversations, rank)
    return out


def latency(data: Path | None, sizes: list[int], calls: int = 200) -> dict[str, Any]:
    """search_memory's ranking, p50 / p99, on synthetic stores of each size, for three sets of
    queries: LoCoMo's questions where the data is here (``"N"``; on this store's vocabulary most
    hold no word any memory holds, so they time the embedding and the scan more than the
    words), two words drawn as the text draws them (``"N common"``: nearly every memory holds
    one, the words' worst case) and two of its rare words (``"N rare"``). With the ``semantic``
    extra, hybrid too (``"N hybrid"``, ``"N common hybrid"``, ...): every memory given a random
    unit vector first (embedding 100k synthetic memories would take most of an hour of one
    core, and a scan costs the same whatever the vectors hold; the query is embedded for real).
    ``"N written"``: two common words again, with a memory written and folded before each query
    (untimed): a session that writes between searches (lexical only).
    No query is asked twice in a run: the model keeps the last queries' embeddings, and a query
    asked again would be answered from that memory, not embedded."""
    pool = [q for c in load(data, "turns") for q, _, _ in c.questions] if data else []
    questions = iter(dict.fromkeys(pool))
    rnd = random.Random(7)
    asked: set[str] = set()

    def fresh(draw: Callable[[], str | None]) -> list[str]:
        """``calls`` queries never asked before in this run (fewer when ``draw`` runs out)."""
        out: list[str] = []
        while len(out) < calls and (q := draw()) is not None:
            if q not in asked:
                asked.add(q)
                out.append(q)
        return out

    draws: dict[str, Callable[[], str | None]] = {
        "": lambda: next(questions, None),
        " common": lambda: text_of(rnd, 2),
        " rare": lambda: rare_words(rnd, 2),
        " written": lambda: text_of(rnd, 2),
    }
    out = {}
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="noon-bench-recall-") as d:
            build(Path(d), n)
            store = Store(Settings.from_env({}, dir=Path(d), node_id="bench", fsync=False))
            svc = service(store)
            hybrid = store.vectorizer.enabled
            if hybrid:
                random_vectors(store)
                MODEL.embed(["load the model before the clock starts"])
                with semantic(True):  # the first search reads the vectors into memory
                    svc.read(lambda s: search_memory(s, "default", "warm", None, 10))
            try:
                for kind, draw in draws.items():
                    queries = fresh(draw)
                    if not queries:
                        continue
                    write = writer(svc) if kind == " written" else None
                    out[f"{n}{kind}"] = timed(svc, queries, False, write)
                    if hybrid and write is None:
                        out[f"{n}{kind} hybrid"] = timed(svc, queries, True)
            finally:
                store.close()
    return out


def writer(svc: GraphService) -> Callable[[], None]:
    """Writes a memory of the store's kind under ``core://`` and folds it."""
    rnd = random.Random(11)
    written = iter(range(1 << 30))

    def write() -> None:
        name, text = f"w{next(written)}", text_of(rnd, 20)

        def planner(graph: Any) -> Any:
            drafts, _, _ = plan.create(graph, "default", parse("core://"), name, text, 2, "When")
            return drafts, None

        svc.write(planner, client="bench")
        svc.read(lambda s: None)  # the fold, before the clock starts

    return write


def timed(
    svc: GraphService,
    queries: list[str],
    hybrid: bool,
    before: Callable[[], None] | None = None,
) -> dict[str, float]:
    """Each query asked of search_memory's function once (after ``before``, untimed): wall
    p50 / p99 and the process's CPU p50 (every thread)."""
    samples, cpu = [], []
    for q in queries:
        if before is not None:
            before()
        ask = partial(search_memory, ns="default", query=q, domain=None, limit=10)
        c0, t0 = time.process_time(), time.perf_counter()
        with semantic(hybrid):
            svc.read(ask)
        samples.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {**percentiles(samples), "cpu_p50": statistics.median(cpu)}


def random_vectors(store: Store) -> None:
    """Every memory of the store given a random unit vector, as the vectorizer stores one."""
    import numpy as np

    rng = np.random.default_rng(7)
    with store.lock:
        todo = vectors.pending(store.model.conn, 10**9)
        for start in range(0, len(todo), 10_000):
            chunk = todo[start : start + 10_000]
            rows = rng.standard_normal((len(chunk), DIMENSIONS)).astype(np.float32)
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
            vectors.put(store.model.conn, zip(chunk, rows, strict=True))


def print_table(results: dict[str, Any]) -> None:
    for kind in ("turns", "observations"):
        if kind not in results:
            continue
        r = results[kind]
        rankers = [x for x in ("noon", "hybrid", "bm25", "dense", "fused") if x in r]
        print(f"\nrecall on LoCoMo, {kind} as memories ({r['memories']} memories)")
        head = ["category", "n", *(f"{x} @5" for x in rankers), *(f"{x} @10" for x in rankers)]
        print(f"{head[0]:<12} {head[1]:>4}  " + " ".join(f"{h:>9}" for h in head[2:]))
        for name in ["all", *CATEGORIES.values()]:
            if name not in r["noon"]:
                continue
            cells = [r[x][name][f"@{k}"] for k in KS for x in rankers]
            n = r["noon"][name]["n"]
            print(f"{name:<12} {n:>4}  " + " ".join(f"{c:>9.3f}" for c in cells))
        if "vectors_per_s" in r:
            print(f"hybrid: {r['vectors_per_s']:.1f} vectors/s embedded by the vectorizer")
        if "model" in r:
            m = r["model"]
            print(
                f"{m['name']}: {m['vectors_per_s']:.1f} vectors/s, a query embedded in "
                f"{m['query_embed_ms']['p50']:.1f} ms p50; fused with weight {m['fuse_weight']}"
            )
    for n, p in results.get("latency", {}).items():
        size, *how = n.split(" ")
        ranked = how.pop() if how and how[-1] == "hybrid" else "lexical"
        asked = {
            "common": "two common words",
            "rare": "two rare words",
            "written": "two common words, a memory written before each",
        }.get(how[0] if how else "", "LoCoMo questions")
        print(
            f"search_memory at {size} memories ({ranked}, {asked}): p50 {p['p50']:.2f} ms, "
            f"p99 {p['p99']:.2f} ms; CPU of the process (every thread) p50 "
            f"{p['cpu_p50']:.2f} ms"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sizes", default="1000,100000", help="memories for the latency runs")
    ap.add_argument("--conversations", default=None, help="e.g. 0-2: only these samples")
    ap.add_argument(
        "--kinds", default="turns,observations", help="what the memories are ('' for none)"
    )
    ap.add_argument("--semantic", default=None, help="also measure this embedding model")
    ap.add_argument("--fuse-weight", type=float, default=0.3, help="the dense ranking's share")
    ap.add_argument(
        "--session-memories", type=int, default=1000, help="memories of the RSS session (0: none)"
    )
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    which = None
    if args.conversations:
        lo, _, hi = args.conversations.partition("-")
        which = range(int(lo), int(hi or lo) + 1)
    results: dict[str, Any] = {}
    data: Path | None = args.data
    if not (args.data / "locomo-dev.json").is_file():
        print(f"recall skipped: no LoCoMo data at {args.data} (see --data)", file=sys.stderr)
        data = None
    else:
        semantic = args.semantic
        why = missing(semantic) if semantic else None
        if why:
            print(f"semantic skipped: {why}", file=sys.stderr)
            semantic = None
        kinds = [k for k in args.kinds.split(",") if k]  # none: the latency only
        results = measure_recall(args.data, which, kinds, semantic, args.fuse_weight)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results["latency"] = latency(data, sizes)
    if args.session_memories > 0:
        results["cost"] = measure_cost(args.session_memories)
    print_table(results)
    if "cost" in results:
        print_cost(results["cost"])
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
