"""A relay that lies about what other machines wrote (PROTOCOL.md §13): a real daemon ``a``
pulls from a hostile member that serves, for authors the CA certified, forged, reordered,
moved, truncated, spliced, replayed and wrongly signed histories, and shards of authors the CA
never certified. Each is refused with nothing stored, counted and logged at a bounded rate,
while ``a`` keeps exchanging with an honest member ``c`` and takes a genuine relayed shard."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from noon import certs
from noon.config import Settings
from noon.core import checkpoint
from noon.core.chain import split_sig
from noon.core.ops import Draft
from noon.store import serve
from noon.store.lines import envelope
from noon.store.store import Store
from tests.harness import signed
from tests.harness.hostile_peer import HostilePeer, listing, page
from tests.harness.mesh import Node, Pki, wait_until
from tests.harness.stores import plan_of

pytestmark = pytest.mark.integration


def history(
    pki: Pki, root: Path, node: str, batches: list[list[str]], tag: str = ""
) -> list[bytes]:
    """``node``'s genuine signed lines, written by a real store: one batch per list."""
    directory = root / f"{node}{tag}"
    store = Store(
        Settings(dir=directory, node_id=node, fsync=False, signing_key=pki.signing(node)[0])
    )
    for texts in batches:
        store.write(
            plan_of(
                [Draft(("content", "default", f"{node}-{t}"), {"text": f"{t}{tag}"}) for t in texts]
            )
        )
    store.close()
    return (directory / f"{node}.jsonl").read_bytes().splitlines()


def edit(line: bytes, **fields: object) -> bytes:
    """A line with fields changed, its signature kept (what a relay can do)."""
    obj = orjson.loads(line)
    obj.update(fields)
    return orjson.dumps(obj)


def seq_of(line: bytes) -> int:
    env = envelope(line)
    assert env is not None
    return env.seq


class Relay:
    """What the hostile member serves: shards by author, and which signing certificates."""

    def __init__(self, pki: Pki) -> None:
        self.pki = pki
        self.shards: dict[str, list[bytes]] = {}
        self.certs: dict[str, Callable[[], list[str]]] = {}
        self.checkpoints: dict[str, list[str]] = {}
        self.revocations: list[str] = []

    async def __call__(self, request: web.Request) -> web.StreamResponse | None:
        if request.path == "/shards":
            return listing(
                *((n, seq_of(ls[-1]), serve.digest(ls[-1])) for n, ls in self.shards.items())
            )
        if request.path == "/shards/digest" and self.revocations:
            return web.json_response({"root": "x", "shards": 0, "members": "", "revocations": "x"})
        if request.path == "/revocations":
            return web.json_response({"records": self.revocations})
        if request.path.startswith("/signers/"):
            node = request.path.removeprefix("/signers/")
            pems = self.certs[node]() if node in self.certs else [self._cert(node)]
            if not pems:
                return web.json_response({"error": "none", "code": "not_found"}, status=404)
            found = self.checkpoints.get(node, [])
            return web.json_response({"node": node, "certs": pems, "checkpoints": found})
        if request.path.startswith("/shards/") and request.path.endswith("/ops"):
            node = request.path.split("/")[2]
            after = int(request.query.get("after", "0"))
            lines = [ln for ln in self.shards.get(node, []) if seq_of(ln) > after]
            last = seq_of(lines[-1]) if lines else after
            return page(signed.body(lines), last=last, more=False, head=last)
        return None

    def _cert(self, node: str) -> str:
        return self.pki.signing(node)[1].read_text()


@pytest.fixture
def mesh(spawn: list[Node], tmp_path: Path, pki: Pki) -> Iterator[tuple[Node, Node, Relay]]:
    relay = Relay(pki)
    rogue = HostilePeer(pki, script=relay)
    a, c = Node("a", tmp_path, pki), Node("c", tmp_path, pki)
    spawn += [a, c]
    a.start([c, rogue.seed])
    c.start([a])
    yield a, c, relay
    rogue.close()


