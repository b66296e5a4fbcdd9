"""What noond's client does with a peer's typed answers (noon/daemon_link/bodies.py): a
malformed body fails that exchange only, naming the field, and the same peer answering honestly
is served at once; a peer's range of protocol revisions is met at the highest common one, or
refused naming both ranges."""

from __future__ import annotations

import asyncio

import pytest

from noond.client import PeerError
from tests.harness.fake_peer import (
    FakePeer,
    Request,
    Route,
    json_reply,
    local_node,
    seqs,
    write_texts_of,
)


def test_a_peers_malformed_digest_fails_that_exchange_only(dirs):
    """The daemon's client: the refusal names the field, nothing is taken from the answer, and
    the same peer answering honestly next is served at once."""
    a, b = dirs
    write_texts_of(b, "b", "one", "two")
    peer = FakePeer("b", b)
    local = local_node(a, "a", peer)

    async def hostile(req: Request):
        return json_reply({"root": ["x"], "shards": 2, "members": ""})

    peer.routes["GET /shards/digest"] = hostile
    asyncio.run(local.exchanger.exchange(local.member))
    assert local.sample("noond_exchanges_total", result="invalid") == 1
    assert "/shards/digest: 'root' must be a string" in local.member.error
    assert local.member.state == "alive"
    assert seqs(a / "b.jsonl") == []
    assert [r.path for r in peer.requests] == ["/shards/digest"]
    del peer.routes["GET /shards/digest"]
    asyncio.run(local.exchanger.exchange(local.member))
    assert local.sample("noond_exchanges_total", result="ok") == 1
    assert seqs(a / "b.jsonl") == [1, 2]


def _info(revisions: list[int]) -> Route:
    async def answer(req: Request):
        return json_reply(
            {"node": "b", "protocol": revisions[1], "revisions": revisions, "capabilities": []}
        )

    return answer


def test_a_peer_speaking_a_wider_range_is_spoken_to_at_the_highest_common_revision(dirs):
    a, b = dirs
    peer = FakePeer("b", b, routes={"GET /info": _info([2, 3])})
    client = local_node(a, "a", peer).exchanger.client
    info, node = asyncio.run(client.info("fake:1", expect="b"))
    assert (node, info.revisions, client.revision["b"]) == ("b", (2, 3), 2)
    asyncio.run(client.digest("fake:1", expect="b"))
    # Asked first at this node's lowest revision (every node of a range takes it), then at
    # the highest both speak.
    said = [(r.path, r.headers["X-Noon-Protocol"]) for r in peer.requests]
    assert said == [("/info", "1"), ("/shards/digest", "2")]


def test_a_peer_with_no_revision_in_common_is_refused_naming_both_ranges(dirs):
    a, b = dirs
    peer = FakePeer("b", b, routes={"GET /info": _info([3, 4])})
    client = local_node(a, "a", peer).exchanger.client
    with pytest.raises(PeerError) as refused:
        asyncio.run(client.info("fake:1", expect="b"))
    assert refused.value.code == "protocol"
    assert str(refused.value) == (
        "fake:1 (b) speaks protocol revisions 3..4; this node speaks 1..2. Upgrade the older one."
    )
    assert "b" not in client.revision
