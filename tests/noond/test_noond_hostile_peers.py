"""What a member with a valid certificate may cause on another node (PROTOCOL.md §10): it lies
about our own shard, serves endless or empty pages, floods us with addresses. Each case checks
what was stored and refused, what was counted and logged, and that the honest members kept
converging meanwhile."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from noon.core.ops import decode
from noon.store import serve
from tests.harness.hostile_peer import HostilePeer, Script, SignedFeed, listing, ops_body, page
from tests.harness.mesh import ROOT, Node, Pki, converged, noon_command, wait_until

pytestmark = pytest.mark.integration


def served(history: bytes, after: int, limit: int, head: int) -> web.Response:
    """An honest-looking page of ``history`` beyond ``after``."""
    lines = [raw + b"\n" for raw in history.splitlines() if decode(raw).seq > after]
    body, more = b"", False
    for line in lines:
        if len(body) >= limit:
            more = True
            break
        body += line
    last = decode(body.splitlines()[-1]).seq if body else after
    return page(body, last=last, more=more, head=head)


def cli_env(node: Node) -> dict[str, str]:
    cert, key, ca = node.pki.node(node.name)
    return {
        "NOON_DIR": str(node.dir),
        "NOON_NODE_ID": node.name,
        "NOOND_TLS_CERT": str(cert),
        "NOOND_TLS_KEY": str(key),
        "NOOND_TLS_CA": str(ca),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
    }


def test_a_member_claiming_more_of_our_own_shard_gets_nothing_written(
    spawn: list[Node], tmp_path: Path, pki: Pki, rogue: Callable[[Script], HostilePeer]
):
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]

    def history() -> bytes:
        real = (a.dir / "a.jsonl").read_bytes() if (a.dir / "a.jsonl").exists() else b""
        head = max((decode(r).seq for r in real.splitlines()), default=0)
        return real + ops_body("a", head + 1, 50)

    async def script(request: web.Request) -> web.StreamResponse | None:
        if request.path == "/shards":
            forged = history().splitlines()[-1]
            return listing(("a", decode(forged).seq, serve.digest(forged)))
        if request.path == "/shards/a/ops":
            h = history()
            after = int(request.query.get("after", "0"))
            return served(h, after, int(request.query["limit"]), decode(h.splitlines()[-1]).seq)
        return None

    liar = rogue(script)
    a.start([b, liar.seed])
    b.start([a])
    for i in range(3):
        a.write((f"a{i}", "mine"))
    # A claim pairs the rogue's listing with a's head read after it: an exchange that listed
    # before a's third write shows 52 against 3 until the next one lists 53.
    claims = wait_until(
        lambda: [c for c in a.status().claims if c.peer == "rogue" and (c.seq, c.held) == (53, 3)],
        what="the rogue's claim (50 forged ops past a's 3) to be checked and shown",
    )
    assert not claims[0].confirmed
    assert a.metric("noond_own_shard_behind") == 1
    assert a.metric("noond_rejected_total", 'reason="own_shard_claim"') >= 1
    assert "noon peers recover rogue" in a.log.read_text()
    # Nothing of it reached the own shard, and writing goes on at once from our own head.
    rounds = a.metric("noond_rounds_total")
    wait_until(lambda: a.metric("noond_rounds_total") >= rounds + 3, what="more rounds")
    assert [decode(r).seq for r in (a.dir / "a.jsonl").read_bytes().splitlines()] == [1, 2, 3]
    t0 = time.monotonic()
    a.write(("after", "still mine"))
    assert time.monotonic() - t0 < 5
    assert decode((a.dir / "a.jsonl").read_bytes().splitlines()[-1]).seq == 4
    wait_until(lambda: converged([a, b], expect=4), what="the honest members to converge")


def test_a_confirmed_recovery_takes_only_what_was_claimed_when_confirmed(
    spawn: list[Node], tmp_path: Path, pki: Pki, rogue: Callable[[Script], HostilePeer]
):
    claimed = {"head": 20}
    feed = SignedFeed(pki, "c", text="c's history, kept by the rogue")

    async def script(request: web.Request) -> web.StreamResponse | None:
        history = feed.body(1, claimed["head"])
        if request.path == "/shards":
            last = history.splitlines()[-1]
            return listing(("c", claimed["head"], serve.digest(last)))
        if request.path == "/shards/c/ops":
            after = int(request.query.get("after", "0"))
            return served(history, after, int(request.query["limit"]), claimed["head"])
        return None

    liar = rogue(script)
    c = Node("c", tmp_path, pki)
    spawn.append(c)
    c.start([liar.seed])
    wait_until(lambda: c.status().claims, what="the claim")
    out = noon_command("peers", "recover", "rogue", env=cli_env(c))
    assert out.returncode == 0 and "up to seq 20" in out.stdout, out.stdout + out.stderr
    claimed["head"] = 1000  # raised after the operator confirmed: never taken
    wait_until(lambda: (c.dir / "c.jsonl").exists(), what="the recovery")
    wait_until(
        lambda: [cl.seq for cl in c.status().claims] == [1000],
        what="the recovery to finish and the raised claim to stand alone",
    )
    seqs = [decode(r).seq for r in (c.dir / "c.jsonl").read_bytes().splitlines()]
    assert seqs == list(range(1, 21))
    assert c.metric("noond_ops_recovered_total") == 20


def test_endless_pages_cost_a_bounded_budget_per_round_and_a_bounded_shard(
    spawn: list[Node], tmp_path: Path, pki: Pki, rogue: Callable[[Script], HostilePeer]
):
    feed = SignedFeed(pki, "rogue")

    async def script(request: web.Request) -> web.StreamResponse | None:
        if request.path == "/shards":
            return listing(("rogue", 10**9, 1))
        if request.path == "/shards/rogue/ops":
            after = int(request.query.get("after", "0"))
            body = feed.body(after + 1, 400)
            return page(body, last=after + 400, more=True, head=10**9)
        return None

    liar = rogue(script)
    a, b = Node("a", tmp_path, pki), Node("b", tmp_path, pki)
    spawn += [a, b]
    quota = 1 << 20
    a.start(
        [b, liar.seed],
        NOOND_PULL_BUDGET=str(256 << 10),
        NOOND_MAX_SHARD_BYTES=str(quota),
        NOOND_PAGE_BYTES="65536",
    )
    b.start([a], NOOND_REVOKED="rogue")  # b is not under test here
    wait_until(
        lambda: a.metric("noond_rejected_total", 'reason="quota"') >= 1,
        what="the per-author quota to be reached",
    )
    assert a.metric("noond_rejected_total", 'reason="pull_budget"') >= 1
    size = (a.dir / "rogue.jsonl").stat().st_size
    assert size <= quota + (256 << 10)
    asked = liar.asked_by[("a", "GET /shards/rogue/ops")]
    rounds = a.metric("noond_rounds_total")
    wait_until(lambda: a.metric("noond_rounds_total") >= rounds + 3, what="more rounds")
    assert liar.asked_by[("a", "GET /shards/rogue/ops")] == asked  # nothing more is asked for
    assert (a.dir / "rogue.jsonl").stat().st_size == size
    assert a.proc is not None
    rss_kb = int(
        next(
            line.split()[1]
            for line in Path(f"/proc/{a.proc.pid}/status").read_text().splitlines()
            if line.startswith("VmRSS")
        )
    )
    assert rss_kb < 400_000
    a.write(("honest", "still served"))
    # b revoked the rogue, so it takes none of the rogue's own shard; a's write reaches it.
    wait_until(lambda: ("content", "default", "honest") in b.state(), what="a's write on b")


@pytest.mark.parametrize("last", ["after", "after+1"])
def test_empty_pages_marked_more_are_refused_not_looped_on(
    spawn: list[Node], tmp_path: Path, pki: Pki, rogue: Callable[[Script], HostilePeer], last: str
):
    async def script(request: web.Request) -> web.StreamResponse | None:
        if request.path == "/shards":
            return listing(("rogue", 5, 1))
        if request.path == "/shards/rogue/ops":
            after = int(request.query.get("after", "0"))
            return page(b"", last=after + (last == "after+1"), more=True, head=5)
        return None

    liar = rogue(script)
    a = Node("a", tmp_path, pki)
    spawn.append(a)
    a.start([liar.seed])
    wait_until(lambda: a.metric("noond_exchanges_total", 'result="invalid"') >= 3)
    rounds = a.metric("noond_rounds_total")
    assert liar.asked["GET /shards/rogue/ops"] <= rounds + 2  # one request per exchange, no loop
    assert not (a.dir / "rogue.jsonl").exists()
    assert "empty page" in a.log.read_text() or "ends at seq" in a.log.read_text()


def test_announced_and_gossiped_addresses_are_dialled_within_backoff(
    spawn: list[Node], tmp_path: Path, pki: Pki, rogue: Callable[[Script], HostilePeer]
):
    listeners = []
    for _ in range(20):
        s = socket.socket()
        s.bind(("127.0.0.7", 0))
        s.listen(64)
        s.setblocking(False)
        listeners.append(s)
    ghosts = [{"node": f"ghost{i}", "address": f"127.0.0.8:{10000 + i}"} for i in range(500)]

    async def script(request: web.Request) -> web.StreamResponse | None:
        if request.path == "/membership":
            return web.json_response({"peers": ghosts})
        return None

    liar = rogue(script)
    a = Node("a", tmp_path, pki)
    spawn.append(a)
    a.start([liar.seed])
    wait_until(lambda: a.metric("noond_rejected_total", 'reason="address_flood"') >= 1)
    gossiped = [c for c in a.peers().candidates if c.source == "gossip"]
    assert len(gossiped) <= 64
    # The member now announces one address after another as its own, as fast as it can.
    t0 = time.monotonic()
    for i in range(100):
        port = listeners[i % len(listeners)].getsockname()[1]
        status, _ = a.get(
            "/health", as_node="rogue", headers={"X-Noon-Address": f"127.0.0.7:{port}"}
        )
        assert status == 200
    dials = 0
    while time.monotonic() - t0 < 5:
        for s in listeners:
            try:
                conn, _ = s.accept()
            except BlockingIOError:
                continue
            dials += 1
            conn.close()
        time.sleep(0.05)
    for s in listeners:
        s.close()
    assert dials <= 6, f"{dials} dials to announced addresses in 5 s"
    mine = [c for c in a.peers().candidates if c.node == "rogue"]
    assert len(mine) <= 1
