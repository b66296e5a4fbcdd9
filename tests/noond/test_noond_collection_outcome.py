"""What the daemon says when a collection after a round does not finish: a worker killed for its
time is an expected outcome, said in one warning line without a traceback (the collector counts
it and retries later); a full disk goes to storing's condition; any other failure keeps its
traceback."""

from __future__ import annotations

import asyncio
import errno
import logging
from pathlib import Path
from typing import Any

import pytest

from noon.store.collect import CollectReport
from noond import collection
from noond.collect_worker import CollectionTimedOut
from noond.collection import Collector
from noond.metrics import Metrics
from noond.schedule import collect_after_round


def outcome_of(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    raised: BaseException,
) -> tuple[Collector, list[logging.LogRecord], list[OSError]]:
    """One collection after a round whose worker raises ``raised``: the collector, what was
    logged, and what was said to be a full disk."""

    def failing(*_: Any) -> CollectReport:
        raise raised

    monkeypatch.setattr(collection, "collect", failing)
    collector = Collector(tmp_path, "a", tmp_path / "state.json", 1e9, Metrics())
    full: list[OSError] = []
    with caplog.at_level(logging.INFO, logger="noond"):
        asyncio.run(collect_after_round(collector, [], set(), full.append))
    return collector, caplog.records, full


def test_a_timed_out_collection_is_one_line_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    killed = CollectionTimedOut(
        "the collection worker ran over 30 s for 8 MiB of shards (NOOND_COLLECT_TIMEOUT per "
        "8 MiB) and was killed"
    )
    collector, records, full = outcome_of(tmp_path, monkeypatch, caplog, killed)

    assert [(r.levelno, r.exc_info) for r in records] == [(logging.WARNING, None)], records
    line = records[0].getMessage()
    assert line.startswith("tombstone collection timed out: the collection worker ran over 30 s")
    assert "failed" not in line and "\n" not in line
    assert "; the collection is retried in " in line
    assert collector.metrics.registry.get_sample_value("noond_collections_killed_total") == 1
    assert full == []


def test_another_failure_keeps_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _, records, full = outcome_of(tmp_path, monkeypatch, caplog, RuntimeError("no report"))

    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.ERROR, "tombstone collection failed")
    ]
    assert records[0].exc_info is not None and records[0].exc_info[0] is RuntimeError
    assert full == []


def test_a_full_disk_is_said_with_storing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    no_space = OSError(errno.ENOSPC, "No space left on device")
    _, records, full = outcome_of(tmp_path, monkeypatch, caplog, no_space)

    assert records == [] and full == [no_space]
