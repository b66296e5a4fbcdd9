"""noond's settings as one table (:class:`noon.setting.Table`): every variable with its flag,
type, default and help. :func:`noond.config.from_env` reads each value through it, the daemon's
flags are built from it, and the settings table of ``docs/noond.md`` is generated from it."""

from __future__ import annotations

from dataclasses import replace

from noon.config import STORE
from noon.setting import Setting, Table

NOOND = Table(
    "noond",
    "docs/noond.md",
    (
        replace(STORE["NOON_DIR"], help="the shard directory (shared with the MCP server)"),
        replace(STORE["NOON_NODE_ID"], help="this node's id; must equal its certificate's CN"),
        replace(STORE["NOON_FSYNC"], help="fsync every append received from peers", field=None),
        Setting(
            "NOOND_LISTEN",
            "bind address (`host:port`, `[v6]:port` or a bare port on loopback; port 0 = "
            "ephemeral)",
            flag="--listen",
            shown="`127.0.0.1:7707`",
        ),
        Setting(
            "NOOND_ADVERTISE",
            "the address peers should dial, sent in `X-Noon-Address` and `/membership`",
            flag="--advertise",
            shown="listen host, or `hostname:port` on a wildcard bind",
        ),
        Setting(
            "NOOND_SOURCE_IP",
            "local IP outgoing connections are bound to (multi-homed hosts; the fault suite gives "
            "each daemon its own loopback IP)",
            shown="kernel's choice",
        ),
        Setting(
            "NOOND_PEERS",
            "static seeds, comma/space separated: `node@host:port` or `host:port` (port defaults "
            "to the listen port)",
            flag="--peers",
        ),
        Setting(
            "NOOND_DNS_SRV",
            "domains whose `_noond._tcp.<domain>` SRV records list peers",
            flag="--dns-srv",
        ),
        Setting(
            "NOOND_DNS_NAMESERVER",
            "`host[:port]` of the DNS server to ask instead (split DNS, tests)",
            flag="--dns-nameserver",
            shown="system resolver",
        ),
        Setting(
            "NOOND_TAILSCALE",
            "discover peers with `tailscale status --json` (the `tailscale` on `PATH`)",
            False,
            flag="--tailscale",
            field="tailscale",
        ),
        Setting(
            "NOOND_TAILSCALE_PORT",
            "port dialled on Tailscale peers",
            lo=1,
            of="integer",
            shown="the listen port",
        ),
        Setting(
            "NOOND_DISCOVER_INTERVAL",
            "re-read discovery sources this often; `0` = at start only",
            300.0,
            field="discover_interval",
        ),
        Setting(
            "NOOND_INTERVAL",
            "anti-entropy round interval (min 0.05)",
            30.0,
            flag="--interval",
            lo=0.05,
            field="interval",
        ),
        Setting(
            "NOOND_PUSH",
            "push the own shard to every live member shortly after it changes",
            True,
            field="push",
        ),
        Setting(
            "NOOND_INOTIFY",
            "on Linux, learn of a local write the moment it is appended (inotify on `NOON_DIR`) "
            "and push it at once; `false`, or where inotify is unavailable (logged), only the "
            "polling below notices",
            True,
            field="inotify",
        ),
        Setting(
            "NOOND_STREAM",
            "push each new batch on a WebSocket kept open per peer and own shard, opened as "
            "soon as the peer's head is known (PROTOCOL.md §5.1), with `POST` as the fallback "
            "while a stream is down; `false`: every push by `POST` (with `NOOND_PUSH=false` "
            "nothing is pushed and no stream opened)",
            True,
            field="stream",
        ),
        Setting(
            "NOOND_WATCH_INTERVAL",
            "how often the shards written here are polled for changes (min 0.01); with inotify "
            "this is only the fallback",
            0.2,
            lo=0.01,
            field="watch_interval",
        ),
        Setting(
            "NOOND_SUSPECT_AFTER",
            "consecutive unanswered exchanges before a member is `suspect`",
            3,
            lo=1,
            field="suspect_after",
        ),
        Setting(
            "NOOND_DEAD_AFTER",
            "... before it is `dead` (must be ≥ `NOOND_SUSPECT_AFTER`)",
            6,
            lo=1,
            field="dead_after",
        ),
        Setting(
            "NOOND_DEAD_RETRY",
            "the longest wait between probes of a failing member (the wait is an eighth of how "
            "long it has been failing, at least 1 s)",
            300.0,
            field="dead_retry",
        ),
        Setting(
            "NOOND_TLS",
            "mutual TLS; `false` is accepted only on a loopback listen address ...",
            True,
            flag="--tls",
            field="tls",
        ),
        Setting(
            "NOOND_ALLOW_PLAINTEXT",
            "... or with this explicit opt-in, which logs a loud warning at start",
            False,
            flag="--allow-plaintext",
            field="allow_plaintext",
        ),
        Setting(
            "NOOND_TLS_CERT",
            "this node's certificate",
            flag="--cert",
            shown="`$NOON_DIR/certs/<node>.crt`",
        ),
        Setting(
            "NOOND_TLS_KEY",
            "its private key",
            flag="--key",
            shown="`$NOON_DIR/certs/<node>.key`",
        ),
        Setting(
            "NOOND_TLS_CA",
            "the CA certificate (the only one trusted)",
            flag="--ca",
            shown="`$NOON_DIR/certs/ca.crt`",
        ),
        Setting(
            "NOOND_REVOKED",
            "node ids refused everywhere (combined with the state file's list)",
        ),
        Setting(
            "NOOND_DEPARTED",
            "node ids refused as peers that no longer hold back collection (their shards stay)",
        ),
        Setting(
            "NOOND_STATE",
            "state file: verified members, revoked, departed",
            shown="`$NOON_DIR/.noon/noond.json`",
        ),
        Setting(
            "NOOND_MAX_BODY",
            "largest request body accepted (413 beyond), and largest op page read",
            32 << 20,
            lo=4096,
            field="max_body",
            shown="`33554432` (32 MiB)",
        ),
        Setting(
            "NOOND_PAGE_BYTES",
            "op page size asked for and served by default",
            1 << 20,
            lo=1024,
            field="page_bytes",
            shown="`1048576` (1 MiB)",
        ),
        Setting(
            "NOOND_TIMEOUT",
            "connect and read timeout per request (total: 3×)",
            10.0,
            lo=0.1,
            field="timeout",
        ),
        Setting(
            "NOOND_DIGEST",
            "start exchanges with `/shards/digest` (an idle exchange is one small request)",
            True,
            field="digest",
        ),
        Setting(
            "NOOND_CONCURRENCY",
            "members exchanged with at once in a round (candidates have as many slots of their "
            "own)",
            16,
            lo=1,
            field="concurrency",
        ),
        Setting(
            "NOOND_MAX_CONNECTIONS",
            "connections open at once in all (lowered to fit the open-files limit)",
            512,
            lo=1,
            field="max_connections",
        ),
        Setting(
            "NOOND_MAX_CONNECTIONS_PER_SOURCE",
            "connections open at once from one IP address",
            64,
            lo=1,
            field="max_connections_per_source",
        ),
        Setting(
            "NOOND_HANDSHAKE_TIMEOUT",
            "seconds a TLS handshake may take",
            5.0,
            lo=0.1,
            field="handshake_timeout",
        ),
        Setting(
            "NOOND_PULL_BUDGET",
            "bytes one exchange pulls from one member at most; the next exchange, at once while "
            "it takes ops, pulls on",
            256 << 20,
            lo=1 << 16,
            field="pull_budget",
            shown="`268435456` (256 MiB)",
        ),
        Setting(
            "NOOND_MAX_SHARD_BYTES",
            "the largest replica shard kept of one author; beyond it nothing more of that author "
            "is pulled or accepted (own shards are not limited)",
            1 << 30,
            lo=1 << 16,
            field="max_shard_bytes",
            shown="`1073741824` (1 GiB)",
        ),
        Setting(
            "NOOND_FOLD",
            "fold every op this node stores into the machine's read model "
            "(`.noon/readmodel.sqlite3`) as it arrives, in a worker process beside noond, so the "
            "next session answers without folding a catch-up first; `false` leaves the fold to the "
            "sessions",
            True,
            field="fold",
        ),
        Setting(
            "NOOND_COLLECT",
            "physically remove deleted memories once no member can bring them back (PROTOCOL.md "
            "§11)",
            True,
            field="collect",
        ),
        Setting(
            "NOOND_COLLECT_UNSEEN",
            "also remove an element an away member never saw (faster; relies on fresh reports, "
            "§11.5)",
            False,
            field="collect_unseen",
        ),
        Setting(
            "NOOND_COLLECT_TIMEOUT",
            "seconds a collection in a process of its own (stores of 8 MiB or more) may take for "
            "each 8 MiB of shards; a worker still running then is killed, logged, and its "
            "collection retried later",
            30.0,
            lo=0.1,
            field="collect_timeout",
        ),
        Setting(
            "NOOND_FORGET_AFTER",
            "a member silent this long, or counted this long without ever reporting, no longer "
            "holds back collection",
            180 * 86400.0,
            lo=1.0,
            field="forget_after",
            shown="`15552000` (180 days)",
        ),
        Setting(
            "NOOND_METRICS_LISTEN",
            "`host:port` of an extra **plaintext** listener serving only `/metrics` and `/health`,"
            " for a Prometheus without a client certificate (bind it to loopback or a monitoring "
            "network)",
            shown="(off)",
        ),
        Setting(
            "NOOND_RELAY",
            "relays to sync through as well as peers, comma-separated: `s3://bucket/prefix` "
            "(options `?region=R&endpoint=URL&path_style=1`; credentials, region and endpoint "
            "otherwise from the standard AWS chain, `AWS_ENDPOINT_URL` included) or `file:///path`"
            " (a synced folder); see [relay.md](relay.md)",
        ),
        Setting(
            "NOOND_RELAY_KEY",
            "the mesh key that seals what relays hold (`noon certs relay-key`)",
            shown="`$NOON_DIR/certs/relay.key`",
        ),
        Setting(
            "NOOND_RELAY_FLUSH",
            "seconds between uploads of what this node wrote: writes in between go out as one "
            "object",
            1.0,
            lo=0.01,
            field="relay_flush",
        ),
        Setting(
            "NOOND_RELAY_INTERVAL",
            "seconds between reads of each relay (one LIST each)",
            10.0,
            lo=0.05,
            field="relay_interval",
        ),
        Setting(
            "NOOND_RELAY_HEAD_EVERY",
            "seconds at least between writes of this node's head (its frontier report) while it "
            "changes; always written at stop",
            30.0,
            field="relay_head_every",
        ),
        Setting(
            "NOOND_RELAY_COMPACT_EVERY",
            "seconds between merges of this node's own segments that every reader reports holding "
            "into one (PROTOCOL.md §14.5)",
            300.0,
            lo=0.05,
            field="relay_compact_every",
        ),
        STORE["NOON_SIGNING_KEY"],
    ),
)
