"""A collection of a large store in a process of its own (``python -m noond.collect_worker``):
the gate as JSON on stdin, the :class:`noon.store.collect.CollectReport` as JSON on stdout, logs
on stderr (shared with noond).

:func:`noon.store.collect.collect_dir` plans from every op of every shard held in memory at
once: for a store of a million ops that is over a gigabyte, which Python's allocator keeps once
the collection is done. Run here, the memory goes back to the system when the process ends and
noond stays small. A store below :data:`APART_BYTES` is collected inside noond, where starting a
process would cost more than the collection.

A worker gets ``NOOND_COLLECT_TIMEOUT`` seconds for each :data:`APART_BYTES` of shards (a stuck
or stopped one would otherwise hold noond's rounds, which wait for the collection, forever);
still running then, it is killed (SIGKILL, which a stopped process gets too). A removal goes
through the journal of :mod:`noon.store.collect` (one whole-file rename per shard), so a kill
at any point loses nothing: the next collection finishes what the journal holds.
"""

from __future__ import annotations

import errno
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from noon import logging_setup
from noon.core.collection import Blocker
from noon.errors import NoonError
from noon.store.collect import CollectReport, Gate

APART_BYTES = 8 << 20
"""Stores of at least this many shard bytes (about 30,000 ops) are collected in this process."""


class CollectionTimedOut(NoonError, TimeoutError):
    """A worker ran past its time and was killed; nothing it had not finished was changed."""


def time_allowed(store_bytes: int, seconds_per_apart: float) -> float:
    """Seconds a worker may take for a store of ``store_bytes``."""
    return seconds_per_apart * max(1.0, store_bytes / APART_BYTES)


def collect(
    directory: Path, self_id: str, gate: Gate, store_bytes: int, seconds_per_apart: float
) -> CollectReport:
    """``gate.collect``, in a process of its own when the store holds ``store_bytes`` or more,
    killed after :func:`time_allowed` (:class:`CollectionTimedOut`). A failure there raises
    here as it would have inside noond (an OSError keeps its errno, so a full disk is told
    apart)."""
    if store_bytes < APART_BYTES:
        return gate.collect(directory, self_id)
    level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    allowed = time_allowed(store_bytes, seconds_per_apart)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "noond.collect_worker", level],
            input=orjson.dumps(_request(directory, self_id, gate)),
            stdout=subprocess.PIPE,
            check=False,
            timeout=allowed,
        )
    except subprocess.TimeoutExpired:  # run() has killed the worker and waited for it
        raise CollectionTimedOut(
            f"the collection worker ran over {allowed:.0f} s for {store_bytes >> 20} MiB of "
            "shards (NOOND_COLLECT_TIMEOUT per 8 MiB) and was killed"
        ) from None
    try:
        answer = orjson.loads(done.stdout)
    except orjson.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        raise RuntimeError(f"the collection worker exited with {done.returncode}, no report")
    if "error" in answer:
        raise OSError(int(answer.get("errno") or errno.EIO), str(answer["error"]))
    return _report(answer)


def _request(directory: Path, self_id: str, gate: Gate) -> dict[str, Any]:
    return {
        "dir": str(directory),
        "self_id": self_id,
        "reports": gate.reports,
        "admitted": sorted(gate.admitted),
        "excluded": sorted(gate.excluded),
        "retired": gate.retired,
        "away": sorted(gate.away),
    }


def _gate(obj: dict[str, Any]) -> Gate:
    return Gate(
        reports={str(n): {str(a): int(s) for a, s in r.items()} for n, r in obj["reports"].items()},
        admitted=frozenset(obj["admitted"]),
        excluded=frozenset(obj["excluded"]),
        retired=None
        if obj["retired"] is None
        else {str(a): int(s) for a, s in obj["retired"].items()},
        away=frozenset(obj["away"]),
    )


def _answer(report: CollectReport) -> dict[str, Any]:
    return {
        "collected": report.collected,
        "removed_ops": report.removed_ops,
        "kept": [[list(key), b.member, b.reason] for key, b in report.kept],
        "members": sorted(report.members),
        "bytes_before": report.bytes_before,
        "bytes_after": report.bytes_after,
    }


def _report(obj: dict[str, Any]) -> CollectReport:
    return CollectReport(
        collected=int(obj["collected"]),
        removed_ops=int(obj["removed_ops"]),
        kept=[(tuple(key), Blocker(str(m), str(r))) for key, m, r in obj["kept"]],
        members=set(obj["members"]),
        bytes_before=int(obj["bytes_before"]),
        bytes_after=int(obj["bytes_after"]),
    )


def main(argv: list[str]) -> int:
    logging_setup.setup(getattr(logging, argv[0] if argv else "INFO", logging.INFO))
    request = orjson.loads(sys.stdin.buffer.read())
    try:
        report = _gate(request).collect(Path(request["dir"]), str(request["self_id"]))
    except OSError as exc:
        answer: dict[str, Any] = {"error": str(exc), "errno": exc.errno}
    else:
        answer = _answer(report)
    sys.stdout.buffer.write(orjson.dumps(answer))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
