"""``noon doctor``'s checks of the running daemon and of every member it knows: answers, is this
node, its own shard not behind; each member over mutual TLS, not suspect or dead, and its clock
(the skew between its HTTP ``Date`` and ours)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from noon import daemon_link
from noon.commands.findings import ERROR, OK, WARNING, Finding
from noon.config import Settings
from noon.daemon_link import api as daemon_api
from noon.daemon_link import bodies

SKEW_WARNING_S = 5.0
"""Clock differences above this are reported (the ``Date`` header has 1 s resolution)."""
MEMBER_TIMEOUT = 3.0


START_DAEMON = (
    "start it: systemctl --user start noond (or sudo systemctl start noond, or run "
    "noond); if it runs, check that NOOND_LISTEN here matches its listen address "
    "and read its log: journalctl --user -u noond"
)


def check_daemon(
    settings: Settings, url: str
) -> tuple[list[Finding], tuple[bodies.PeerEntry, ...] | None]:
    """The daemon's findings, and its members (None when no daemon answered)."""
    try:
        status = daemon_api.get(url, "/status", bodies.Status, settings)
        peers = daemon_api.get(url, "/peers", bodies.Peers, settings)
    except daemon_api.NoCertificate as exc:
        return [
            Finding(
                "daemon",
                WARNING,
                f"daemon not checked: {exc}",
                "fix the certificate findings first",
            )
        ], None
    except daemon_api.Unreachable as exc:
        return [Finding("daemon", ERROR, f"no daemon answers at {url}: {exc}", START_DAEMON)], None
    if status.node != settings.node_id:
        return [
            Finding(
                "daemon",
                ERROR,
                f"the daemon at {url} is node {status.node!r}, not {settings.node_id!r}",
                "point NOOND_LISTEN at this node's daemon, or fix NOON_NODE_ID",
            )
        ], None
    out = [
        Finding(
            "daemon",
            OK,
            f"noond answers at {url} (up {status.uptime_seconds} s, {status.rounds} rounds)",
        )
    ]
    for claim in status.claims:
        peer = claim.peer
        out.append(
            Finding(
                "daemon",
                WARNING if claim.confirmed else ERROR,
                f"peer {peer} holds this node's own shard up to seq {claim.seq}, this "
                f"machine only up to seq {claim.held} (a disk loss, a restored backup, or "
                f"{peer} lying)" + ("; recovery from it is confirmed" if claim.confirmed else ""),
                "keep noond running until `noon status` no longer says OWN SHARD BEHIND"
                if claim.confirmed
                else f"if this machine lost data: noon peers recover {peer}; if it did not: "
                f"noon peers revoke {peer}",
            )
        )
    for relay in status.relays:
        if relay.stats.reachable is False:
            out.append(
                Finding(
                    "relay",
                    ERROR,
                    f"relay {relay.url} is unreachable: {relay.stats.error}; "
                    f"{relay.stats.backlog_ops} own ops wait to be uploaded",
                    "check the bucket's credentials (the AWS chain: AWS_PROFILE, "
                    "AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL) or that the synced folder exists",
                )
            )
        elif relay.stats.refused:
            out.append(
                Finding(
                    "relay",
                    WARNING,
                    f"relay {relay.url}: {relay.stats.refused} objects refused, nothing "
                    "stored from them (see noond's log: cut by a sync tool, another mesh's key, "
                    "or forged)",
                    "check that every machine holds the same relay.key and that nobody else "
                    "writes under the relay's prefix",
                )
            )
    for fork in status.forks:
        out.append(
            Finding(
                "fork",
                ERROR,
                f"shard {fork.shard} differs from {fork.peer}'s copy: {fork.error}",
                "find which machine wrote the other version (a restored backup or a copied "
                "NOON_NODE_ID), keep the right shard and move the other out of NOON_DIR on every "
                "node that holds it",
            )
        )
    return out, peers.peers


def _probe(settings: Settings, member: bodies.PeerEntry) -> Finding:
    node, address = member.node, member.address
    url = f"{'https' if daemon_api.tls_enabled() else 'http'}://{address}"
    before = time.time()
    try:
        answer = daemon_api.fetch(url, "/health", settings, timeout=MEMBER_TIMEOUT)
    except daemon_api.Unreachable as exc:
        return Finding(
            "peers",
            ERROR,
            f"peer {node} at {address} does not answer: {exc}",
            f"check that {node} is on and its noond runs, that {address} is reachable from "
            f"here (tailscale ping / nc -vz), or if it left for good: noon peers depart {node}",
        )
    after = time.time()
    if answer.peer is not None and answer.peer != node:
        return Finding(
            "peers",
            ERROR,
            f"{address} answers as {answer.peer!r}, not as member {node!r}",
            f"{node} moved or another machine took its address; noond re-verifies "
            "addresses, restart it if this persists",
        )
    if answer.date is None:
        return Finding(
            "clock",
            WARNING,
            f"peer {node} sent no Date header: skew unknown",
            "upgrade that node's noond",
        )
    skew = daemon_link.clock_skew(answer.date, before, after)
    level = (
        ERROR
        if abs(skew) * 1000 > settings.max_skew_ms
        else (WARNING if abs(skew) > SKEW_WARNING_S else OK)
    )
    what = f"peer {node} at {address} answers; its clock differs from ours by {skew:+.1f} s"
    fix = (
        ""
        if level == OK
        else (
            f"enable NTP on both machines (timedatectl set-ntp true); edits on the machine ahead "
            f"win over later edits elsewhere, and stamps more than "
            f"{settings.max_skew_ms / 1000:.0f} s ahead are clamped"
        )
    )
    return Finding("clock" if level != OK else "peers", level, what, fix)


def check_members(settings: Settings, members: Sequence[bodies.PeerEntry]) -> list[Finding]:
    """Dial every member's /health over mutual TLS: reachability, identity and clock skew."""
    if not members:
        return [Finding("peers", OK, "no peers known yet (a single machine, or none admitted)")]
    with ThreadPoolExecutor(max_workers=min(16, len(members))) as pool:
        probed = list(pool.map(lambda m: _probe(settings, m), members))
    out: list[Finding] = []
    for m, f in zip(members, probed, strict=True):
        state = m.state
        if state in ("suspect", "dead") and f.level == ERROR and f.check == "peers":
            f = replace(f, what=f"{f.what} (noond counts it as {state}, last error: {m.error})")
        elif state in ("suspect", "dead"):
            out.append(
                Finding(
                    "peers",
                    WARNING,
                    f"noond counts peer {m.node} as {state} (last error: "
                    f"{m.error}), though it answers now",
                    "nothing to do if it was just restarted; noond marks it alive at its next "
                    "exchange",
                )
            )
        out.append(f)
    return out
