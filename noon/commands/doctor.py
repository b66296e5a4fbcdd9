"""``noon doctor``: check everything a node needs and say, for each problem, how to fix it.

Checks, in order: the directory (exists, writable, its entries readable by their owner only);
the shards (corrupt lines with file:line, stamps from a clock far in the future); forks (two
different ops with one identity, found by folding every shard, and those the daemon reports);
this node's certificate, key and CA (present, matching, signed by the CA, CN equal to the node
id, expiry); the local daemon (answers, is this node, its own shard not behind); every member
(answers over mutual TLS, is not suspect or dead) and its clock (the skew between its HTTP
``Date`` and ours).

A machine where nothing says it replicates (no certificate, no peer source, no daemon state)
gets a note instead of the certificate, daemon and peer checks: keeping memory on one machine
is a choice, not a fault.

Exit code 0 when nothing is an error (notes and warnings allowed), 1 otherwise. Nothing is
modified.
"""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import json
import os
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from noon import certs
from noon.commands.doctor_mesh import check_daemon, check_members
from noon.commands.findings import ERROR, NOTE, OK, WARNING, Finding, render
from noon.commands.peers import state_path
from noon.commands.terminal import visible_lines
from noon.config import Settings, add_store_flags, settings_from
from noon.daemon_link import api as daemon_api
from noon.daemon_link import bodies
from noon.store import peerstate
from noon.store.private import fix_command, loose_entries
from noon.store.shard import unsafe_entries
from noon.store.store import ForkDetected, Store
from noon.store.survey import survey_dir

EXPIRY_WARNING_DAYS = 30

DISCOVERY = ("NOOND_PEERS", "NOOND_DNS_SRV", "NOOND_TAILSCALE")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check the directory, the shards (corrupt lines, forks), this node's certificates and "
        "their expiry, the local daemon, every peer's reachability and clock skew. Every "
        "problem comes with how to fix it. Exit code 0 when healthy, 1 otherwise."
    )
    add_store_flags(parser, namespace=False)
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
        base = next((p for p in d.parents if p.exists()), None)
        if base is not None and base.is_dir() and os.access(base, os.W_OK | os.X_OK):
            return [
                Finding(
                    "directory",
                    NOTE,
                    f"{d} does not exist yet: no memory has been written on this machine; the "
                    "first write (a session of noon serve, or noon import) creates it",
                    "nothing to do; if this machine's memory is elsewhere, set NOON_DIR to it",
                )
            ]
        return [
            Finding(
                "directory",
                ERROR,
                f"{d} does not exist, and {base} is not a directory this user can write in, "
                "so noon cannot create it",
                f"set NOON_DIR to a directory you can write, or create it: mkdir -p {d}",
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


SHOWN_LOOSE = 50


def check_modes(d: Path) -> list[Finding]:
    """Whether another account on this machine could read or change the memory: every entry
    of ``d`` must be its owner's alone (0700 directories, 0600 files, as noon creates them)."""
    loose = loose_entries(d)
    if not loose:
        return [Finding("permissions", OK, f"{d} and its files are readable by their owner only")]
    named = ", ".join(f"{name} ({mode:04o})" for name, mode in loose[:SHOWN_LOOSE])
    more = f" and {len(loose) - SHOWN_LOOSE} more" if len(loose) > SHOWN_LOOSE else ""
    return [
        Finding(
            "permissions",
            WARNING,
            f"{len(loose)} entries of {d} are open to other accounts on this machine (unless a "
            f"directory above it stops them): {named}{more}. They can read every memory, "
            "key and PIN in it, or change them",
            f"take the group's and other accounts' permissions away: {fix_command(d)}",
        )
    ]


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
    for name, kind in unsafe_entries(settings.dir):
        out.append(
            Finding(
                "shards",
                ERROR,
                f"{settings.dir / name} is {kind}, not a regular file: noon skips it and never "
                "opens it",
                f"move it out of {settings.dir}: noon keeps only regular files there",
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
        store = Store(settings)
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


def replication_set_up(settings: Settings) -> bool:
    """Whether anything says this machine replicates: a certificate file (or its variable), a
    peer source, plaintext mode, or the daemon's state file. A machine with none keeps its
    memory alone, which is a choice, not a fault."""
    if any(os.environ.get(v, "").strip() for v in DISCOVERY) or not daemon_api.tls_enabled():
        return True
    variables = ("NOOND_TLS_CERT", "NOOND_TLS_KEY", "NOOND_TLS_CA")
    if any(os.environ.get(v, "").strip() for v in variables):
        return True
    return any(p.exists() for p in (*daemon_api.tls_files(settings), state_path(settings)))


ALONE = Finding(
    "replication",
    NOTE,
    "not set up: this machine keeps its memory alone (no certificates, no peers, no daemon "
    "state), so the certificate, daemon and peer checks were skipped",
    "to share it with your other machines: noon certs init, noon certs issue <node id>, "
    "then run noond with NOOND_PEERS (docs/noond.md)",
)


def diagnose(settings: Settings, url: str, *, daemon: bool = True) -> list[Finding]:
    findings = check_directory(settings.dir)
    if findings[0].level == OK:
        findings += check_modes(settings.dir)
        findings += check_shards(settings, time.time_ns() // 1_000_000)
        findings += check_fork(settings)
    if not replication_set_up(settings):
        return [*findings, ALONE]
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
        members = tuple(bodies.PeerEntry(n, a, "unknown") for n, a in sorted(state.members.items()))
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


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    findings = diagnose(
        settings, args.url or daemon_api.local_url(settings), daemon=not args.no_daemon
    )
    healthy = not any(f.level == ERROR for f in findings)
    if args.json:
        print(json.dumps({"healthy": healthy, "findings": [asdict(f) for f in findings]}, indent=1))
    else:
        print(visible_lines(render(findings)))
    return 0 if healthy else 1
