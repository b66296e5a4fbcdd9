"""A rolling upgrade (PROTOCOL.md §13.5), with real daemons over mTLS: three machines without
signing keys (revision 1, as before signed shards) write history, compact it, and replicate
it; then they are upgraded one at a time (their signing key installed, the daemon restarted)
while the others keep writing. At every step the mesh converges with nothing refused and
nothing lost, and at the end every machine signs, holds every author's checkpoint, and
refuses unsigned lines beyond it."""

from __future__ import annotations

from pathlib import Path

import pytest

from noon import certs
from noon.core.chain import split_sig
from noon.core.ops import Draft, encode
from noon.store import chainstate
from noon.store.compact import compact_dir
from tests.harness.mesh import Node, Pki, converged, start_all, wait_until
from tests.harness.stores import plan_of

pytestmark = pytest.mark.integration

NAMES = ("a", "b", "c")
REFUSALS = ("unproven", "uncertified")


def write(node: Node, round_: int) -> None:
    """Two batches rewriting the same three memories: older versions become droppable."""
    store = node.store()
    for step in range(2):
        store.write(
            plan_of(
                [
                    Draft(("content", "default", f"{node.name}{i}"), {"text": f"r{round_}.{step}"})
                    for i in range(3)
                ]
            )
        )
    store.close()


def refusals(nodes: list[Node]) -> float:
    return sum(n.metric("noond_rejected_total", f'reason="{r}"') for n in nodes for r in REFUSALS)


def expected(rounds: dict[str, int]) -> dict[tuple[str, ...], str]:
    return {
        ("content", "default", f"{name}{i}"): f"r{last}.1"
        for name, last in rounds.items()
        for i in range(3)
    }


def holds(nodes: list[Node], rounds: dict[str, int]) -> bool:
    want = expected(rounds)
    for n in nodes:
        state = {key: val["text"] for key, (_, val) in n.state().items()}
        if state != want:
            return False
    return converged(nodes)


def revisions(node: Node) -> list[int]:
    return list(node.info().revisions)


def test_a_revision_1_mesh_upgraded_one_machine_at_a_time_loses_and_refuses_nothing(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    nodes = {n: Node(n, tmp_path, pki, signs=False) for n in NAMES}
    spawn += list(nodes.values())
    mesh = list(nodes.values())
    start_all(*((node, [m for m in mesh if m is not node]) for node in mesh))
    assert all(revisions(n) == [1, 1] for n in mesh)
    rounds = dict.fromkeys(NAMES, 0)
    for node in mesh:
        write(node, 0)
    wait_until(lambda: holds(mesh, rounds), what="the revision-1 mesh to converge", timeout=60)
    # History with gaps, the honest way: each author compacts its own shard (superseded
    # versions go, without stubs: nothing is signed), and c compacts its replicas too, so
    # b and c hold lines a no longer holds, and c holds fewer of b's than b does.
    for node in mesh:
        own = [f"{node.name}.jsonl"] if node.name != "c" else [f"{n}.jsonl" for n in NAMES]
        assert any(r.dropped for r in compact_dir(node.dir, own, history=0))
    for name in NAMES:
        assert b'"sig":' not in (nodes[name].dir / f"{name}.jsonl").read_bytes()
    assert refusals(mesh) == 0

    for step, name in enumerate(NAMES, 1):
        node = nodes[name]
        node.stop()
        node.signs = True
        node.start([m for m in mesh if m is not node])
        assert revisions(node) == [1, 2]
        for writer in mesh:
            rounds[writer.name] = step
            write(writer, step)
        wait_until(
            lambda: holds(mesh, rounds),
            what=f"the mesh to converge with {name} upgraded",
            timeout=90,
        )
        assert refusals(mesh) == 0, [n.log.read_text()[-3000:] for n in mesh]

    # Fully signed: every machine's own shard ends on a signed line and chains over its whole
    # history through its checkpoint; every machine holds and proves every author's copy.
    for name in NAMES:
        shard = nodes[name].dir / f"{name}.jsonl"
        assert split_sig(shard.read_bytes().splitlines()[-1])[1] is not None
        for holder in mesh:
            assert chainstate.checkpoint(holder.dir, name) is not None, (holder.name, name)
            head = chainstate.walk(holder.dir / f"{name}.jsonl", name)
            assert head.chain is not None and head.proven, (holder.name, name, head)


def test_after_the_upgrade_unsigned_lines_are_taken_only_as_the_checkpoint_covers(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    """A member that has its signing key cannot be downgraded: an unsigned push of lines its
    checkpoint does not cover is refused (400 unproven) and nothing is stored."""
    a = Node("a", tmp_path, pki, signs=False)
    write(a, 0)
    a.signs = True
    c = Node("c", tmp_path, pki)
    spawn += [a, c]
    start_all((a, [c]), (c, [a]))
    wait_until(lambda: holds([a, c], {"a": 0}), what="c to take a's history", timeout=60)
    assert chainstate.checkpoint(c.dir, "a") is not None
    held = (c.dir / "a.jsonl").read_bytes()
    # What a member might try: an unsigned line past the checkpoint, claiming revision 1.
    head = chainstate.walk(c.dir / "a.jsonl", "a").seq
    line = encode(
        node="a",
        seq=head + 1,
        hlc=(1_900_000_000_000 << 16),
        el=("content", "default", "a0"),
        val={"text": "unsigned, after a signed its checkpoint"},
    )
    status, _, raw = c.request(
        "POST",
        f"/shards/a/ops?after={head}",
        line + b"\n",
        as_node="a",
        headers={"X-Noon-Protocol": "1"},
    )
    assert status == 400 and b"unproven" in raw, raw
    assert (c.dir / "a.jsonl").read_bytes() == held
    assert c.metric("noond_rejected_total", 'reason="unproven"') >= 1


def test_a_rotated_signing_key_is_fetched_and_old_batches_still_verify(
    spawn: list[Node], tmp_path: Path, pki: Pki
):
    """``noon certs sign NODE --force`` gives a node a new signing key, same node id, history
    kept: a peer holding only the old certificate fetches the new one when the first batch
    signed with it does not verify, and a node joining later proves the old batches and the
    new ones alike; nothing is refused anywhere."""
    a, c = Node("a", tmp_path, pki), Node("c", tmp_path, pki)
    spawn += [a, c]
    start_all((a, [c]), (c, [a]))
    write(a, 0)
    wait_until(lambda: holds([a, c], {"a": 0}), what="c to take a's history", timeout=60)
    a.stop()
    old = (a.dir / "certs" / "a.signing.crt").read_bytes()
    certs.issue_signing_cert(pki.root / "ca", "a", a.dir / "certs", force=True)
    assert (a.dir / "certs" / "a.signing.crt").read_bytes() != old
    a.start([c])
    write(a, 1)
    wait_until(lambda: holds([a, c], {"a": 1}), what="c to take a's newly signed batches")
    assert len(c.get("/signers/a")[1]["certs"]) == 2
    d = Node("d", tmp_path, pki)
    spawn.append(d)
    d.start([c])
    wait_until(lambda: holds([a, c, d], {"a": 1}), what="d to take a's whole history from c")
    assert refusals([a, c, d]) == 0
