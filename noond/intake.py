"""What a member sends of its own shard (PROTOCOL.md §5): who may send it, then the body
validated, compared with what is held, proven by its author and appended. One path for a
``POST`` push and for every frame of a stream (§5.1), so the two can never accept different
things."""

from __future__ import annotations

import asyncio
import logging
import os
from functools import partial

from noon.core.chain import Verify
from noon.core.collection import member_of
from noon.store import receive, serve
from noon.store.errors import ForkDetected
from noon.store.readmodel.behind import full
from noon.store.shard import NotRegular
from noond.membership import Member
from noond.node import Node
from noond.params import Refused
from noond.shards import refused
from noond.wire import MAX_OPS_PER_PUSH, Code

log = logging.getLogger("noond.server")


def pusher_of(daemon: Node, node: str, caller: str | None, said: str | None) -> str:
    """The member sending ``node``, when it may (steps 1 of §5): its own shards only, never
    this node's, never a revoked or departed one. ``said`` is the ``X-Noon-Node`` header, the
    only word there is without TLS."""
    if refused(node, daemon.state.ignored):
        raise Refused(403, Code.FORBIDDEN, f"shard {node!r} is revoked or departed")
    if refused(node, {daemon.config.node}):
        raise Refused(403, Code.FORBIDDEN, "nobody pushes this node's own shards to it")
    pusher = caller if daemon.config.tls else said
    if pusher is None or member_of(node) != pusher:
        raise Refused(
            403,
            Code.FORBIDDEN,
            f"a peer may push only its own shards (its own and its imports): {pusher!r} "
            f"cannot push {node!r}",
        )
    return pusher


def still_member(daemon: Node, caller: str | None) -> None:
    """A stream outlives the request that opened it: each frame checks again that its sender
    is neither departed nor revoked (PROTOCOL.md §8.3, §13.6)."""
    if caller is None:
        return
    if caller in daemon.state.ignored or daemon.signers.revocations.cutoff(caller) is not None:
        raise Refused(403, Code.FORBIDDEN, f"node {caller!r} is revoked or departed")


async def continues(
    daemon: Node, caller: str | None, node: str, after: int, checks: serve.Checks
) -> int:
    """Steps 3 and 4 of §5 (a stream's opening): this node holds ``node`` at least up to
    ``after`` and the sender's digests of its ops there match ours. Returns the seq held."""
    try:
        return await asyncio.to_thread(_continues, daemon, node, after, checks)
    except ForkDetected as exc:
        daemon.forks.record(caller or node, node, str(exc))
        raise Refused(409, Code.FORK, str(exc)) from None


def _continues(daemon: Node, node: str, after: int, checks: serve.Checks) -> int:
    """:func:`continues` in a worker thread; a fork raises ForkDetected, not yet recorded."""
    held = daemon.holdings.summary_now(node).seq
    if held < after:
        raise Refused(
            409,
            Code.GAP,
            f"this node holds {node!r} up to seq {held}, the push starts after {after}",
            head=held,
        )
    if checks:
        try:
            serve.compare(daemon.holdings.path(node), checks, who="pusher")
        except ForkDetected as exc:
            raise ForkDetected(f"{exc}; refusing to merge") from None
    return held


async def take(
    daemon: Node,
    caller: str | None,
    node: str,
    body: bytes,
    after: int,
    checks: serve.Checks,
    revision: int,
) -> receive.Appended:
    """Steps 2 to 5 of §5 for one push body or stream frame that continues from ``after``:
    held that far, compared with what is held, validated, within quota, proven (§13.2) and
    appended; nothing of it stored otherwise. All of it in one trip to a worker thread (each
    trip costs a wake-up of the thread and one of the event loop, which a loaded machine
    schedules late: a frame's latency is counted in them)."""
    verify = await _verifier(daemon, caller, node, revision)
    pusher = daemon.membership.members.get(caller or "")
    attempt = partial(_take, daemon, pusher, node, body, after, checks)
    try:
        done = await daemon.exchanger.puller.proven(pusher, node, verify, attempt)
    except receive.Unproven as exc:  # before ReplicaError: it is one
        raise Refused(400, Code.UNPROVEN, f"nothing stored: {exc}") from None
    except receive.ReplicaError as exc:
        raise Refused(400, Code.INVALID_OPS, f"nothing stored: {exc}") from None
    except NotRegular as exc:
        log.error("cannot store shard %s: %s", node, exc)
        raise Refused(503, Code.UNAVAILABLE, f"this node cannot store {node!r} now") from None
    except ForkDetected as exc:
        daemon.forks.record(caller or node, node, str(exc))
        raise Refused(409, Code.FORK, str(exc)) from None
    except OSError as exc:
        if not full(exc):
            raise
        daemon.holdings.disk_full(exc)
        raise Refused(
            507,
            Code.UNAVAILABLE,
            "this node's disk is full: nothing of this push was stored; it pulls what it "
            "misses once space returns",
            logged=False,
        ) from None
    if done.appended:  # a body held already wrote nothing: it says nothing of the disk
        daemon.holdings.stored()
    daemon.metrics.ops_received.inc(done.appended)
    return done


def _take(
    daemon: Node,
    pusher: Member | None,
    node: str,
    body: bytes,
    after: int,
    checks: serve.Checks,
    verify: Verify | None,
) -> receive.Appended:
    """:func:`take` in the worker thread."""
    held = _continues(daemon, node, after, checks)
    ops = receive.parse_ops(body, node, max_ops=MAX_OPS_PER_PUSH)
    path = daemon.holdings.path(node)
    try:
        size = os.lstat(path).st_size
    except FileNotFoundError:
        size = 0
    if size + len(body) > daemon.config.max_shard_bytes:
        raise Refused(
            507,
            Code.QUOTA,
            f"this node keeps at most {daemon.config.max_shard_bytes} bytes of one author's "
            f"shard ({node!r} holds {size})",
        )
    daemon.exchanger.puller.not_revoked(pusher, node, ops)
    try:
        return daemon.exchanger.puller.append_now(node, ops, 0, verify)
    except receive.SkipsCompacted as exc:
        # This replica lags behind a compaction of the pusher: it re-fetches the whole
        # shard when it next pulls (PROTOCOL.md §5).
        raise Refused(409, Code.GAP, str(exc), head=held) from None


async def _verifier(daemon: Node, caller: str | None, node: str, revision: int) -> Verify | None:
    """How a push of ``node`` is checked: its author's certified keys, asked from the pusher
    when none is known here (PROTOCOL.md §13.2). A pusher speaking revision 1 whose signer is
    unknown here pushes unsigned, as revision 1 did: mTLS proves it wrote its own shard
    (§13.5). Refused otherwise."""
    if not daemon.signers.required:
        return None
    check = daemon.signers.check(node)
    member = daemon.membership.members.get(caller or "")
    if check is None and member is not None:
        await daemon.exchanger.puller.ask_signers(member, member_of(node))
        check = daemon.signers.check(node)
    if check is None and revision == 1 and caller == member_of(node):
        return None
    if check is None:
        raise Refused(
            400,
            Code.UNPROVEN,
            f"nothing stored: no signing certificate of {member_of(node)!r} by this node's CA "
            "is known here",
        )
    return check
