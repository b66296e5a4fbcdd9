"""``noon status`` as data: this node, its shards (ops, highest seq, last write) and how far each
peer is behind or ahead on each of them, the peers' health, memories with concurrent versions,
forks, relays, and the deleted elements the daemon keeps frozen because a member could still
bring them back (``noon status`` prints it; the page's Machines view shows it).

Peers and frozen tombstones come from the local daemon (``/status`` and ``/peers`` over mutual
TLS with this node's own certificate). Without a daemon, the state file's last reports stand in
for the peers, and what is frozen is unknown; shards and conflicts always come from the files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from noon import daemon_link
from noon.config import Settings
from noon.core.elements import CONTENT
from noon.core.hlc import physical, utc
from noon.daemon_link import api as daemon_api
from noon.daemon_link import bodies
from noon.graph.memory_view import show_uri_or_past
from noon.names import shard_node
from noon.store import peerstate
from noon.store.queries import Queries
from noon.store.shard import list_shards
from noon.store.store import ForkDetected, Store
from noon.store.survey import survey_dir


def state_path(settings: Settings) -> Path:
    return daemon_link.state_path(settings.dir, os.environ)


def iso(seconds: float | None) -> str | None:
    if not seconds:
        return None
    return utc(seconds * 1000, "iso")


def conflicts(store: Store, limit: int) -> tuple[int, list[dict[str, Any]], dict[str, int]]:
    """What ``system://conflicts`` and the page's Conflicts list, in every namespace (one rule:
    :meth:`~noon.graph.reader.GraphReader.conflicts`, edits that lost to a delete included):
    the total, the first ``limit`` items, and the count per namespace."""
    with store.lock, store.graph.reading():
        graph = store.graph
        found = [
            (ns, key, el)
            for ns in sorted(Queries(graph).namespaces())
            for key, el in graph.conflicts(ns)
        ]
        per_ns: dict[str, int] = {}
        for ns, _, _ in found:
            per_ns[ns] = per_ns.get(ns, 0) + 1
        out = []
        for ns, key, el in found[:limit]:
            item: dict[str, Any] = {"namespace": ns, "element": list(key)}
            if key[0] == CONTENT:
                item["uri"] = show_uri_or_past(graph, ns, key[2])
            item["heads"] = [
                {
                    "version": f"{h.node}:{h.seq}",
                    "by": h.by,
                    "node": h.node,
                    "time": iso(physical(h.hlc) / 1000),
                    "winner": h.id == el.winner.id,
                    "deleted": h.val is None,
                }
                for h in sorted(el.heads.values(), key=lambda o: o.order, reverse=True)
            ]
            out.append(item)
        return len(found), out, per_ns


ONE_MACHINE = (
    "none needed: this is the only machine (no certificates, no peers); "
    "`noon certs init` starts adding another (docs/noond.md)"
)


def _peers_known(settings: Settings) -> bool:
    """Whether this machine has, or had, peers: its daemon's state file names some, or the
    directory holds another machine's shard."""
    own = {settings.node_id, settings.node_id + "-import"}
    if any(shard_node(name) not in own for name in list_shards(settings.dir)):
        return True
    try:
        state = peerstate.load(state_path(settings))
    except (OSError, peerstate.StateError):
        return True  # unreadable: assume a mesh rather than hide a daemon that is down
    return bool(state.members or state.reports)


