"""``noon compact``: drop superseded versions from every shard, then physically remove deleted
elements that no member can bring back, and say why the others are kept.

Collection needs to know what every other machine holds. With a daemon, that is the reports it
keeps in its state file (used here conservatively: only a member that reported holding an
element's whole history releases it). Without a daemon, collection runs only on the operator's
promise that this node is the directory's only writer (``--sole-writer`` or
``NOON_SOLE_WRITER=true``), and is refused when the directory says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from noon import daemon_link
from noon.config import ConfigError, settings_from
from noon.core.collection import member_of
from noon.names import shard_node
from noon.store import peerstate
from noon.store.collect import CollectReport, collect_dir, gate_of
from noon.store.compact import CompactReport, compact_dir
from noon.store.shard import list_shards


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", type=Path, help="shard directory (default: $NOON_DIR)")
    parser.add_argument("--node-id", help="this node's id (default: $NOON_NODE_ID)")
    parser.add_argument(
        "--history",
        type=int,
        help="superseded versions to keep per memory (default: $NOON_HISTORY)",
    )
    parser.add_argument(
        "--sole-writer",
        action="store_true",
        default=None,
        help="promise that no other machine writes this directory, allowing "
        "deleted memories to be removed without a daemon "
        "($NOON_SOLE_WRITER)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    history, sole = settings.history, settings.sole_writer
    d = settings.dir
    shards = list_shards(d)
    compacted = compact_dir(d, shards, history=history)
    state_path = daemon_link.state_path(d, os.environ)
    collected: CollectReport | None = None
    reason = ""
    if sole:
        others = [n for n in shards if member_of(shard_node(n) or "") != settings.node_id]
        if others:
            raise ConfigError(
                f"--sole-writer: the directory holds other nodes' shards ({', '.join(others)}); "
                "removing deleted memories could lose what those nodes still need. Run noond "
                "(it collects safely) or move those shards away."
            )
        if state_path.exists() and peerstate.load(state_path).members:
            raise ConfigError(
                "--sole-writer: a daemon owns this directory (it has members in "
                f"{state_path}); let it collect"
            )
        collected = collect_dir(d, self_id=settings.node_id, reports={})
    elif state_path.exists():
        state = peerstate.load(state_path)
        collected = gate_of(state).collect(d, settings.node_id)
    else:
        reason = "deleted memories are kept: no daemon runs here and --sole-writer was not given"
    if args.json:
        print(json.dumps(_as_json(compacted, collected, reason, state_path), indent=2))
    else:
        _print(compacted, collected, reason, state_path)
    return 0


def _since(state_path: Path, member: str) -> str:
    try:
        rep = peerstate.load(state_path).reports.get(member)
    except (OSError, peerstate.StateError):
        rep = None
    if rep is None:
        return "never reported"
    return "last report " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rep.at))


def _as_json(
    compacted: list[CompactReport],
    collected: CollectReport | None,
    reason: str,
    state_path: Path,
) -> dict[str, object]:
    return {
        "shards": [
            {"shard": r.shard, "before": r.before, "after": r.after, "corrupt": r.corrupt_kept}
            for r in compacted
        ],
        "collection": None
        if collected is None
        else {
            "collected": collected.collected,
            "removed_ops": collected.removed_ops,
            "bytes_before": collected.bytes_before,
            "bytes_after": collected.bytes_after,
            "kept": [
                {
                    "element": list(k),
                    "member": b.member,
                    "reason": b.reason,
                    "since": _since(state_path, b.member),
                }
                for k, b in collected.kept
            ],
        },
        "note": reason,
    }


def _print(
    compacted: list[CompactReport],
    collected: CollectReport | None,
    reason: str,
    state_path: Path,
) -> None:
    for r in compacted:
        extra = f", {r.corrupt_kept} corrupt line(s) kept" if r.corrupt_kept else ""
        print(f"{r.shard}: {r.before} -> {r.after} operations{extra}")
    if collected is None:
        print(reason)
        return
    print(
        f"collected {collected.collected} deleted memories ({collected.removed_ops} "
        f"operations, {collected.bytes_before} -> {collected.bytes_after} bytes)"
    )
    by_member: dict[str, list[str]] = {}
    for key, b in collected.kept:
        by_member.setdefault(f"{b.member}: {b.reason}", []).append("/".join(key))
    for why, keys in sorted(by_member.items()):
        member = why.split(":", 1)[0]
        print(
            f"kept {len(keys)} deleted element(s) for {why} ({_since(state_path, member)}),"
            f" e.g. {keys[0]}"
        )
