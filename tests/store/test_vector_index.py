"""The vector index's coarse scan (large namespaces): the memories nearest a query and the rows
the caller names get their exact cosine, every other row -1, and the nearest found by the
coarse scan (reading only the lists nearest the query) are nearly all the nearest an exact scan
finds, on vectors shaped as sentence embeddings are (most of their spread in a few
directions)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from noon.store.readmodel import vectors
from noon.store.readmodel.embedder import DIMENSIONS

np = pytest.importorskip("numpy")
threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture(autouse=True)
def one_blas_thread() -> Iterator[None]:
    """As a serving process runs (the model's load sets it): BLAS threads spinning against
    other work made the fit 10 times slower on a busy machine."""
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        yield


def space_of(matrix: Any) -> vectors._Space:
    space = vectors._Space()
    rows = np.asarray(matrix, dtype=np.float16)
    space.merge([(i + 1, 1000 + i, row.tobytes()) for i, row in enumerate(rows)])
    return space


def embeddings(rng: Any, n: int) -> Any:
    """Unit vectors around 40 topics, each topic in a 24-dimensional subspace, plus noise."""
    basis = np.linalg.qr(rng.standard_normal((DIMENSIONS, 24)))[0]
    topics = rng.standard_normal((40, 24))
    rows = topics[rng.integers(0, 40, n)] + 0.35 * rng.standard_normal((n, 24))
    rows = rows @ basis.T + 0.05 * rng.standard_normal((n, DIMENSIONS))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_coarse_scan_finds_nearly_all_the_nearest_and_leaves_the_rest_out(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 2500
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vectors, "COARSE_FROM", 2000)
        mp.setattr(vectors, "FIT_SAMPLE", 1000)
        mp.setattr(vectors, "SCANNED", 1000)  # the lists nearest the query: 40% of the rows
        space = space_of(embeddings(rng, n))
        assert space.basis is not None  # past COARSE_FROM, fitted
        query = space.matrix[7] + 0.3 * rng.standard_normal(DIMENSIONS).astype(np.float32)
        query /= np.linalg.norm(query)
        named = [space.rows[i] for i in (3, 1500, 2499)]
        sims = space.cosines(query, named)
    exact_all = space.matrix @ query
    computed = sims > -1
    assert computed.sum() <= vectors.SHORTLIST + len(named)  # the rest: not computed
    assert np.allclose(sims[computed], exact_all[computed], atol=1e-5)
    for row in named:
        at = space.where[row]
        assert sims[at] == pytest.approx(exact_all[at], abs=1e-5)
    order = np.argsort(-exact_all)
    assert computed[order[:10]].all()  # the nearest ten, always
    assert computed[order[:50]].sum() >= 45  # an approximate index: nearly all of fifty


def filed(space: vectors._Space) -> None:
    """Every row in exactly one list, the list whose centroid is nearest it, its projection
    in step."""
    every = np.concatenate(space.members)
    assert sorted(every.tolist()) == list(range(len(space.rows)))
    for k, (members, block) in enumerate(zip(space.members, space.blocks, strict=True)):
        assert np.allclose(block, space.matrix[members] @ space.basis, atol=1e-4)
        routed = (block[:, : vectors.ROUTE_DIMS] @ space.centroids.T).argmax(axis=1)
        assert (routed == k).all()
        assert all(space.label[at] == k for at in members.tolist())


def test_a_small_namespace_is_scanned_flat_and_rows_added_later_are_filed() -> None:
    rng = np.random.default_rng(1)
    matrix = embeddings(rng, 600)
    space = space_of(matrix[:400])
    query = space.matrix[5]
    assert space.basis is None
    assert np.allclose(space.cosines(query, []), space.matrix @ query)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vectors, "COARSE_FROM", 500)
        rows = np.asarray(matrix[400:], dtype=np.float16)
        space.merge([(401 + i, 1400 + i, r.tobytes()) for i, r in enumerate(rows)])
        assert space.basis is not None and len(space.members) == int(600**0.5)
        filed(space)
        more = np.asarray(embeddings(rng, 5), dtype=np.float16)
        space.merge([(601 + i, 2000 + i, r.tobytes()) for i, r in enumerate(more)])
        space.merge([(700, 1400, more[0].tobytes())])  # a memory embedded again: refiled
    assert len(space.rows) == 605
    assert np.allclose(space.matrix[space.where[1400]], more[0].astype(np.float32))
    filed(space)