def test_every_lie_of_a_relay_is_refused_and_honest_members_are_served(mesh, tmp_path, pki):
    a, c, relay = mesh
    root = tmp_path / "authors"
    # A genuine shard relayed by the rogue is taken whole (the relay is not its author).
    relay.shards["honest"] = history(pki, root, "honest", [["h1", "h2"], ["h3"]])
    wait_until(lambda: (a.dir / "honest.jsonl").exists(), what="the genuine relayed shard")

    two_batches = [["x", "y"], ["z", "w"]]
    forged = history(pki, root, "forged", two_batches)
    forged[1] = edit(forged[1], val={"text": "what forged never wrote"})
    reordered = history(pki, root, "reordered", two_batches)
    first, second = orjson.loads(reordered[0]), orjson.loads(reordered[1])
    reordered[0] = edit(reordered[0], el=second["el"], val=second["val"])
    reordered[1] = edit(reordered[1], el=first["el"], val=first["val"])
    moved = history(pki, root, "moved", two_batches)
    moved[1] = edit(moved[1], bat=4)  # op 2 taken into the second batch
    truncated = history(pki, root, "truncated", [["x", "y", "z"]])
    del truncated[1]  # a batch served without its middle op
    spliced = history(pki, root, "spliced", two_batches)[:2]
    spliced += history(pki, root, "spliced", two_batches, tag="-other")[2:]
    replayed = history(pki, root, "replayed", [["x"], ["y"]])
    replayed.append(edit(replayed[0], seq=3))  # the first batch again, as seq 3
    genuine = history(pki, root, "otherkey", [["x"]])
    other_key = signed.signed(pki, "otherkey", [_unsigned(ln) for ln in genuine], key_node="c")
    lies = {
        "forged": forged,
        "reordered": reordered,
        "moved": moved,
        "truncated": truncated,
        "spliced": spliced,
        "replayed": replayed,
        "otherkey": other_key,
    }
    # Authors the CA never certified: one offered with another CA's certificate, one with none.
    foreign_key, foreign_cert = _foreign_signing(pki, "ghost")
    ghost_lines = [_unsigned(ln) for ln in history(pki, root, "ghost", [["g"]])]
    ghost = signed.sign_lines(signed.key_of(foreign_key), "ghost", ghost_lines)
    relay.certs["ghost"] = lambda: [foreign_cert.read_text()]
    relay.certs["nobody"] = lambda: []
    nobody = history(pki, root, "nobody", [["n"]])
    t0 = time.monotonic()
    relay.shards.update(lies, ghost=ghost, nobody=nobody)

    wait_until(
        lambda: (
            a.metric("noond_rejected_total", 'reason="unproven"') >= 2 * len(lies)
            and a.metric("noond_rejected_total", 'reason="uncertified"') >= 2
        ),
        what="every lie to be refused (twice: the relay keeps trying)",
    )
    # Meanwhile the honest member is served both ways.
    c.write(("during", "the attack"))
    a.write(("also", "during the attack"))
    wait_until(
        lambda: (
            ("content", "default", "during") in a.state()
            and ("content", "default", "also") in c.state()
        ),
        what="a and c to exchange while the rogue lies",
    )
    assert time.monotonic() - t0 < 60
    # Nothing of any lie was stored, anywhere on a; the genuine shard is whole.
    for node in [*lies, "ghost", "nobody"]:
        assert not (a.dir / f"{node}.jsonl").exists(), node
        assert not (c.dir / f"{node}.jsonl").exists(), node
    assert [seq_of(ln) for ln in (a.dir / "honest.jsonl").read_bytes().splitlines()] == [1, 2, 3]
    state = a.state()
    assert not any(key[2].startswith(tuple(lies)) for key in state)
    log = a.log.read_text()
    for node in lies:
        assert f"ops of {node} that are not proven, nothing stored" in log, node
    assert "signature does not verify" in log and "gap nothing covers" in log
    assert "no signing certificate of ghost by this CA" in log
    assert "no signing certificate of nobody by this CA" in log
    assert "offered a signing certificate for ghost" in log  # the foreign CA's
    # Logged at a bounded rate: the relay keeps trying every round, the log does not grow so.
    refused = a.metric("noond_rejected_total", 'reason="unproven"')
    lines = log.count("that are not proven, nothing stored")
    wait_until(
        lambda: a.metric("noond_rejected_total", 'reason="unproven"') >= refused + 3 * 20,
        what="more refusals than one window of the log's rate limit",
        timeout=60,
    )
    grown = a.log.read_text().count("that are not proven, nothing stored") - lines
    assert grown <= 2 * 20, grown  # at most a burst per minute (the window may have turned)


def _unsigned(line: bytes) -> bytes:
    return split_sig(line)[0]


def _foreign_signing(pki: Pki, node: str) -> tuple[Path, Path]:
    pki.foreign(node)
    out = pki.root / "foreign" / "out"
    return out / f"{node}.signing.key", out / f"{node}.signing.crt"


