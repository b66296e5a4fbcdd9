"""The embedding worker is woken only by a fold that can have given a memory a text to embed."""

from __future__ import annotations

from noon.core.elements import content_key, edge_key, entity_key, keyword_key, obs_key
from noon.store.readmodel.touched import Touched
from noon.store.readmodel.vectorizer import gives_texts


def test_only_a_memory_text_or_a_reset_wakes_the_embedding_worker() -> None:
    kg = {entity_key("", "e1"), obs_key("", "e1", "fact", 0)}
    placed = {edge_key("default", "root", "a"), keyword_key("default", "word", "n1")}
    assert not gives_texts(Touched(kg | placed, len(kg | placed)))
    assert gives_texts(Touched(kg | {content_key("default", "n1")}, 3))
    assert gives_texts(Touched(set(), 1500, reset=True))
