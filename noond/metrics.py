"""Prometheus metrics of one daemon (its own registry, so tests can run several in one process).

Names follow the Prometheus conventions: ``noond_`` prefix, base units in the name, ``_total``
on counters, no ``*_created`` series. Byte counters count HTTP bodies as they cross the wire
(compressed when they are). A ``route`` label is the route's path template on both sides of a
connection (``/shards/{node}/ops``, ``/shards/digest``, ...), so a client's and a server's
series of one route line up.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)

disable_created_metrics()


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.info = Gauge(
            "noond_info",
            "Constant 1, labelled with this node and protocol.",
            ["node", "protocol"],
            registry=r,
        )
        self.rounds = Counter("noond_rounds_total", "Anti-entropy rounds run.", registry=r)
        self.round_seconds = Histogram(
            "noond_round_duration_seconds",
            "Duration of anti-entropy rounds.",
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.last_round = Gauge(
            "noond_last_round_timestamp_seconds", "Unix time the last round ended.", registry=r
        )
        self.exchanges = Counter(
            "noond_exchanges_total",
            "Exchanges with peers by result (ok, unreachable, refused, incompatible, invalid, "
            "local_error).",
            ["result"],
            registry=r,
        )
        self.exchanges_followed = Counter(
            "noond_exchanges_followed_total",
            "Exchanges begun at once after one that ended on its pull budget having taken ops "
            "(still behind the member), not at the next round.",
            registry=r,
        )
        self.pushes = Counter(
            "noond_pushes_total", "Pushes of the own shard by result.", ["result"], registry=r
        )
        self.streams = Gauge(
            "noond_streams",
            "Op streams open (PROTOCOL.md §5.1), by direction (in: members sending here).",
            ["direction"],
            registry=r,
        )
        self.gc_frozen = Gauge(
            "noond_gc_frozen_objects",
            "Objects set aside from Python's cyclic garbage collector once the daemon started "
            "(what its imports and start left): a full collection does not walk them.",
            registry=r,
        )
        self.streams_closed = Counter(
            "noond_streams_closed_total",
            "Op streams closed, by direction and reason (idle, refused, peer, replaced, "
            "failed, stopped).",
            ["direction", "reason"],
            registry=r,
        )
        self.relay_requests = Counter(
            "noond_relay_requests_total",
            "Requests to a relay by operation (list, get, put, put_head, delete).",
            ["relay", "op"],
            registry=r,
        )
        self.relay_bytes = Counter(
            "noond_relay_bytes_total",
            "Sealed bytes sent to (up) and read from (down) a relay.",
            ["relay", "direction"],
            registry=r,
        )
        self.relay_rejected = Counter(
            "noond_relay_rejected_total",
            "Relay objects refused, nothing stored, by reason (ciphertext, too_large, format, "
            "foreign, revoked, unproven, uncertified, fork, invalid_ops, not_own).",
            ["relay", "reason"],
            registry=r,
        )
        self.relay_reachable = Gauge(
            "noond_relay_reachable",
            "1 when the last request to a relay was answered, else 0.",
            ["relay"],
            registry=r,
        )
        self.relay_last_upload = Gauge(
            "noond_relay_last_upload_timestamp_seconds",
            "Unix time of the last segment uploaded to a relay.",
            ["relay"],
            registry=r,
        )
        self.relay_lag = Gauge(
            "noond_relay_lag_ops",
            "Ops a relay lists beyond what this node holds (after its last read).",
            ["relay"],
            registry=r,
        )
        self.relay_backlog = Gauge(
            "noond_relay_backlog_ops",
            "Own ops written here and not yet uploaded to a relay.",
            ["relay"],
            registry=r,
        )
        self.relay_ops_up = Counter(
            "noond_relay_ops_uploaded_total", "Own ops uploaded to a relay.", ["relay"], registry=r
        )
        self.relay_ops_down = Counter(
            "noond_relay_ops_taken_total",
            "Ops taken from a relay and appended here.",
            ["relay"],
            registry=r,
        )
        self.ops_pulled = Counter(
            "noond_ops_pulled_total", "Ops fetched from peers and appended here.", registry=r
        )
        self.ops_pushed = Counter(
            "noond_ops_pushed_total", "Own ops sent to peers in pushes.", registry=r
        )
        self.ops_received = Counter(
            "noond_ops_received_total", "Ops appended here from peers' pushes.", registry=r
        )
        self.ops_recovered = Counter(
            "noond_ops_recovered_total",
            "Own ops recovered from peers (after a disk loss).",
            registry=r,
        )
        self.ops_served = Counter(
            "noond_ops_served_total", "Ops served in op pages (GET /shards/{node}/ops).", registry=r
        )
        self.client_sent = Counter(
            "noond_client_sent_bytes_total",
            "Request body bytes sent to peers.",
            ["route"],
            registry=r,
        )
        self.client_received = Counter(
            "noond_client_received_bytes_total",
            "Response body bytes received from peers.",
            ["route"],
            registry=r,
        )
        self.server_received = Counter(
            "noond_server_received_bytes_total",
            "Request body bytes received.",
            ["route"],
            registry=r,
        )
        self.server_sent = Counter(
            "noond_server_sent_bytes_total", "Response body bytes sent.", ["route"], registry=r
        )
        self.requests = Counter(
            "noond_http_requests_total",
            "HTTP requests served by route, method and status code.",
            ["route", "method", "code"],
            registry=r,
        )
        self.rejected = Counter(
            "noond_rejected_total", "Network inputs refused, by reason.", ["reason"], registry=r
        )
        self.forks = Counter(
            "noond_forks_detected_total",
            "Forked shards detected (two ops with one identity).",
            registry=r,
        )
        self.forked_shards = Gauge(
            "noond_forked_shards",
            "Shards this node refuses to merge because of a fork.",
            registry=r,
        )
        self.peers = Gauge("noond_peers", "Members by health.", ["state"], registry=r)
        self.candidates = Gauge(
            "noond_candidates", "Discovered addresses not yet proven members.", registry=r
        )
        self.admissions = Counter(
            "noond_admissions_total",
            "Candidates admitted as members after /info over mTLS.",
            registry=r,
        )
        self.shards = Gauge("noond_shards", "Shards held.", registry=r)
        self.shard_seq = Gauge(
            "noond_own_shard_seq", "Highest seq of this node's own shard.", registry=r
        )
        self.behind = Gauge(
            "noond_own_shard_behind",
            "1 while a member claims more of an own shard than held here, or a recovery runs.",
            registry=r,
        )
        self.collected = Counter(
            "noond_tombstones_collected_total",
            "Deleted elements physically removed (every op of theirs gone).",
            registry=r,
        )
        self.collected_ops = Counter(
            "noond_collected_ops_total", "Ops removed by tombstone collection.", registry=r
        )
        self.collections_killed = Counter(
            "noond_collections_killed_total",
            "Collection workers killed for running over NOOND_COLLECT_TIMEOUT.",
            registry=r,
        )
        self.frozen = Gauge(
            "noond_frozen_elements",
            "Deleted elements kept because some member could still bring them back.",
            registry=r,
        )
        self.retained = Gauge(
            "noond_retained_peers",
            "Members whose knowledge gates tombstone collection.",
            registry=r,
        )
        self.absent = Gauge(
            "noond_absent_peers", "Members not answering (suspect or dead).", registry=r
        )
        self.absent_seconds = Gauge(
            "noond_peer_absent_seconds",
            "How long each absent member has not answered.",
            ["peer"],
            registry=r,
        )
        self.discovery_errors = Counter(
            "noond_discovery_errors_total",
            "Failed discovery lookups by source.",
            ["source"],
            registry=r,
        )
        self.peer_clock_skew = Gauge(
            "noond_peer_clock_skew_seconds",
            "Each peer's clock minus ours, from the HTTP Date of its last answer (1 s resolution).",
            ["peer"],
            registry=r,
        )
        self.cert_expiry = Gauge(
            "noond_certificate_expiry_timestamp_seconds",
            "Unix time the TLS certificate expires (certificate=node or ca).",
            ["certificate"],
            registry=r,
        )
        self.folds = Counter(
            "noond_readmodel_folds_total",
            "Folds of received ops into the machine's read model by result (current, partial: "
            "a slice of a longer catch-up, behind: the disk is full, fork, failed, unshared: the "
            "read model cannot be written here and is left to the sessions).",
            ["result"],
            registry=r,
        )
        self.fold_seconds = Histogram(
            "noond_readmodel_fold_duration_seconds",
            "Duration of one fold (or slice of a fold) into the read model.",
            registry=r,
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.peer_missing = Gauge(
            "noond_peer_missing_ops",
            "Ops held here that each member has not reported holding (its replication lag).",
            ["peer"],
            registry=r,
        )