def gather(
    settings: Settings, url: str, limit: int = 20, store: Store | None = None
) -> dict[str, Any]:
    """Everything ``noon status`` shows, as one JSON-ready dict. Conflicts come from ``store``
    when given (a long-running caller's own), else from a store opened for the purpose."""
    report: dict[str, Any] = {
        "node": settings.node_id,
        "dir": str(settings.dir),
        "namespace": settings.namespace,
    }
    daemon: dict[str, Any] = {"url": url, "reachable": False}
    peers_doc: bodies.Peers | None = None
    status_doc: bodies.Status | None = None
    try:
        status_doc = daemon_api.get(url, "/status", bodies.Status, settings)
        peers_doc = daemon_api.get(url, "/peers", bodies.Peers, settings)
    except daemon_api.NoCertificate as exc:
        daemon["error"] = str(exc)
        daemon["needed"] = _peers_known(settings)
        if not daemon["needed"]:
            daemon["note"] = ONE_MACHINE
    except daemon_api.Unreachable as exc:
        daemon["error"] = str(exc)
    if status_doc is not None and status_doc.node != settings.node_id:
        daemon["error"] = (
            f"the daemon at {url} is node {status_doc.node!r}, not {settings.node_id!r}"
        )
        status_doc = peers_doc = None
    if status_doc is not None:
        daemon.update(
            reachable=True,
            uptime_seconds=status_doc.uptime_seconds,
            rounds=status_doc.rounds,
            behind=status_doc.behind or bool(status_doc.claims),
            protocol=status_doc.protocol,
        )
    report["daemon"] = daemon

    peers: list[dict[str, Any]] = []
    heads: dict[str, dict[str, int]] = {}
    if peers_doc is not None:
        report["peers_source"] = "daemon"
        for p in peers_doc.peers:
            peers.append(
                {
                    "node": p.node,
                    "address": p.address,
                    "state": p.state,
                    "last_ok": iso(p.last_ok),
                    "reported_at": iso(p.reported_at),
                    "error": p.error,
                }
            )
            heads[p.node] = dict(p.heads)
        report["revoked"] = list(peers_doc.revoked)
        report["departed"] = list(peers_doc.departed)
    elif daemon.get("needed") is False:
        report["peers_source"] = "none: this is the only machine"
    else:
        path = state_path(settings)
        report["peers_source"] = f"state file {path} (last reports; no daemon answered)"
        try:
            state = peerstate.load(path)
        except (OSError, peerstate.StateError) as exc:
            state = peerstate.PeerState()
            report["peers_error"] = str(exc)
        for node in sorted(set(state.members) | set(state.reports)):
            rep = state.reports.get(node)
            peers.append(
                {
                    "node": node,
                    "address": state.members.get(node),
                    "state": "unknown",
                    "last_ok": None,
                    "reported_at": iso(rep.at) if rep else None,
                    "error": None,
                }
            )
            heads[node] = dict(rep.frontier) if rep else {}
        report["revoked"] = sorted(state.revoked)
        report["departed"] = sorted(state.departed)
    report["peers"] = peers

    shards = []
    for s in survey_dir(settings.dir):
        shards.append(
            {
                "shard": s.node,
                "file": s.file,
                "ops": s.ops,
                "seq": s.seq,
                "bytes": s.size,
                "last_write": iso(s.newest_ms / 1000),
                "corrupt": len(s.corrupt),
                # > 0: the peer lacks that many ops of this shard; < 0: it holds more than here.
                "lag": {node: s.seq - h.get(s.node, 0) for node, h in sorted(heads.items())},
            }
        )
    report["shards"] = shards

    forks = [f.to_json() for f in status_doc.forks] if status_doc else []
    try:
        own = store or Store(settings)
    except ForkDetected as exc:
        forks.append({"peer": None, "shard": None, "error": str(exc)})
        report["conflicts_total"], report["conflicts"] = None, []
        report["conflicts_by_namespace"] = {}
    else:
        try:
            with own.lock:
                total, listed, per_ns = conflicts(own, limit)
                report["conflicts_total"], report["conflicts"] = total, listed
                report["conflicts_by_namespace"] = per_ns
        finally:
            if own is not store:
                own.close()
    report["forks"] = forks

    report["relays"] = [
        {**relay.to_json(), "summary": relay_summary(relay)}
        for relay in (status_doc.relays if status_doc else ())
    ]
    collection = status_doc.collection if status_doc else None
    if collection is not None and collection.ran:
        report["frozen"] = {
            "known": True,
            "count": collection.frozen,
            "kept": [k.to_json() for k in collection.kept[:limit]],
        }
    elif daemon.get("needed") is False:  # frozen means kept for a member: there is none
        report["frozen"] = {"known": True, "count": 0, "kept": []}
    else:
        why = "the daemon has not run a collection yet" if status_doc else "no daemon answered"
        report["frozen"] = {"known": False, "count": None, "kept": [], "note": why}
    return report


def relay_summary(r: bodies.RelayReport) -> str:
    """One line per relay (PROTOCOL.md §14): reachable, lag, backlog, last upload, traffic."""
    s = r.stats
    state = {True: "reachable", False: f"UNREACHABLE ({s.error})", None: "not tried yet"}
    last = s.last_upload
    return (
        f"relay {r.url}: {state[s.reachable]}, "
        f"{s.lag_ops} ops listed not taken yet, {s.backlog_ops} own ops "
        f"not uploaded yet, last upload {iso(last) if last else 'never'}, "
        f"{s.bytes_up} B up / {s.bytes_down} B down in "
        f"{s.requests} requests, {s.refused} objects refused"
    )
