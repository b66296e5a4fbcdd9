"""Pure parts of the daemon: settings, addresses and seeds, membership liveness and admission
bookkeeping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.config import ConfigError
from noond.config import from_env, parse_address, parse_seeds
from noond.membership import MAX_CANDIDATES, MAX_PER_VOICE, Membership


@pytest.mark.parametrize(
    "raw,want",
    [
        ("host", "host:7707"),
        ("host:1", "host:1"),
        ("10.0.0.1", "10.0.0.1:7707"),
        ("::1", "[::1]:7707"),
        ("[fd7a::2]:9", "[fd7a::2]:9"),
        ("desktop.tail1234.ts.net:7707", "desktop.tail1234.ts.net:7707"),
    ],
)
def test_addresses_are_normalised(raw, want):
    assert parse_address(raw) == want


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "host:0",
        "host:65536",
        "user@host:1",
        "host/path:1",
        "http://host:1",
        "host:1:2",
        "[nope]:1",
    ],
)
def test_addresses_with_anything_else_are_refused(raw):
    with pytest.raises(ValueError):
        parse_address(raw)


@given(st.text(max_size=40))
def test_parse_address_never_returns_something_unsafe(raw):
    try:
        out = parse_address(raw)
    except ValueError:
        return
    assert "/" not in out and "@" not in out and " " not in out


def test_seeds_accept_ids_and_bare_addresses():
    seeds = parse_seeds("a@h1:1, h2  b@[::1]:3", 7707)
    assert [(s.node, s.address) for s in seeds] == [
        ("a", "h1:1"),
        (None, "h2:7707"),
        ("b", "[::1]:3"),
    ]
    with pytest.raises(ValueError):
        parse_seeds("../x@h:1", 7707)


def test_defaults_and_bad_values(tmp_path):
    env = {"NOON_DIR": str(tmp_path), "NOON_NODE_ID": "n"}
    c = from_env(env)
    # Loopback unless told otherwise: nothing beyond this machine can connect by default.
    assert (c.listen_host, c.listen_port, c.interval, c.suspect_after, c.dead_after) == (
        "127.0.0.1",
        7707,
        30.0,
        3,
        6,
    )
    assert c.tls and c.push and c.digest and c.advertise.endswith(":7707")
    assert c.tls_files()[0] == tmp_path / "certs" / "n.crt"
    for bad in (
        {"NOOND_INTERVAL": "soon"},
        {"NOOND_SUSPECT_AFTER": "5", "NOOND_DEAD_AFTER": "2"},
        {"NOOND_LISTEN": "nowhere:99999"},
        {"NOOND_REVOKED": "ok,../bad"},
        {"NOOND_TLS": "maybe"},
        {"NOOND_TLS": "off", "NOOND_LISTEN": "0.0.0.0:1"},
    ):
        with pytest.raises(ConfigError):
            from_env({**env, **bad})
    plain = from_env({**env, "NOOND_TLS": "off", "NOOND_LISTEN": "127.0.0.1:1"})
    assert not plain.tls


def test_liveness_thresholds_and_revival():
    m = Membership("me", suspect_after=2, dead_after=3, dead_retry=10)
    peer = m.admit("p", "h:1")
    assert peer is not None and peer.state == "alive"
    m.failed(peer, now=0)
    assert peer.state == "alive"
    m.failed(peer, now=0)
    assert peer.state == "suspect"
    m.failed(peer, now=0)
    assert peer.state == "dead"
    assert m.contactable(now=0.5) == [] and m.due_probes(now=0.5) == []
    assert m.contactable(now=1) == [peer] == m.due_probes(now=1)  # the first retry: 1 s
    m.heard_from("p")
    assert peer.state == "alive" and peer.failures == 0 and m.due_probes(now=99) == []


def test_a_failing_member_is_probed_after_an_eighth_of_its_outage_within_bounds():
    """A peer back from a 60 s partition is probed within 8 s of its return, one gone for a
    long time every dead_retry seconds, never more often than once a second."""
    m = Membership("me", suspect_after=3, dead_after=6, dead_retry=300)
    peer = m.admit("p", "h:1")
    assert peer is not None
    now = 0.0
    waits = []
    while now < 60:
        m.failed(peer, now=now)
        waits.append(peer.next_try - now)
        now = peer.next_try
    assert waits[0] == 1.0 and all(w >= 1.0 for w in waits)
    assert peer.state == "dead" and waits[-1] <= 60 / 8 + 1
    m.failed(peer, now=86_400.0)
    assert peer.next_try - 86_400.0 == 300  # capped by NOOND_DEAD_RETRY
    m.succeeded(peer)
    assert peer.failures == 0 and peer.failing_since is None and m.due_probes(now=1e9) == []


def test_candidates_are_bounded_back_off_and_never_include_self_or_ignored():
    m = Membership("me", suspect_after=1, dead_after=1, dead_retry=1)
    m.ignore({"bad"})
    m.suggest("h:1", "me", "gossip")
    m.suggest("h:2", "bad", "gossip")
    assert m.candidates == {}
    for i in range(MAX_CANDIDATES + 50):
        m.suggest(f"h{i}:1", None, "dns")
    assert len(m.candidates) == MAX_CANDIDATES
    cand = m.candidates["h0:1"]
    m.candidate_failed(cand, now=100)
    m.candidate_failed(cand, now=100)
    assert cand.next_try == 102
    assert cand not in m.due_candidates(now=101)
    m.suggest("h0:1", "x", "inbound")  # announced, not called from: still backed off
    assert cand not in m.due_candidates(now=101) and cand.node == "x"
    m.suggest("h0:1", "x", "inbound", calling=True)  # it called us from there: due at once
    assert cand in m.due_candidates(now=101)
    assert m.admit("me", "h5:1") is None
    assert "h5:1" in m.self_addresses
    assert m.admit("bad", "h6:1") is None


def test_what_members_say_never_makes_this_node_dial_faster():
    """A member announcing address after address (or gossiping a crowd) gets one pending
    candidate per node id, which keeps its backoff, and a bounded number in all."""
    m = Membership("me", suspect_after=1, dead_after=1, dead_retry=1)
    for i in range(50):
        m.suggest(f"10.0.0.{i}:7707", "mallory", "inbound", via="mallory")
        cand = next(iter(m.candidates.values()))
        if i:
            assert cand.failures == i and cand.next_try > 0  # inherited, never reset
        m.candidate_failed(cand, now=0)
    assert len(m.candidates) == 1
    for i in range(500):
        m.suggest(f"h{i}:1", f"ghost{i}", "gossip", via="mallory")
    assert len(m.candidates) == MAX_PER_VOICE
    m.suggest("seed:1", "honest", "seed")
    assert "seed:1" in m.candidates  # the operator's sources are not capped by a member's
