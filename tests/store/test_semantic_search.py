"""Semantic search (the ``semantic`` extra): memories found by meaning across languages, vectors
derived off the write path and kept current, the fusion's lexical dominance, and tool texts
that say which search runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.mcp.uri_read import search as search_memory
from noon.store.access import GraphService, service
from noon.store.readmodel import vectors
from noon.store.readmodel.embedder import MODEL, Embedder, available
from noon.store.readmodel.hybrid import LIKENESS, WEIGHT, fuse
from noon.store.shard import NotRegular
from noon.store.store import Store
from tests.harness.texts import write_texts
from tests.harness.uri import open_store

np = pytest.importorskip("numpy")

needs_model = pytest.mark.skipif(
    not available(),
    reason="the semantic extra is not installed (pip install -e '.[semantic]'), or "
    "NOON_SEMANTIC turns it off",
)

MEMORIES = {
    "cat": "我收养了一只灰色的猫，名叫米索。",
    "pottery": "I take pottery classes every Tuesday evening.",
    "train": "The train to Berlin leaves at nine in the morning.",
    "jogging": "毎朝、公園でジョギングをしています。",
    "sister": "My sister works as a nurse in Lisbon.",
    "roof": "We repaired the leaking kitchen roof last summer.",
}


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[tuple[Store, GraphService, dict[str, str]]]:
    MODEL.embed(["loaded before the searches, as a serving process's worker loads it"])
    store, _ = open_store(tmp_path, "n1")
    svc = service(store)
    ids = write_texts(svc, "default", MEMORIES)
    yield store, svc, ids
    store.close()


def ranked(svc: GraphService, query: str, limit: int = 3) -> list[str]:
    _, data = svc.read(lambda s: search_memory(s, "default", query, None, limit))
    return [r["uri"] for r in data["results"]]


@needs_model
def test_chinese_and_japanese_found_across_languages_both_ways_and_in_their_own(
    embedded: tuple[Store, GraphService, dict[str, str]],
) -> None:
    store, svc, _ = embedded
    assert store.vectorizer.catch_up() == len(MEMORIES)
    assert ranked(svc, "Which pet did I adopt?")[0] == "core://cat"
    assert ranked(svc, "Do I go running?")[0] == "core://jogging"
    assert ranked(svc, "我的陶艺课是哪天？")[0] == "core://pottery"
    assert ranked(svc, "姉の仕事は何ですか？")[0] == "core://sister"
    # and in their own language, hybrid as well
    assert ranked(svc, "我养了什么宠物？")[0] == "core://cat"
    assert ranked(svc, "毎朝何をしていますか？")[0] == "core://jogging"


def replicated(directory: Path) -> dict[Path, bytes]:
    """What a machine shares with the others: every file but its own ``.noon`` folder (the
    read model, the vectors among it)."""
    return {
        p: p.read_bytes()
        for p in directory.rglob("*")
        if p.is_file() and ".noon" not in p.relative_to(directory).parts
    }


@needs_model
def test_vectors_are_derived_here_and_never_written_to_what_is_replicated(
    embedded: tuple[Store, GraphService, dict[str, str]], tmp_path: Path
) -> None:
    store, _, _ = embedded
    shared = replicated(tmp_path)
    assert shared  # the shards of the memories written
    assert store.vectorizer.catch_up() == len(MEMORIES)
    with store.lock:
        assert vectors.counts(store.model.conn) == (len(MEMORIES), len(MEMORIES))
    assert replicated(tmp_path) == shared


@needs_model
def test_a_new_memory_is_found_by_its_words_at_once_and_by_meaning_once_embedded(
    embedded: tuple[Store, GraphService, dict[str, str]],
) -> None:
    store, svc, ids = embedded
    store.vectorizer.catch_up()
    made = write_texts(svc, "default", {"violin": "Lena practises the violin before dinner."})
    assert ranked(svc, "violin") == ["core://violin"]  # lexical, before any vector
    paraphrase = "Which musical instrument does Lena play?"
    with store.lock:
        waiting = [p.row for p in vectors.pending(store.model.conn, 10)]
    assert len(waiting) == 1
    assert store.vectorizer.step() == 1
    assert ranked(svc, paraphrase, 1) == ["core://violin"]
    with store.lock:
        assert vectors.pending(store.model.conn, 10) == []
        assert vectors.counts(store.model.conn) == (len(MEMORIES) + 1, len(MEMORIES) + 1)
    # an edit makes the vector stale until the worker embeds the new text
    write_texts(svc, "default", {"violin": "Lena plays football on Saturdays."}, update=made)
    with store.lock:
        assert [p.text for p in vectors.pending(store.model.conn, 10)] == [
            "Lena plays football on Saturdays."
        ]
    assert store.vectorizer.step() == 1
    assert ranked(svc, "What sport does Lena do at the weekend?", 1) == ["core://violin"]
    assert ids  # the first memories kept their vectors throughout
    with store.lock:
        assert vectors.counts(store.model.conn)[1] == len(MEMORIES) + 1


@needs_model
def test_without_the_model_or_turned_off_search_is_lexical(
    embedded: tuple[Store, GraphService, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, svc, _ = embedded
    store.vectorizer.catch_up()
    assert ranked(svc, "Which pet did I adopt?") != []
    monkeypatch.setenv("NOON_SEMANTIC", "off")
    assert ranked(svc, "Which pet did I adopt?") == []  # no word in common: nothing lexical
    assert ranked(svc, "pottery") == ["core://pottery"]


lexical_lists = st.lists(
    st.tuples(st.integers(0, 40), st.floats(0.01, 50, allow_nan=False)),
    unique_by=lambda t: t[0],
    max_size=20,
).map(lambda hits: sorted(hits, key=lambda h: -h[1]))


@given(lexical_lists, st.lists(st.floats(-1, 1, allow_nan=False, width=32), max_size=40))
def test_fusion_keeps_every_candidate_and_the_best_lexical_hit_above_any_mere_likeness(
    lexical: list[tuple[int, float]], cosines: list[float]
) -> None:
    rows = list(range(len(cosines)))
    sims = np.asarray(cosines, dtype=np.float32)
    fused = fuse(lexical, rows, {r: r for r in rows}, sims)
    got = [row for row, _ in fused]
    assert len(got) == len(set(got))
    assert {row for row, _ in lexical} <= set(got)
    nearest = sorted(rows, key=lambda r: -cosines[r])[:50]
    assert {r for r in nearest if sims[r] >= LIKENESS} <= set(got)
    assert all(sims[r] >= LIKENESS for r in set(got) - {row for row, _ in lexical})
    scores = [score for _, score in fused]
    assert scores == sorted(scores, reverse=True)
    if lexical:
        top = lexical[0][0]
        for row, score in fused:
            if row not in dict(lexical):
                assert score <= WEIGHT < dict(fused)[top]


def test_a_link_planted_as_the_embedding_lock_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    store, _ = open_store(tmp_path, "n1")
    target = tmp_path / "elsewhere"
    target.write_text("kept")
    (tmp_path / ".noon" / "vectorizer.lock").symlink_to(target)
    try:
        with pytest.raises(NotRegular):
            store.vectorizer.catch_up()
    finally:
        store.close()
    assert target.read_text() == "kept"


def test_asking_for_the_model_while_it_loads_does_not_wait_for_the_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session's searches go on lexically while the model loads: the second search once
    waited out the whole load (seconds) on the load's lock."""
    import threading

    model = Embedder()
    release = threading.Event()

    def slow_load() -> None:
        with model._lock:  # as the real load: the lock held throughout
            release.wait(60)

    monkeypatch.setattr(model, "_loaded", slow_load)
    model.load_in_background()
    asking = threading.Thread(target=model.load_in_background)
    asking.start()
    asking.join(timeout=30)
    try:
        assert not asking.is_alive() and not model.ready
    finally:
        release.set()


def test_a_query_asked_again_is_not_embedded_again_and_the_oldest_are_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from noon.store.readmodel import embedder

    model = Embedder()
    embedded: list[str] = []

    def embed(texts: list[str]) -> object:
        embedded.extend(texts)
        return np.full((len(texts), embedder.DIMENSIONS), len(embedded), dtype=np.float32)

    monkeypatch.setattr(model, "embed", embed)
    monkeypatch.setattr(embedder, "REMEMBERED", 3)
    first = model.query("what did Lena play?")
    assert model.query_soon("what did Lena play?").result(timeout=30) is first
    assert embedded == ["what did Lena play?"]
    with pytest.raises(ValueError):
        first[0] = 0.0  # shared between callers: read-only
    for other in ("a", "b", "c"):  # three more: the first is the oldest of four, forgotten
        model.query(other)
    model.query("c")
    assert embedded == ["what did Lena play?", "a", "b", "c"]
    model.query("what did Lena play?")
    assert embedded[-1] == "what did Lena play?" and len(embedded) == 5
