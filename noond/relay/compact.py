"""Relay compaction (PROTOCOL.md §14.5): an author merges its own segments that every reader
already holds into one, so a machine that joins later fetches few objects, and no reader that
reported fetches anything again.

The merged segment holds the same lines (never fewer: the bucket keeps each author's whole
history, tombstones included) and is written before the segments it replaces are removed, so a
crash in between leaves overlapping segments, which readers take as duplicates; the next
compaction removes what is left. Only lines the author's own signature chain proves enter it:
anyone holding the mesh key can name a segment under the author's tag (PROTOCOL.md §14.6)."""

from __future__ import annotations

import logging

from noon.core import chain
from noon.core.collection import member_of
from noon.store import chainstate, receive
from noond.relay import seal
from noond.relay.backend import Entry, RelayDown
from noond.relay.sync import Relay
from noond.wire import MAX_OPS_PER_PAGE

log = logging.getLogger("noond.relay")

MERGE_AT = 32
"""Segments of one author held by every reader before they are merged."""


def floor(relay: Relay, shard: str) -> int:
    """The highest seq of ``shard`` every author met through this relay reports holding (0 when
    one of them never reported)."""
    reports = relay.down.reports
    others = {member_of(node) for (_, node) in relay.link.tags} - {relay.link.node}
    if not others or any(node not in reports for node in others):
        return 0
    return min(reports[node].frontier.get(shard, 0) for node in others)


async def compact(relay: Relay, *, merge_at: int = MERGE_AT) -> int:
    """Merge each own shard's segments at or below :func:`floor`; the number of segments
    replaced."""
    link = relay.link
    listing: list[Entry] = await link.io(link.backend.list)
    replaced = 0
    for shard in link.own:
        tags = {link.tag_of(epoch, shard) for epoch in link.keys}
        below = floor(relay, shard)
        mine = sorted(
            (
                (name, entry)
                for entry in listing
                if (name := seal.parse_name(entry.name)) is not None
                and name.kind == "seg"
                and name.tag in tags
                and entry.copy is None
                and name.epoch in link.keys
                and name.last <= below
            ),
            key=lambda s: (s[0].first, -s[0].last),
        )
        if len(mine) < merge_at:
            continue
        check = relay.down.signers.check(shard) if relay.down.signers.required else None
        cp = chainstate.checkpoint(relay.holdings.dir, shard) if check is not None else None
        at = chain.empty(shard)
        lines: dict[int, bytes] = {}
        covered = 0
        parts: list[Entry] = []
        for name, entry in mine:
            if name.first > covered + 1:
                break  # a piece missing from the listing: merge what is contiguous
            if name.last > covered:
                opened = await link.fetch(name, entry)
                if opened is None and (entry.stored, entry.version) in link.refused:
                    continue  # another segment of the same seqs may be the author's
                if opened is None or opened[0] != shard:
                    break
                try:
                    ops = receive.parse_ops(opened[1], shard, max_ops=MAX_OPS_PER_PAGE)
                    new = [(op.seq, line) for line, op in ops if op.seq > covered]
                    if check is not None:
                        at = chain.verify(shard, at, new, check, cp).head
                except (receive.ReplicaError, chain.ChainError) as exc:
                    # Named under this author's tag by another holder of the mesh key
                    # (PROTOCOL.md §14.6): none of its lines enter the merge.
                    link.refuse(entry, "unproven", str(exc))
                    continue
                lines.update(new)
                covered = name.last
            parts.append(entry)
        if len(parts) < 2:
            continue
        first = min(lines)
        merged = seal.segment_name(link.epoch, link.tag_of(link.epoch, shard), first, covered)
        body = b"".join(lines[s] + b"\n" for s in sorted(lines))
        sealed = seal.seal(
            link.keys[link.epoch], merged, seal.segment_plain(shard, first, covered, body)
        )
        await link.io(link.backend.put, merged, sealed)
        link.sent(len(sealed))
        for entry in parts:
            if entry.name != merged:
                try:
                    await link.io(link.backend.delete, entry.name)
                except RelayDown:
                    return replaced  # the rest goes next time; readers skip the duplicates
                replaced += 1
        log.info(
            "relay %s: merged %d segments of %s (seqs %d..%d) into one",
            link.url,
            len(parts),
            shard,
            first,
            covered,
        )
    return replaced
