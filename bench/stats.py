"""Small helpers shared by the benchmarks: percentiles and a process's resident memory."""

from __future__ import annotations

import os
import statistics
from pathlib import Path


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p99 (nearest rank) plus the count; p99 of fewer than 100 samples is the max."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {"p50": statistics.median(ordered), "p99": p99, "n": len(ordered)}


def rss_mib(pid: int) -> dict[str, float]:
    """Current and peak resident memory of a live process, from /proc (Linux)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(rest.split()[0]) / 1024
    return {"rss": fields.get("VmRSS", 0.0), "peak": fields.get("VmHWM", 0.0)}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a live process has used, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
