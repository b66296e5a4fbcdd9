"""Asking a member for an author's signing certificate and checkpoint (PROTOCOL.md §13.2,
§13.5), in process against a fake member: a signer becomes known here only together with the
checkpoint it came with, so a push or a stream frame checked while the ask is under way never
verifies the author's first signed lines against a chain the checkpoint would have moved.

This is the rolling upgrade's stream refusal: an exchange's ask had kept a just-upgraded
author's certificate and was still adopting its checkpoint when a frame of the author's first
signed lines arrived; the frame was checked with the certificate but without the checkpoint,
did not verify, and was refused as ``unproven``."""

from __future__ import annotations

import asyncio
import threading
from functools import partial
from pathlib import Path

import pytest

from noon import certs
from noon.config import Settings
from noon.core.ops import Draft
from noon.store import chainstate, checkpoints, receive, serve
from noon.store.compact import compact_dir
from noon.store.store import Store
from noond.signers import Signers
from tests.harness.fake_peer import FakePeer, Request, json_reply, local_node
from tests.harness.mesh import Pki

WAIT = 60.0
"""Seconds a step of the schedule may take (bounded; nothing waits on a time)."""


def _planned(drafts: list[Draft], _graph: object) -> list[Draft]:
    return drafts


def write(directory: Path, round_: int) -> None:
    """Two batches rewriting the same three memories: older versions become droppable."""
    store = Store(Settings(dir=directory, node_id="b", fsync=False))
    for step in range(2):
        drafts = [
            Draft(("content", "default", f"b{i}"), {"text": f"r{round_}.{step}"}) for i in range(3)
        ]
        store.write(partial(_planned, drafts))
    store.close()


def test_a_signer_is_known_only_with_its_checkpoint_and_a_push_meanwhile_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    pki = Pki(tmp_path / "pki")
    author, here = tmp_path / "b", tmp_path / "a"
    author.mkdir()
    here.mkdir()
    # Revision 1: b's unsigned history, held whole here; then b compacts its own copy, so the
    # chain of the copy here is not the one b's checkpoint vouches for.
    write(author, 0)
    (here / "b.jsonl").write_bytes((author / "b.jsonl").read_bytes())
    assert any(r.dropped for r in compact_dir(author, ["b.jsonl"], history=0))
    # b is upgraded: it signs a checkpoint, then its first signed batches.
    pki.install_signing("b", author)
    write(author, 1)
    cp = chainstate.checkpoint(author, "b")
    assert cp is not None
    held = chainstate.walk(here / "b.jsonl", "b").seq
    pem = pki.signing("b")[1].read_bytes().decode()

    async def signers_route(_req: Request) -> object:
        return json_reply({"node": "b", "certs": [pem], "checkpoints": [cp.encode().decode()]})

    peer = FakePeer("b", author)
    peer.routes["GET /signers/b"] = signers_route  # type: ignore[assignment]
    ca = certs.ca_certificate(pki.root / "nodes" / "ca.crt")
    signers = Signers(here, ca)
    local = local_node(here, "a", peer, signers=signers)
    puller = local.exchanger.puller

    # The first ask stops inside its adoption of the checkpoint until the test lets it go.
    adopt = checkpoints.adopt
    entered, release = threading.Event(), threading.Event()

    def adopting(directory: Path, found: object) -> int:
        if not entered.is_set():
            entered.set()
            assert release.wait(WAIT)
        return adopt(directory, found)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoints, "adopt", adopting)
    page = serve.read_after(author / "b.jsonl", held, max_bytes=1 << 20)  # what b sends
    ops = receive.parse_ops(page.body, "b", max_ops=100)
    assert ops and all(op.seq > held for _, op in ops)

    async def push() -> receive.Appended:
        """What a push or a frame of b's new lines goes through (noond.intake)."""
        allowed, verify = await puller.verifier(local.member, "b")
        assert allowed and verify is not None
        return await puller.append_proven(local.member, "b", ops, 0, verify)

    async def schedule() -> tuple[object, bool, receive.Appended]:
        asking = asyncio.create_task(puller.ask_signers(local.member, "b"))
        assert await asyncio.to_thread(entered.wait, WAIT)
        seen = signers.check("b")  # mid-ask: the checkpoint is not adopted yet
        pushing = asyncio.create_task(push())
        release.set()
        return seen, await asyncio.wait_for(asking, WAIT), await asyncio.wait_for(pushing, WAIT)

    seen, asked, done = asyncio.run(schedule())
    assert seen is None, "b's certificate was known here before its checkpoint was adopted"
    assert asked
    assert done.appended == len(ops)
    assert local.sample("noond_rejected_total", reason="unproven") == 0
    assert chainstate.checkpoint(here, "b") == cp
    head = chainstate.walk(here / "b.jsonl", "b")
    assert head.seq == ops[-1][1].seq and head.proven and head.chain is not None
