"""``noon status``: this node, its shards (ops, highest seq, last write) and how far each peer is
behind or ahead on each of them, the peers' health, memories with concurrent versions, and the
deleted elements the daemon keeps frozen because a member could still bring them back.

Peers and frozen tombstones come from the local daemon (``/status`` and ``/peers`` over mutual
TLS with this node's own certificate). Without a daemon, the state file's last reports stand in
for the peers, and what is frozen is unknown; shards and conflicts always come from the files.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from noon.app.status import ONE_MACHINE, gather
from noon.commands.terminal import visible_lines
from noon.config import add_store_flags, settings_from
from noon.daemon_link import api as daemon_api


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Show this node, its shards with op counts and each peer's lag on them, the peers' "
        "health, memories with concurrent versions (conflicts) and deleted elements kept frozen "
        "for a member that could still bring them back. Asks the local noond; without one, "
        "reads the shard files and the daemon's state file."
    )
    add_store_flags(parser)
    parser.add_argument("--url", help="daemon base URL (default: from NOOND_LISTEN, on loopback)")
    parser.add_argument(
        "--limit",
        type=int,
        default=20,
        help="conflicts and frozen elements listed at most (default 20)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _lag(value: int) -> str:
    if value == 0:
        return "in sync"
    return f"lacks {value}" if value > 0 else f"ahead {-value}"


def render(r: dict[str, Any]) -> str:
    out = [f"node {r['node']}  dir {r['dir']}  namespace {r['namespace']}"]
    d = r["daemon"]
    if d["reachable"]:
        behind = "  OWN SHARD BEHIND A PEER" if d.get("behind") else ""
        out.append(
            f"daemon {d['url']}: up {d.get('uptime_seconds', 0):.0f} s, "
            f"{d.get('rounds')} rounds{behind}"
        )
    elif d.get("needed") is False:
        out.append(f"daemon: {ONE_MACHINE}")
    else:
        out.append(f"daemon {d['url']}: not reachable ({d.get('error')})")
    out.append("")
    peer_names = [p["node"] for p in r["peers"]]
    if r["shards"]:
        head = ["SHARD", "OPS", "SEQ", "LAST WRITE", "CORRUPT", *peer_names]
        rows = [head] + [
            [
                s["shard"],
                str(s["ops"]),
                str(s["seq"]),
                s["last_write"] or "-",
                str(s["corrupt"]),
                *(_lag(s["lag"][n]) if n in s["lag"] else "?" for n in peer_names),
            ]
            for s in r["shards"]
        ]
        out += _table(rows)
    else:
        out.append("no shards yet (nothing written here or replicated)")
    out.append("")
    out.append(f"peers ({r['peers_source']}):")
    if r["peers"]:
        rows = [["NODE", "ADDRESS", "STATE", "LAST OK", "LAST REPORT", "ERROR"]] + [
            [
                p["node"],
                p["address"] or "-",
                p["state"] or "-",
                p["last_ok"] or "-",
                p["reported_at"] or "-",
                (p["error"] or "")[:60],
            ]
            for p in r["peers"]
        ]
        out += ["  " + line for line in _table(rows)]
    else:
        out.append("  none known")
    for label in ("revoked", "departed"):
        if r.get(label):
            out.append(f"{label}: {', '.join(r[label])}")
    out.append("")
    if r["conflicts_total"] is None:
        out.append("conflicts: unknown (the directory is forked, see below)")
    else:
        per_ns = ", ".join(f"{ns}: {n}" for ns, n in r["conflicts_by_namespace"].items())
        out.append(f"conflicts: {r['conflicts_total']}" + (f" ({per_ns})" if per_ns else ""))
    for c in r["conflicts"]:
        out.append(f"  [{c['namespace']}] {c.get('uri') or '/'.join(c['element'])}")
        for h in c["heads"]:
            mark = " (shown)" if h["winner"] else (" (a delete)" if h["deleted"] else "")
            out.append(
                f"    {h['version']}{mark} by {h['by'] or 'unknown'} on {h['node']} at {h['time']}"
            )
    out += [relay["summary"] for relay in r.get("relays", [])]
    f = r["frozen"]
    if f["known"]:
        out.append(f"frozen tombstones: {f['count']}")
        for k in f["kept"]:
            out.append(f"  {'/'.join(k['element'])}: kept for {k['member']} ({k['reason']})")
    else:
        out.append(f"frozen tombstones: unknown ({f['note']})")
    for fork in r["forks"]:
        where = f" (shard {fork['shard']} with {fork['peer']})" if fork.get("shard") else ""
        out.append(f"FORK{where}: {fork['error']}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not settings.dir.is_dir():
        print(
            f"noon: {settings.dir} does not exist; set NOON_DIR or write a memory first "
            "(`noon doctor` checks the setup)"
        )
        return 1
    report = gather(settings, args.url or daemon_api.local_url(settings), args.limit)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(visible_lines(render(report)))
    return 0
