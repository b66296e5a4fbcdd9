"""noond's JSON bodies as typed messages (noon/daemon_link/bodies.py): what a daemon sends reads
back as the same message; a body of a release before a field still reads; a hostile body (too
deep, too large, a field of the wrong type) is one clear refusal at a bounded cost, in the
commands that ask the local daemon, and the honest answer is read right after it. What noond's
own client does with such a body is in tests/noond/test_noond_peer_answers.py."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.config import Settings
from noon.daemon_link import api as daemon_api
from noon.daemon_link import bodies
from noon.daemon_link.message import BodyError
from tests.harness.mesh import ROOT

nodes = st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True)
counts = st.integers(0, 1 << 40)
times = st.one_of(st.none(), st.floats(0, 4e9, allow_nan=False))
words = st.text(max_size=40)
heads = st.dictionaries(nodes, counts, max_size=4)

claims = st.builds(
    bodies.Claim,
    peer=nodes,
    shard=nodes,
    seq=counts,
    digest=st.from_regex(r"[0-9a-f]{16}", fullmatch=True),
    held=counts,
    confirmed=st.booleans(),
)
kept = st.builds(
    bodies.Kept,
    element=st.lists(words, max_size=3).map(tuple),
    member=nodes,
    reason=words,
    since=times,
)
collections = st.one_of(
    st.just(bodies.Collection()),
    st.builds(
        bodies.Collection,
        ran=st.just(True),
        collected=counts,
        removed_ops=counts,
        frozen=counts,
        kept=st.lists(kept, max_size=3).map(tuple),
    ),
)
relay_stats = st.builds(
    bodies.RelayStats,
    reachable=st.one_of(st.none(), st.booleans()),
    error=words,
    last_upload=times,
    last_read=times,
    bytes_up=counts,
    bytes_down=counts,
    requests=counts,
    lag_ops=counts,
    backlog_ops=counts,
    refused=counts,
)
relays = st.builds(bodies.RelayReport, url=words, stats=relay_stats, uploaded=heads, head=heads)
statuses = st.builds(
    bodies.Status,
    node=nodes,
    protocol=st.integers(1, 2),
    uptime_seconds=st.floats(0, 1e9, allow_nan=False),
    shards=counts,
    own_seq=counts,
    behind=st.booleans(),
    claims=st.lists(claims, max_size=3).map(tuple),
    peers=st.builds(bodies.PeerCounts, alive=counts, suspect=counts, dead=counts),
    candidates=counts,
    forks=st.lists(st.builds(bodies.Fork, peer=nodes, shard=nodes, error=words), max_size=2).map(
        tuple
    ),
    rounds=counts,
    collection=collections,
    relays=st.lists(relays, max_size=2).map(tuple),
)
peer_lists = st.builds(
    bodies.Peers,
    peers=st.lists(
        st.builds(
            bodies.PeerEntry,
            node=nodes,
            address=words,
            state=st.sampled_from(["alive", "suspect", "dead"]),
            failures=counts,
            last_ok=st.floats(0, 4e9, allow_nan=False),
            error=words,
            heads=heads,
            reported_at=times,
        ),
        max_size=3,
    ).map(tuple),
    candidates=st.lists(
        st.builds(
            bodies.CandidateEntry,
            address=words,
            node=st.one_of(st.none(), nodes),
            source=st.sampled_from(["seed", "gossip", "inbound"]),
            failures=counts,
        ),
        max_size=3,
    ).map(tuple),
    revoked=st.lists(nodes, max_size=2).map(tuple),
    departed=st.lists(nodes, max_size=2).map(tuple),
)
infos = st.builds(
    bodies.Info,
    node=nodes,
    address=words,
    protocol=st.integers(1, 2),
    revisions=st.tuples(st.integers(1, 3), st.integers(0, 3)).map(lambda p: (p[0], p[0] + p[1])),
    capabilities=st.lists(words, max_size=4).map(tuple),
)


@given(st.one_of(statuses, peer_lists, infos))
def test_what_a_daemon_sends_reads_back_as_the_same_message(message):
    raw = orjson.dumps(message.to_json())
    assert bodies.decode(raw, type(message), "test") == message
    assert orjson.dumps(bodies.decode(raw, type(message), "test").to_json()) == raw


def test_bodies_of_a_release_before_ranges_relays_and_revocations_still_read():
    info = bodies.decode(
        b'{"node":"old","address":"10.0.0.2:7707","protocol":1,"capabilities":["digest"],'
        b'"software":"noond","someday":{"a":1}}',
        bodies.Info,
        "/info",
    )
    assert info.revisions == (1, 1) and info.capabilities == ("digest",)
    digest = bodies.decode(b'{"root":"ab","shards":2,"members":"cd"}', bodies.Digest, "digest")
    assert digest.revocations == ""


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b'{"node":"b","protocol":"2","revisions":[1,2]}', "'protocol' must be an integer"),
        (b'{"node":"b","protocol":2,"revisions":[2]}', "'revisions' must be [lowest, highest]"),
        (b'{"node":"b","protocol":2,"revisions":[3,2]}', "'revisions' 3..2 is an empty range"),
        (b'{"node":"../etc","protocol":2}', "'node' is not a node id"),
        (b'{"node":"b","protocol":2,"capabilities":[1]}', "'capabilities' must be a list of"),
        (b"[" * 5000 + b"]" * 5000, "not JSON"),
        (b'["node"]', "not a JSON object"),
    ],
)
def test_a_malformed_info_is_one_error_naming_what_is_wrong(body, named):
    with pytest.raises(BodyError, match="^/info: .*" + named.replace("[", r"\[")):
        bodies.decode(body, bodies.Info, "/info")


def test_a_hostile_body_costs_a_bounded_time_and_says_why():
    deep = b'{"root":' + b"[" * (3 << 20) + b"]" * (3 << 20) + b"}"
    huge = b'{"root":"' + b"x" * (bodies.MAX_BODY + 1) + b'"}'
    wide = orjson.dumps({"peers": [{}] * (bodies.MAX_ITEMS + 1), "candidates": []})
    for raw, kind, why in [
        (deep, bodies.Digest, "depth"),
        (huge, bodies.Digest, "more than the"),
        (wide, bodies.Peers, "a list of at most 100000 items"),
    ]:
        started = time.monotonic()
        with pytest.raises(BodyError, match=why):
            bodies.decode(raw, kind, "hostile")
        assert time.monotonic() - started < 5


@pytest.fixture
def daemon_answering() -> Iterator[dict[str, bytes]]:
    """A loopback HTTP server answering each path with the bytes the test puts in the dict."""
    answers: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = answers.get(self.path, b"{}")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    answers["url"] = f"http://127.0.0.1:{server.server_address[1]}".encode()
    yield answers
    server.shutdown()
    thread.join(10)


def test_the_commands_refuse_a_hostile_status_with_one_clear_error(daemon_answering, tmp_path):
    """``noon status`` and ``noon doctor`` read /status through the same message: a body nested
    beyond the parser's bound was a RecursionError out of ``json.loads``; now it is a
    :class:`~noon.daemon_link.api.BadAnswer`, which every command already reports."""
    settings = Settings(dir=tmp_path, node_id="a", fsync=False)
    url = daemon_answering["url"].decode()
    daemon_answering["/status"] = b'{"node":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(daemon_api.BadAnswer, match="/status: the answer is not a JSON object"):
        daemon_api.get(url, "/status", bodies.Status, settings)
    daemon_answering["/status"] = b'{"node":"a","protocol":2,"uptime_seconds":-1}'
    with pytest.raises(daemon_api.BadAnswer, match="/status: 'uptime_seconds' must be a number"):
        daemon_api.get(url, "/status", bodies.Status, settings)
    daemon_answering["/peers"] = b'{"peers":[{"node":"b","address":7}]}'
    with pytest.raises(daemon_api.BadAnswer, match=r"/peers peers\[0\]: 'address' must be"):
        daemon_api.get(url, "/peers", bodies.Peers, settings)
    honest = bodies.Peers(
        peers=(bodies.PeerEntry("b", "127.0.0.1:2", "alive"),),
        candidates=(),
        revoked=(),
        departed=("c",),
    )
    daemon_answering["/peers"] = orjson.dumps(honest.to_json())
    assert daemon_api.get(url, "/peers", bodies.Peers, settings) == honest


def _keys(obj: object) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() if isinstance(v, dict | list) for k in _keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in _keys(v)}
    return set()


def test_a_relay_report_sends_each_count_of_the_link_as_a_field_of_its_own():
    """One definition of a relay's counts (bodies.RelayStats, which noond's link keeps): the
    report sends each at its top level, as the wire always had them."""
    sent = bodies.RelayReport("file:///r").to_json()
    counted = {f.name for f in dataclasses.fields(bodies.RelayStats)}
    assert set(sent) == {"url", "uploaded", "head"} | counted
    assert len(counted) == 10


def test_protocol_md_lists_every_field_the_messages_send():
    """PROTOCOL.md §3's route table names exactly the fields of each message (heads, uploaded
    and head are objects keyed by shard, not fields)."""
    relay = bodies.RelayReport("file:///r", uploaded={"a": 1}, head={"a": 1})
    kept = bodies.Kept(("content", "default", "x"), "b", "lacks a:3", 1.0)
    status = bodies.Status(
        node="a",
        protocol=2,
        uptime_seconds=1.0,
        shards=1,
        own_seq=1,
        behind=False,
        claims=(bodies.Claim("b", "a", 3, "00" * 8, 1, False),),
        peers=bodies.PeerCounts(),
        candidates=0,
        forks=(bodies.Fork("b", "a", "differs"),),
        rounds=1,
        collection=bodies.Collection(True, 1, 1, 1, (kept,)),
        relays=(relay,),
    )
    peers = bodies.Peers(
        peers=(bodies.PeerEntry("b", "h:1", "alive", heads={"a": 1}),),
        candidates=(bodies.CandidateEntry("h:2", None, "seed", 0),),
        revoked=(),
        departed=(),
    )
    info = bodies.Info("a", "h:1", 2, (1, 2), ("digest",))
    digest = bodies.Digest("r", 1, "m", "v")
    table = (ROOT / "PROTOCOL.md").read_text().split("## 3. Routes")[1].split("### 3.1")[0]
    messages: list[tuple[str, bodies.Status | bodies.Peers | bodies.Info | bodies.Digest]] = [
        ("/status", status),
        ("/peers", peers),
        ("/info", info),
        ("/shards/digest", digest),
    ]
    for route, message in messages:
        row = next(line for line in table.splitlines() if line.startswith(f"| GET | `{route}` |"))
        answer = row.split("|")[3].split("`;")[0].split("` (")[0]
        named = set(re.findall(r'"([a-z_]+)"', answer))
        sent = _keys(message.to_json()) - {"a"}
        assert named == sent, route
