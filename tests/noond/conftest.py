"""Fixtures of the noond tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness.hostile_peer import HostilePeer, Script
from tests.harness.mesh import Pki


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """Two empty node directories, ``a`` and ``b``."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b


@pytest.fixture
def rogue(pki: Pki) -> Iterator[Callable[[Script], HostilePeer]]:
    """Start a lying member with a script; every one is closed afterwards."""
    made: list[HostilePeer] = []

    def start(script: Script) -> HostilePeer:
        made.append(HostilePeer(pki, script=script))
        return made[-1]

    yield start
    for r in made:
        r.close()
