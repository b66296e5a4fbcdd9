"""``noon certs init``, ``noon certs issue NODE`` and ``noon certs sign NODE``: the private CA,
the node certificates that noond's mutual TLS needs, and the signing keys nodes sign their
shards with (see docs/noond.md, "Certificates")."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from noon import certs
from noon.config import Settings


def default_ca_dir() -> Path:
    raw = os.environ.get("NOON_CA_DIR", "").strip()
    return Path(raw).expanduser() if raw else Path("~/.config/noon/ca").expanduser()


def default_cert_dir() -> Path:
    return Settings.from_env().dir / "certs"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="certs_command", metavar="ACTION", required=True)
    init = sub.add_parser("init", help="create the private CA (once per person)")
    init.add_argument("--ca-dir", type=Path, help="default: $NOON_CA_DIR or ~/.config/noon/ca")
    init.add_argument("--name", default="noon CA", help="the CA's common name")
    init.add_argument("--days", type=int, default=3650)
    init.add_argument(
        "--force",
        action="store_true",
        help="replace an existing CA (invalidates every node certificate)",
    )
    issue = sub.add_parser("issue", help="issue a key and certificate for a node id")
    issue.add_argument("node", help="the node id (its NOON_NODE_ID); becomes the CN")
    issue.add_argument("--ca-dir", type=Path, help="default: $NOON_CA_DIR or ~/.config/noon/ca")
    issue.add_argument(
        "--out", type=Path, help="output directory (default: $NOON_DIR/certs, where noond looks)"
    )
    issue.add_argument(
        "--host",
        action="append",
        default=[],
        help="extra DNS name or IP for the certificate (repeatable)",
    )
    issue.add_argument("--days", type=int, default=825)
    issue.add_argument(
        "--role",
        choices=[certs.ROLE_NODE, certs.ROLE_METRICS],
        default=certs.ROLE_NODE,
        help="node (a member, the default) or metrics (reaches /metrics and /health only)",
    )
    issue.add_argument("--force", action="store_true", help="re-issue over existing files")
    sign = sub.add_parser(
        "sign", help="issue a signing key for a node that has a certificate but no signing key"
    )
    sign.add_argument("node", help="the node id")
    sign.add_argument("--ca-dir", type=Path, help="default: $NOON_CA_DIR or ~/.config/noon/ca")
    sign.add_argument("--out", type=Path, help="output directory (default: $NOON_DIR/certs)")
    sign.add_argument(
        "--force", action="store_true", help="a new signing key over the old one (rotation)"
    )
    revoke = sub.add_parser(
        "revoke", help="revoke a node with the CA's key: every node refuses its later ops"
    )
    revoke.add_argument("node", help="the node id")
    revoke.add_argument("--ca-dir", type=Path, help="default: $NOON_CA_DIR or ~/.config/noon/ca")
    revoke.add_argument(
        "--after",
        type=int,
        help="the cut-off stamp, an HLC (milliseconds since 1970 shifted left by 16 bits): "
        "default now",
    )

    relay = sub.add_parser(
        "relay-key", help="create (or --rotate) the mesh key that seals what relays hold"
    )
    relay.add_argument("--ca-dir", type=Path, help="default: $NOON_CA_DIR or ~/.config/noon/ca")
    relay.add_argument("--out", type=Path, help="also copy it here (default: $NOON_DIR/certs)")
    relay.add_argument(
        "--rotate", action="store_true", help="add a new epoch (after revoking a machine)"
    )


@contextmanager
def _hint(what_to_do: str) -> Iterator[None]:
    """A missing CA file said with what to do; every error goes on to :func:`noon.cli.main`,
    which prints it on stderr and exits 1, as for every command."""
    try:
        yield
    except certs.CertFileMissingError as exc:
        raise certs.CertFileMissingError(f"{exc}; {what_to_do}") from exc


def run(args: argparse.Namespace) -> int:
    ca_dir = args.ca_dir or default_ca_dir()
    if args.certs_command == "relay-key":
        return _relay_key(ca_dir, args)
    if args.certs_command == "init":
        ca = certs.init_ca(ca_dir, name=args.name, days=args.days, force=args.force)
        print(f"CA created: {ca.cert} (key {ca.key}, keep it private)")
        print("next: `noon certs issue <node>` for every machine")
        return 0
    if args.certs_command == "sign":
        return _sign(ca_dir, args)
    if args.certs_command == "revoke":
        return _revoke(ca_dir, args)
    with _hint("create the CA first with `noon certs init`"):
        paths = certs.issue_node_cert(
            ca_dir,
            args.node,
            args.out or default_cert_dir(),
            days=args.days,
            hosts=args.host,
            force=args.force,
            role=args.role,
        )
    if args.role == certs.ROLE_METRICS:
        print(f"issued {paths.cert} and {paths.key}: a monitoring identity (CA copy: {paths.ca})")
        print("it reaches /metrics and /health of every noond and nothing else")
        return 0
    signing = certs.signing_paths(paths.dir, paths.node_id)
    print(f"issued {paths.cert} and {paths.key} for node {paths.node_id} (CA copy: {paths.ca})")
    print(f"and its signing key {signing.key} with {signing.cert}")
    print(f"copy these five files to {paths.node_id}'s $NOON_DIR/certs/")
    return 0


def _sign(ca_dir: Path, args: argparse.Namespace) -> int:
    with _hint("create the CA first with `noon certs init`"):
        paths = certs.issue_signing_cert(
            ca_dir, args.node, args.out or default_cert_dir(), force=args.force
        )
    print(f"issued the signing key {paths.key} with {paths.cert} for node {args.node}")
    print(f"copy both to {args.node}'s $NOON_DIR/certs/; its writes are signed from then on")
    return 0


def _revoke(ca_dir: Path, args: argparse.Namespace) -> int:
    """A revocation signed with the CA key, kept in this machine's ``NOON_DIR`` where its noond
    reads it and gives it to every member (PROTOCOL.md §13.6)."""
    now = int(time.time() * 1000)
    after = args.after if args.after is not None else (now << 16) | 0xFFFF
    with _hint("revoking needs the CA's key (--ca-dir)"):
        record = certs.revoke(ca_dir, args.node, after, now)
    target = Settings.from_env().dir / ".noon" / "revocations.jsonl"
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "ab") as out:
        out.write(record.encode() + b"\n")
    print(f"revoked {args.node} from stamp {after} on, signed by the CA; written to {target}")
    print("this machine's noond gives it to every member at its next exchange")
    return 0


def _relay_key(ca_dir: Path, args: argparse.Namespace) -> int:
    master = ca_dir / certs.RELAY_KEY_NAME
    out = (args.out or default_cert_dir()) / certs.RELAY_KEY_NAME
    key = certs.create_relay_key(master, rotate=args.rotate)
    if out.resolve() != master.resolve():
        certs.copy_relay_key(key, out)
    print(f"relay key epoch {key.current} in {master} (copied to {out})")
    print("copy it to every machine's $NOON_DIR/certs/ (mode 0600); keep it as private as ca.key")
    if args.rotate:
        print("machines without this copy cannot read what is written from now on")
    return 0
