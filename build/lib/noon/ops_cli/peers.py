"""``noon peers list|depart NODE|revoke NODE``.

``list`` asks the local daemon (``/peers`` over mTLS with this node's own certificate) and falls
back to the state file. ``depart`` and ``revoke`` edit the daemon's state file under its lock;
the daemon applies them at its next round: a revoked node is refused on every route and never
exchanged with again, and its shard is no longer served; a departed node is refused too and no
longer holds back tombstone collection, while the memories it wrote stay shared.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from noon.config import Settings
from noon.core.ops import valid_node_id
from noon.ops_cli import daemon_api
from noon.store import peerstate


def state_path(settings: Settings) -> Path:
    raw = os.environ.get("NOOND_STATE", "").strip()
    return Path(raw).expanduser() if raw else settings.dir / ".noon" / "noond.json"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="peers_command", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="members, their health, revoked and departed nodes")
    lst.add_argument("--url", help="daemon base URL (default: from NOOND_LISTEN, on loopback)")
    lst.add_argument("--json", action="store_true", help="print JSON")
    for name, text in (
        ("depart", "a node left for good: forget it, delete its replica, stop waiting for it"),
        ("revoke", "a node is compromised or lost: refuse it everywhere, keep its replica"),
    ):
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("node")
        p.add_argument("--undo", action="store_true", help="remove the node from the list")


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    path = state_path(settings)
    if args.peers_command == "list":
        try:
            data = daemon_api.get_json(args.url or daemon_api.local_url(), "/peers", settings)
            origin = "daemon"
        except daemon_api.Unreachable as exc:
            state = peerstate.load(path)
            data = {
                "peers": [
                    {"node": n, "address": a, "state": "unknown"}
                    for n, a in sorted(state.members.items())
                ],
                "revoked": sorted(state.revoked),
                "departed": sorted(state.departed),
            }
            origin = f"state file {path} (daemon not reachable: {exc})"
        if args.json:
            print(json.dumps(data, indent=1))
            return 0
        print(f"# from {origin}")
        for p in data.get("peers", []):
            err = f"  error: {p['error']}" if p.get("error") else ""
            print(f"{p['node']:<24} {p['address']:<32} {p['state']}{err}")
        for label in ("revoked", "departed"):
            if data.get(label):
                print(f"{label}: {', '.join(data[label])}")
        return 0
    if not valid_node_id(args.node):
        print(f"noon: invalid node id {args.node!r}")
        return 1
    if args.node == settings.node_id:
        print("noon: this is the local node; depart or revoke it from another machine")
        return 1
    attr = "departed" if args.peers_command == "depart" else "revoked"

    def change(state: peerstate.PeerState) -> None:
        target: set[str] = getattr(state, attr)
        if args.undo:
            target.discard(args.node)
        else:
            target.add(args.node)
            state.members.pop(args.node, None)

    peerstate.update(path, change)
    verb = "no longer " + attr if args.undo else attr
    print(f"{args.node} is {verb}; noond applies it at its next round ({path})")
    return 0
