"""``noon peers list|depart NODE|revoke NODE|recover NODE``.

``list`` asks the local daemon (``/peers`` over mTLS with this node's own certificate) and falls
back to the state file. The others edit the daemon's state file under its lock; the daemon
applies them at its next round: a revoked node is refused on every route and never exchanged
with again, and its shard is no longer served; a departed node is refused too and no longer
holds back tombstone collection, while the memories it wrote stay shared; ``recover`` lets a
member give this node back ops of its own shard after a disk loss (PROTOCOL.md §6.1).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from noon import daemon_link
from noon.commands.terminal import visible_lines
from noon.config import Settings
from noon.core.ops import valid_node_id
from noon.daemon_link import api as daemon_api
from noon.daemon_link import bodies
from noon.errors import Invalid, Refused
from noon.store import peerstate


def state_path(settings: Settings) -> Path:
    return daemon_link.state_path(settings.dir, os.environ)


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="peers_command", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="members, their health, revoked and departed nodes")
    lst.add_argument(
        "--url", help="daemon base URL (default: where the local noond says it listens)"
    )
    lst.add_argument("--json", action="store_true", help="print JSON")
    for name, text in (
        (
            "depart",
            "a node left for good: refuse it and stop waiting for it before deleted memories "
            "are removed; its replica and the memories it wrote stay",
        ),
        ("revoke", "a node is compromised or lost: refuse it everywhere, keep its replica"),
        (
            "recover",
            "this machine lost data (disk loss, old backup): take this node's own ops back "
            "from NODE, up to what NODE holds now",
        ),
    ):
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("node")
        p.add_argument("--undo", action="store_true", help="remove the node from the list")
        if name == "recover":
            p.add_argument("--url", help="daemon base URL (default: where the local noond says)")


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    path = state_path(settings)
    if args.peers_command == "list":
        url = args.url or daemon_api.local_url(settings)
        try:
            answer = daemon_api.get(url, "/peers", bodies.Peers, settings)
            data = answer.to_json()
            origin = "daemon"
        except daemon_api.Unreachable as exc:
            state = peerstate.load(path)
            answer = bodies.Peers(
                peers=tuple(
                    bodies.PeerEntry(n, a, "unknown") for n, a in sorted(state.members.items())
                ),
                candidates=(),
                revoked=tuple(sorted(state.revoked)),
                departed=tuple(sorted(state.departed)),
            )
            data = {
                "peers": [
                    {"node": p.node, "address": p.address, "state": p.state} for p in answer.peers
                ],
                "revoked": list(answer.revoked),
                "departed": list(answer.departed),
            }
            origin = f"state file {path} (daemon not reachable: {exc})"
        if args.json:
            print(json.dumps(data, indent=1))
            return 0
        lines = [f"# from {origin}"]
        for p in answer.peers:
            err = f"  error: {p.error}" if p.error else ""
            lines.append(f"{p.node:<24} {p.address:<32} {p.state}{err}")
        for label, nodes in (("revoked", answer.revoked), ("departed", answer.departed)):
            if nodes:
                lines.append(f"{label}: {', '.join(nodes)}")
        print(visible_lines("\n".join(lines)))
        return 0
    if not valid_node_id(args.node):
        raise Invalid(f"invalid node id {args.node!r}")
    if args.node == settings.node_id:
        raise Refused("this is the local node; depart or revoke it from another machine")
    if args.peers_command == "recover":
        return _recover(args, settings, path)
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


def _recover(args: argparse.Namespace, settings: Settings, path: Path) -> int:
    """Confirm a recovery from ``args.node``, pinned to what it claims now (the daemon says);
    without a daemon, the daemon pins it when it next sees the member's claim."""
    pinned = peerstate.Confirmation(None, None, time.time())
    held = 0
    if not args.undo:
        url = args.url or daemon_api.local_url(settings)
        try:
            status = daemon_api.get(url, "/status", bodies.Status, settings)
            claims = [c for c in status.claims if c.peer == args.node]
        except daemon_api.Unreachable:
            claims = []
        if claims:
            pinned = peerstate.Confirmation(claims[0].seq, claims[0].digest, time.time())
            held = claims[0].held

    def change(state: peerstate.PeerState) -> None:
        if args.undo:
            state.recover.pop(args.node, None)
        else:
            state.recover[args.node] = pinned

    peerstate.update(path, change)
    if args.undo:
        print(f"no recovery from {args.node}; noond applies it at its next round ({path})")
    elif pinned.through is not None:
        print(
            f"noond takes this node's own ops back from {args.node} up to seq {pinned.through} "
            f"(what it holds now, from seq {held} here) at its next exchange with it"
        )
    else:
        print(
            f"noond takes this node's own ops back from {args.node} at its next exchange with it, "
            "up to what it holds then (no daemon answered to say what it holds now)"
        )
    return 0
