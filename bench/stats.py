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


def sched_seconds(pid: int) -> dict[str, float]:
    """A live process's threads together: seconds on a CPU, and seconds runnable but waiting
    for one (``/proc/PID/task/*/schedstat``, Linux; threads that ended are not counted). The
    second is what other work on the machine cost it, not its own."""
    ran = waited = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # the thread ended meanwhile
        ran, waited = ran + int(fields[0]), waited + int(fields[1])
    return {"on_cpu": ran / 1e9, "runnable_waiting": waited / 1e9}


def workers_cpu_seconds(pid: int) -> float:
    """CPU time of ``pid``'s children: the live ones', and the ended ones' it waited for
    (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ended = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    live = 0.0
    for child in children(pid):
        try:
            live += cpu_seconds(child)
        except OSError:
            continue
    return ended + live


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class TreeMemory:
    """Peak resident memory of a process's children and of the process with its children
    together, sampled every ``every`` seconds on a thread of its own (a child that lives
    between two samples is missed: the figures are lower bounds). The process's own peak is
    its VmHWM (:func:`rss_mib`)."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        import threading

        self.pid = pid
        self.every = every
        self.children_peak = 0.0
        self.total_peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                own = rss_mib(self.pid)["rss"]
            except OSError:
                return
            kids = 0.0
            for child in children(self.pid):
                try:
                    kids += rss_mib(child)["rss"]
                except OSError:
                    continue
            self.children_peak = max(self.children_peak, kids)
            self.total_peak = max(self.total_peak, own + kids)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join(5)
        return {"children_peak": self.children_peak, "with_children_peak": self.total_peak}
