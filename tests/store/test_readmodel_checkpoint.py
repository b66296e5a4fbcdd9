"""The read model's WAL under a stream of small writes: copied back once it holds
:data:`~noon.store.readmodel.schema.CHECKPOINT_PAGES` pages, not sooner, never left to grow with
the stream, and its file reused rather than cut back and grown again."""

from __future__ import annotations

import os
from pathlib import Path

from noon.config import Settings
from noon.core.ops import Draft
from noon.store.readmodel.schema import CHECKPOINT_PAGES, WAL_KEPT
from noon.store.store import Store, read_model_path
from tests.harness.stores import plan_of

NS = "default"
FRAME = 4096 + 24
"""A WAL frame: a 4 KiB page and its header."""


def write(store: Store, i: int) -> None:
    """One batch of eight memories of about 2 KB each: a few dozen WAL pages."""
    drafts = [
        Draft(("content", NS, f"m{i}-{j}"), {"text": f"memory {i} {j} " + "x" * 2000})
        for j in range(8)
    ]
    store.write(plan_of(drafts))


def frames_in_wal(store: Store) -> int:
    """Frames the WAL file has room for (it shrinks only when cut back)."""
    return os.path.getsize(f"{read_model_path(store.dir)}-wal") // FRAME


def test_the_wal_is_copied_back_at_its_bound_and_its_file_reused(noon_dir: Path) -> None:
    store = Store(Settings.from_env({}, dir=noon_dir, node_id="n1", fsync=False, compact_after=0))
    try:
        largest = grown = 0
        for i in range(400):
            before = frames_in_wal(store)
            write(store, i)
            after = frames_in_wal(store)
            # Bounded (a commit or a few past the bound), and never cut back.
            assert before <= after <= WAL_KEPT // FRAME
            largest, grown = max(largest, after), max(grown, after - before)
        assert largest >= CHECKPOINT_PAGES  # not copied back sooner
        assert 400 * grown > 8 * CHECKPOINT_PAGES  # the stream wrote the bound over and over
    finally:
        store.close()
