"""``noon doctor``: check everything a node needs and say, for each problem, how to fix it.

Checks, in order: the directory (exists, writable); the shards (corrupt lines with file:line,
stamps from a clock far in the future); forks (two different ops with one identity, found by
folding every shard, and those the daemon reports); this node's certificate, key and CA (present,
matching, signed by the CA, CN equal to the node id, expiry); the local daemon (answers, is this
node, its own shard not behind); every member (answers over mutual TLS, is not suspect or dead)
and its clock (the skew between its HTTP ``Date`` and ours).

Exit code 0 when nothing is an error (warnings allowed), 1 otherwise. Nothing is modified.
"""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from noon import certs
from noon.config import Settings
from noon.ops_cli import daemon_api
from noon.ops_cli.peers import state_path
from noon.ops_cli.status import settings_from
from noon.store import peerstate
from noon.store.store import ForkDetected, Store
from noon.store.survey import survey_dir

EXPIRY_WARNING_DAYS = 30
SKEW_WARNING_S = 5.0
"""Clock differences above this are reported (the ``Date`` header has 1 s resolution)."""
MEMBER_TIMEOUT = 3.0

OK, WARNING, ERROR = "ok", "warning", "error"


@dataclass(frozen=True)
class Finding:
    check: str
    level: str
    what: str
    fix: str = ""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check the directory, the shards (corrupt lines, forks), this node's certificates and "
        "their expiry, the local daemon, every peer's reachability and clock skew. Every "
        "problem comes with how to fix it. Exit code 0 when healthy, 1 otherwise."
    )
    parser.add_argument("--dir", type=Path, help="shard directory (default: $NOON_DIR)")
    parser.add_argument("--node-id", help="this node's id (default: $NOON_NODE_ID)")
    parser.add_argument("--url", help="daemon base URL (default: from NOOND_LISTEN, on loopback)")
    parser.add_argument(
        "--no-daemon",
        action="store_true",
        help="this machine runs no noond: skip the daemon and peer checks",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


# -- directory and shards ------------------------------------------------------------------


def check_directory(d: Path) -> list[Finding]:
    if not d.exists():
        return [
            Finding(
                "directory",
                ERROR,
                f"{d} does not exist",
                f"set NOON_DIR to the right directory, or create it: mkdir -p {d}",
            )
        ]
    if not d.is_dir():
        return [
            Finding("directory", ERROR, f"{d} is not a directory", "point NOON_DIR at a directory")
        ]
    try:
        fd, probe = tempfile.mkstemp(prefix=".doctor-", dir=d)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return [
            Finding(
                "directory",
                ERROR,
                f"{d} is not writable ({exc.strerror})",
                f"give the user running noon write access: chown -R {getpass.getuser()} "
                f"{d} (or fix NOON_DIR)",
            )
        ]
    return [Finding("directory", OK, f"{d} exists and is writable")]


def check_shards(settings: Settings, now_ms: int) -> list[Finding]:
    out: list[Finding] = []
    try:
        surveys = survey_dir(settings.dir)
    except OSError as exc:
        return [
            Finding(
                "shards",
                ERROR,
                f"cannot read the shards: {exc}",
                "check the permissions of NOON_DIR and its files",
            )
        ]
    for s in surveys:
        own = s.node == settings.node_id
        for bad in s.corrupt:
            fix = (
                "this is this node's own shard: restore the line from a backup or from a peer's "
                f"copy of {s.file} (compare them line by line); noon skips the line meanwhile "
                "and never rewrites it away"
                if own
                else f"this is a replica: stop noond, move {s.file} out of {settings.dir}, start "
                "noond; it fetches the shard again from its peers"
            )
            out.append(
                Finding(
                    "shards",
                    ERROR,
                    f"corrupt line {settings.dir / s.file}:{bad.line}: {bad.reason} "
                    f"({bad.excerpt})",
                    fix,
                )
            )
        ahead = s.newest_ms - now_ms
        if ahead > settings.max_skew_ms:
            out.append(
                Finding(
                    "clock",
                    ERROR,
                    f"{s.file} holds op {s.newest_op} stamped {ahead / 1000:.0f} s in the future: "
                    f"the clock of machine {s.newest_op.split(':')[0]} was (or is) ahead",
                    "enable NTP on that machine (timedatectl set-ntp true) and check its time "
                    "zone; noon clamps such stamps when it sees them, but later edits elsewhere "
                    "lose to that op until real time passes it",
                )
            )
    if surveys and not any(f.check == "shards" for f in out):
        ops = sum(s.ops for s in surveys)
        out.append(Finding("shards", OK, f"{len(surveys)} shards, {ops} ops, no corrupt line"))
    elif not surveys:
        out.append(Finding("shards", OK, "no shards yet (nothing written or replicated)"))
    return out


def check_fork(settings: Settings) -> list[Finding]:
    try:
        store = Store(replace(settings, snapshot=False))
    except ForkDetected as exc:
        return [
            Finding(
                "fork",
                ERROR,
                str(exc).split(". Two writers")[0],
                "two writers used one node id (a restored backup or a copied NOON_NODE_ID): stop "
                "them, keep the shard that is right, move the other out of "
                f"{settings.dir} on every node that holds it, and give every machine its own "
                "NOON_NODE_ID",
            )
        ]
    store.close()
    return [Finding("fork", OK, "no forked shard")]


# -- certificates --------------------------------------------------------------------------


def check_certificates(settings: Settings) -> list[Finding]:
    if not daemon_api.tls_enabled():
        return [
            Finding(
                "certificates",
                WARNING,
                "NOOND_TLS is off: replication runs in plaintext without certificates",
                "keep that to loopback tests; on a network: noon certs issue "
                f"{settings.node_id}, then unset NOOND_TLS",
            )
        ]
    cert, key, ca = daemon_api.tls_files(settings)
    node = settings.node_id
    issue = (
        f"on the machine holding the CA: noon certs issue {node}, then copy {node}.crt, "
        f"{node}.key and ca.crt into {cert.parent}/"
    )
    missing = [p for p in (cert, key, ca) if not p.exists()]
    if missing:
        return [
            Finding("certificates", ERROR, f"missing: {', '.join(str(p) for p in missing)}", issue)
        ]
    try:
        cn = certs.check_node_files(cert, key, ca)
    except certs.KeyMismatchError as exc:
        return [
            Finding(
                "certificates",
                ERROR,
                str(exc),
                f"the key does not belong to the certificate: {issue}",
            )
        ]
    except certs.NotSignedByCaError as exc:
        return [
            Finding(
                "certificates",
                ERROR,
                str(exc),
                f"the certificate comes from another CA than {ca}: {issue}",
            )
        ]
    except certs.CertError as exc:
        return [Finding("certificates", ERROR, str(exc), issue)]
    out: list[Finding] = []
    if cn != node:
        out.append(
            Finding(
                "certificates",
                ERROR,
                f"{cert} is for node {cn!r}, but this node is {node!r}",
                f"set NOON_NODE_ID={cn}, or issue a certificate for {node}: {issue}",
            )
        )
    now = dt.datetime.now(dt.UTC)
    for path, what in ((cert, "certificate"), (ca, "CA certificate")):
        info = certs.cert_info(path, now=now)
        when = info.not_after.strftime("%Y-%m-%d")
        renew = (
            issue
            if what == "certificate"
            else ("create a new CA (noon certs init --force) and re-issue every node's certificate")
        )
        if info.expired:
            out.append(
                Finding("certificates", ERROR, f"the {what} {path} expired on {when}", renew)
            )
        elif info.days_left < EXPIRY_WARNING_DAYS:
            out.append(
                Finding(
                    "certificates",
                    WARNING,
                    f"the {what} {path} expires in {info.days_left} days ({when})",
                    f"renew it before then: {renew} (add --force)",
                )
            )
    if not out:
        days = certs.cert_info(cert, now=now).days_left
        out.append(
            Finding(
                "certificates",
                OK,
                f"{cert.name} is node {node}, signed by the CA, valid {days} more days",
            )
        )
    return out


# -- the daemon and its members ------------------------------------------------------------


START_DAEMON = (
    "start it: systemctl --user start noond (or sudo systemctl start noond, or run "
    "noond); if it runs, check that NOOND_LISTEN here matches its listen address "
    "and read its log: journalctl --user -u noond"
)


def check_daemon(settings: Settings, url: str) -> tuple[list[Finding], list[dict[str, Any]] | None]:
    """The daemon's findings, and its members (None when no daemon answered)."""
    try:
        status = daemon_api.get_json(url, "/status", settings)
        peers = daemon_api.get_json(url, "/peers", settings)
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
    if status.get("node") != settings.node_id:
        return [
            Finding(
                "daemon",
                ERROR,
                f"the daemon at {url} is node {status.get('node')!r}, not {settings.node_id!r}",
                "point NOOND_LISTEN at this node's daemon, or fix NOON_NODE_ID",
            )
        ], None
    out = [
        Finding(
            "daemon",
            OK,
            f"noond answers at {url} (up {status.get('uptime_seconds')} s, "
            f"{status.get('rounds')} rounds)",
        )
    ]
    if status.get("behind"):
        out.append(
            Finding(
                "daemon",
                WARNING,
                "a peer holds more of this node's own shard than this machine (a disk loss or a "
                "restored backup); noond is recovering it and local writes wait",
                "keep noond running until `noon status` no longer says OWN SHARD BEHIND",
            )
        )
    for fork in status.get("forks", []):
        out.append(
            Finding(
                "fork",
                ERROR,
                f"shard {fork.get('shard')} differs from {fork.get('peer')}'s copy: "
                f"{fork.get('error')}",
                "find which machine wrote the other version (a restored backup or a copied "
                "NOON_NODE_ID), keep the right shard and move the other out of NOON_DIR on every "
                "node that holds it",
            )
        )
    return out, list(peers.get("peers", []))


def _probe(settings: Settings, member: dict[str, Any]) -> Finding:
    node, address = str(member.get("node")), str(member.get("address"))
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
    # Date has 1 s resolution (truncated): compare it with the middle of the request.
    skew = answer.date + 0.5 - (before + after) / 2
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


def check_members(settings: Settings, members: list[dict[str, Any]]) -> list[Finding]:
    """Dial every member's /health over mutual TLS: reachability, identity and clock skew."""
    if not members:
        return [Finding("peers", OK, "no peers known yet (a single machine, or none admitted)")]
    with ThreadPoolExecutor(max_workers=min(16, len(members))) as pool:
        probed = list(pool.map(lambda m: _probe(settings, m), members))
    out: list[Finding] = []
    for m, f in zip(members, probed, strict=True):
        state = m.get("state")
        if state in ("suspect", "dead") and f.level == ERROR and f.check == "peers":
            f = replace(
                f, what=f"{f.what} (noond counts it as {state}, last error: {m.get('error')})"
            )
        elif state in ("suspect", "dead"):
            out.append(
                Finding(
                    "peers",
                    WARNING,
                    f"noond counts peer {m.get('node')} as {state} (last error: "
                    f"{m.get('error')}), though it answers now",
                    "nothing to do if it was just restarted; noond marks it alive at its next "
                    "exchange",
                )
            )
        out.append(f)
    return out


def diagnose(settings: Settings, url: str, *, daemon: bool = True) -> list[Finding]:
    findings = check_directory(settings.dir)
    if findings[0].level == OK:
        findings += check_shards(settings, time.time_ns() // 1_000_000)
        findings += check_fork(settings)
    findings += check_certificates(settings)
    if not daemon:
        return findings
    daemon_findings, members = check_daemon(settings, url)
    findings += daemon_findings
    if members is None:
        try:
            state = peerstate.load(state_path(settings))
        except (OSError, peerstate.StateError) as exc:
            findings.append(
                Finding(
                    "peers", ERROR, str(exc), "fix or remove the state file (noond rewrites it)"
                )
            )
            return findings
        members = [{"node": n, "address": a} for n, a in sorted(state.members.items())]
    certs_ok = not any(f.check == "certificates" and f.level == ERROR for f in findings)
    if certs_ok:
        findings += check_members(settings, members)
    elif members:
        findings.append(
            Finding(
                "peers",
                WARNING,
                "peers not checked: no usable certificate",
                "fix the certificate findings first",
            )
        )
    return findings


def render(findings: list[Finding]) -> str:
    out = []
    for f in findings:
        out.append(f"{f.level.upper():<8} {f.check:<13} {f.what}")
        if f.fix:
            out.append(f"{'':<8} {'':<13} fix: {f.fix}")
    errors = sum(f.level == ERROR for f in findings)
    warnings = sum(f.level == WARNING for f in findings)
    out.append("")
    out.append("healthy" if not errors else f"{errors} problem(s) to fix")
    if warnings:
        out[-1] += f", {warnings} warning(s)"
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    findings = diagnose(settings, args.url or daemon_api.local_url(), daemon=not args.no_daemon)
    healthy = not any(f.level == ERROR for f in findings)
    if args.json:
        print(json.dumps({"healthy": healthy, "findings": [asdict(f) for f in findings]}, indent=1))
    else:
        print(render(findings))
    return 0 if healthy else 1
