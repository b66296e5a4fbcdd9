"""Stores in a test directory, and writer processes appending to one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from noon.config import Settings
from noon.core.ops import Draft, Op
from noon.store.store import Plan, Store
from tests.harness.mesh import ROOT


def plan_of(drafts: Sequence[Draft]) -> Plan:
    """A write that plans ``drafts`` whatever the graph holds (built once, outside the call: a
    loop's variables are not captured late)."""
    return lambda _graph: drafts


def val_of(op: Op) -> dict[str, Any]:
    """The value of an op the test knows is not a tombstone."""
    assert op.val is not None, f"{op.id} is a tombstone"
    return op.val


def open_store(d: Path, node: str = "a", **kw: Any) -> Store:
    return Store(Settings.from_env({}, dir=d, node_id=node, **kw))


def writer(
    d: Path, node: str, tag: str, batches: int, compact_every: int = 0
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.harness.writer_proc",
            str(d),
            node,
            tag,
            str(batches),
            str(compact_every),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
