"""PNG plots of a results file (matplotlib, the optional ``bench`` dependency group)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.rows import kg_latency_tools
from bench.table import section


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
        tools = kg_latency_tools(entry["noon"])
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
    """A new session's first answer by store size: noon on the machine's read model, noon's
    first session of the machine, the official server on the same graph, and the floor."""
    sizes = list(raw["sizes"])
    xs = [raw["sizes"][s]["ops"] for s in sizes]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for key, style, label in (
        ("shared", "s-", "noon, read model present"),
        ("cold", "o--", "noon, the machine's first session"),
        ("official", "^-", "official server, same graph"),
    ):
        if all(key in raw["sizes"][s] for s in sizes):
            ax.plot(xs, [raw["sizes"][s][key]["s"] for s in sizes], style, label=label)
    ax.plot(
        xs,
        [raw["sizes"][s]["floor"]["s"] for s in sizes],
        ":",
        color="grey",
        label="Python start + MCP SDK import",
    )
    ax.set_xscale("log")
    ax.set_xlabel("ops in the store (knowledge graph)")
    ax.set_ylabel("s from process start to first answer")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return _save(fig, out / "first_answer.png")


def plot_all(results: dict[str, Any], out: Path) -> list[Path]:
    """The plots whose sections succeeded."""
    raw = results["raw"]
    fl, kg, mesh, scale = (section(raw, k) for k in ("floors", "kg", "mesh", "kg_scale"))
    made = []
    if kg:
        made.append(plot_kg(kg, out))
    if fl and mesh:
        floor_ms = fl["fsync_us"] / 1000 + fl["loopback_rtt_us"]["p50"] / 1000
        made.append(plot_mesh(mesh, floor_ms, out))
    if scale:
        made.append(plot_first_answer(scale, out))
    return made
