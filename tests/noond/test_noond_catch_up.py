"""A fresh node catching up more than one exchange may take (PROTOCOL.md §4): the next exchange
follows the one its pull budget cut short at once, not at the next round, and pages are asked
one ahead of the one being stored; a member that answers one page and stalls the next is still
cut off at the request's bound, and what it served before is kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from bench.noond_mesh import shard_sizes, signed_store
from tests.harness.hostile_peer import HostilePeer, Script, SignedFeed, listing, page
from tests.harness.mesh import Node, Pki, wait_until

pytestmark = pytest.mark.integration

BUDGET = 64 << 10
"""The smallest pull budget noond takes (NOOND_PULL_BUDGET)."""


def test_a_catch_up_longer_than_one_exchange_goes_on_without_waiting_for_a_round(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    src = Node("src", tmp_path, pki)
    spawn.append(src)
    want = signed_store(src.dir, pki, 4000)
    assert sum(want.values()) > 8 * BUDGET  # many exchanges' worth
    fresh = Node("fresh", tmp_path, pki)
    spawn.append(fresh)
    # Rounds an hour apart: after the first (and the exchange admission starts), only an
    # exchange following the one before can take the rest.
    src.start([fresh], NOOND_INTERVAL="3600", NOOND_FOLD="false")
    fresh.start(
        [src],
        NOOND_INTERVAL="3600",
        NOOND_FOLD="false",
        NOOND_PULL_BUDGET=str(BUDGET),
        NOOND_PAGE_BYTES="16384",
    )
    wait_until(lambda: shard_sizes(fresh.dir) == want, timeout=300, what="every shard pulled")
    for name in want:
        assert (fresh.dir / name).read_bytes() == (src.dir / name).read_bytes()
    assert fresh.metric("noond_rounds_total") == 1
    # An exchange takes its budget and the page that crossed it (16 KiB and a batch) at most.
    followed = fresh.metric("noond_exchanges_followed_total")
    assert followed >= sum(want.values()) // (2 * BUDGET)
    assert fresh.metric("noond_rejected_total", 'reason="pull_budget"') >= followed
    assert fresh.metric("noond_exchanges_total", 'result="ok"') >= followed + 1


def test_a_member_that_serves_one_page_and_stalls_the_next_is_cut_off_at_the_bound(
    spawn: list[Node], tmp_path: Path, pki: Pki, rogue: Callable[[Script], HostilePeer]
):
    feed = SignedFeed(pki, "rogue")
    first = 50

    async def script(request: web.Request) -> web.StreamResponse | None:
        if request.path == "/shards":
            return listing(("rogue", 1000, 1))
        if request.path == "/shards/rogue/ops":
            if request.query.get("after", "0") == "0":
                return page(feed.body(1, first), last=first, more=True, head=1000)
            await liar.stall()  # the page asked ahead never comes
        return None

    liar = rogue(script)
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]
    a.start([b, liar.seed])  # NOOND_TIMEOUT 3: a request that reads nothing ends after 3 s
    b.start([a])
    shard = a.dir / "rogue.jsonl"

    def first_page_kept() -> bool:
        return shard.exists() and len(shard.read_bytes().splitlines()) == first

    wait_until(first_page_kept, what="the rogue's first page stored")
    wait_until(
        lambda: a.metric("noond_exchanges_total", 'result="unreachable"') >= 1,
        what="the stalled exchange cut off",
    )
    asked = liar.asked_by[("a", "GET /shards/rogue/ops")]
    assert asked >= 2  # the page after the first was asked for, and never came
    b.write(("honest", "served meanwhile"))
    wait_until(lambda: ("content", "default", "honest") in a.state(), what="b's write on a")
    assert len(shard.read_bytes().splitlines()) == first
    # A stalled page is no progress: nothing follows at once, the rogue waits for its backoff.
    assert a.metric("noond_exchanges_followed_total") == 0
    assert liar.asked_by[("a", "GET /shards/rogue/ops")] <= asked + 3