def test_a_push_is_stored_only_as_its_author_signed_it(mesh, tmp_path, pki):
    """A member pushing its own shard: forged lines, or lines signed with another node's key,
    answer 400 unproven and store nothing; its genuine lines are stored."""
    a, _c, _relay = mesh  # a learns rogue's signing certificate from rogue itself
    genuine = history(pki, tmp_path / "authors", "rogue", [["r1", "r2"], ["r3"]])
    forged = list(genuine)
    forged[2] = edit(forged[2], val={"text": "not what rogue signed"})
    status, _, raw = a.request(
        "POST", "/shards/rogue/ops?after=0", signed.body(forged), as_node="rogue"
    )
    assert status == 400 and orjson.loads(raw)["code"] == "unproven", raw
    stolen = signed.signed(pki, "rogue", [_unsigned(ln) for ln in genuine], key_node="c")
    status, _, raw = a.request(
        "POST", "/shards/rogue/ops?after=0", signed.body(stolen), as_node="rogue"
    )
    assert status == 400 and b"does not verify" in raw, raw
    assert not (a.dir / "rogue.jsonl").exists() or (a.dir / "rogue.jsonl").read_bytes() == b""
    status, _, raw = a.request(
        "POST", "/shards/rogue/ops?after=0", signed.body(genuine), as_node="rogue"
    )
    assert status == 200 and orjson.loads(raw)["appended"] == 3, raw
    assert a.metric("noond_rejected_total", 'reason="unproven"') >= 2


def test_a_revoked_author_and_abused_checkpoints_are_refused(mesh, tmp_path, pki):
    """A revocation signed by the CA reaches ``a`` from the honest member ``c``; then the
    rogue serves the revoked author's ops stamped after its cut-off, a revocation by another
    CA, an author's unsigned history with a line its checkpoint does not cover, and a
    checkpoint signed with another node's key. Each is refused with nothing stored, counted
    and logged; ``a`` and ``c`` keep exchanging."""
    a, c, relay = mesh
    root = tmp_path / "authors"
    late = history(pki, root, "late", [["l1"], ["l2"], ["l3"]])
    cut = orjson.loads(late[1])["hlc"]
    record = certs.revoke(pki.root / "ca", "late", cut, int(time.time() * 1000))
    target = c.dir / ".noon" / "revocations.jsonl"
    target.write_bytes(record.encode() + b"\n")
    wait_until(
        lambda: a.get("/revocations")[1]["records"] == [record.encode().decode()],
        what="the CA's revocation to reach a through c",
    )
    # A revocation of an honest author by another CA: refused, and it revokes nothing.
    pki.foreign("honest")
    evil = certs.revoke(pki.root / "foreign" / "ca", "honest", 0, 0)
    relay.revocations = [evil.encode().decode()]
    # Unsigned history: its author signed a checkpoint over lines 1 and 3 only.
    key = signed.key_of(pki.signing("old")[0])
    unsigned = [_unsigned(ln) for ln in history(pki, root, "old", [["o1"], ["o2"], ["o3"]])]
    cp = checkpoint.make("old", [(1, unsigned[0]), (3, unsigned[2])], key)
    relay.checkpoints["old"] = [cp.encode().decode()]
    relay.shards.update(late=late, old=unsigned)
    # A checkpoint of "forgedcp" signed with c's key, over lines it never wrote.
    fake = [_unsigned(ln) for ln in history(pki, root, "forgedcp", [["f"]])]
    relay.checkpoints["forgedcp"] = [
        checkpoint.make("forgedcp", [(1, fake[0])], signed.key_of(pki.signing("c")[0]))
        .encode()
        .decode()
    ]
    relay.shards["forgedcp"] = fake
    wait_until(
        lambda: (
            a.metric("noond_rejected_total", 'reason="revoked"') >= 2
            and a.metric("noond_rejected_total", 'reason="revocation"') >= 1
        ),
        what="the revoked author's late ops and the foreign revocation to be refused",
    )
    wait_until(
        lambda: (
            "offered a checkpoint of forgedcp" in a.log.read_text()
            and "does not cover" in a.log.read_text()
        ),
        what="the abused checkpoints to be refused",
    )
    c.write(("still", "served"))
    wait_until(lambda: ("content", "default", "still") in a.state(), what="c to be served")
    # Nothing stored: not the late ops, not the uncovered line, not the forged history.
    for node in ("late", "old", "forgedcp"):
        assert not (a.dir / f"{node}.jsonl").exists(), node
    assert a.get("/revocations")[1]["records"] == [record.encode().decode()]
    assert not (a.dir / ".noon" / "forgedcp.checkpoint").exists()
    log = a.log.read_text()
    assert "stamped after its revocation by the CA" in log
    assert "offered a revocation that is not the CA's" in log
    assert "is unsigned history its author's checkpoint (up to seq 3) does not cover" in log
