"""PNG plots of a results file (matplotlib, the optional ``bench`` dependency group)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_kg(raw: dict[str, Any], out: Path) -> Path:
    """p50 latency (p99 as error bar) of each knowledge-graph tool, noon beside the official."""
    sizes = list(raw["sizes"])
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes, strict=True):
        entry = raw["sizes"][size]
        tools = [t for t in entry["noon"] if t != "rss_mib"]
        xs = range(len(tools))
        for offset, who, colour in ((-0.2, "noon", "tab:blue"), (0.2, "official", "tab:grey")):
            if who not in entry:
                continue
            p50 = [entry[who][t]["p50"] for t in tools]
            p99 = [entry[who][t]["p99"] - entry[who][t]["p50"] for t in tools]
            ax.bar(
                [x + offset for x in xs],
                p50,
                0.4,
                yerr=[[0] * len(p99), p99],
                label=who,
                color=colour,
                capsize=2,
            )
        ax.set_xticks(list(xs), tools, rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("ms per call (p50, bar to p99)")
        ax.set_title(f"{int(size):,} entities")
        ax.legend()
    return _save(fig, out / "kg_latency.png")


def plot_mesh(raw: dict[str, Any], floor_ms: float, out: Path) -> Path:
    """Write → visible on every node, p50 and p99 by mesh size, with the physical floor."""
    sizes = list(raw["meshes"])
    p50 = [raw["meshes"][n]["latency"]["p50"] for n in sizes]
    p99 = [raw["meshes"][n]["latency"]["p99"] for n in sizes]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot([int(n) for n in sizes], p50, "o-", label="p50")
    ax.plot([int(n) for n in sizes], p99, "s--", label="p99")
    ax.axhline(floor_ms, color="grey", linestyle=":", label="fsync + loopback RTT")
    ax.set_xlabel("loopback daemons")
    ax.set_ylabel("ms until visible on all")
    ax.set_ylim(bottom=0)
    ax.legend()
    return _save(fig, out / "propagation.png")


def plot_first_answer(raw: dict[str, Any], out: Path) -> Path:
    """A new session's first answer by store size, with and without the machine's read model."""
    sizes = list(raw["first_answer"])
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for label, style in (("cold", "o-"), ("shared", "s-")):
        ax.plot(
            [raw["first_answer"][s]["ops"] for s in sizes],
            [raw["first_answer"][s][label]["s"] for s in sizes],
            style,
            label="first session (folds every shard)" if label == "cold" else "read model shared",
        )
    ax.set_xscale("log")
    ax.set_xlabel("ops in the store")
    ax.set_ylabel("s from process start to first answer")
    ax.legend()
    return _save(fig, out / "first_answer.png")


def plot_all(results: dict[str, Any], out: Path) -> list[Path]:
    raw = results["raw"]
    floor_ms = raw["floors"]["fsync_us"] / 1000 + raw["floors"]["loopback_rtt_us"]["p50"] / 1000
    return [
        plot_kg(raw["kg"], out),
        plot_mesh(raw["mesh"], floor_ms, out),
        plot_first_answer(raw["uri"], out),
    ]
