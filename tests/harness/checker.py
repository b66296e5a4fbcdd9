"""The history checker: what was acknowledged, and whether the healed cluster still shows it.

Writers print every acknowledged batch (after ``Store.write`` returned); the nemesis also
records ops that became durable without an acknowledgement (a writer killed between the
write and the print) so causality through them is known. After healing, :func:`check` reads
every replica's directory and reports anomalies:

- ``diverged``: two replicas fold to different visible states or conflict heads;
- ``lost``: an acknowledged op that nothing supersedes is not a head (a live write, or a
  delete still physically held);
- ``resurrected``: an op that an acknowledged or durable op supersedes shows as a head again
  (a lost delete, or a collected element that came back);
- ``fork``: two replicas hold different bytes for one ``(node, seq)`` and no daemon reported it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from noon.config import Settings
from noon.core.ops import Key, OpError, OpId, decode
from noon.store.shard import ShardReader
from noon.store.store import Store

State = dict[Key, tuple[OpId, object, frozenset[OpId]]]


@dataclass(frozen=True)
class Acked:
    id: OpId
    key: Key
    live: bool
    prev: tuple[OpId, ...]


@dataclass
class History:
    acked: dict[OpId, Acked] = field(default_factory=dict)
    durable: dict[OpId, tuple[OpId, ...]] = field(default_factory=dict)
    """Ops found on disk that no writer acknowledged (it died first): id -> prev."""
    writes: int = 0
    deletes: int = 0

    def copy(self) -> History:
        return History(dict(self.acked), dict(self.durable), self.writes, self.deletes)

    def ack_line(self, line: str) -> None:
        """One line a writer printed; anything that is not an ack is ignored."""
        try:
            ops = json.loads(line)["ops"]
        except (ValueError, KeyError, TypeError):
            return
        for node, seq, el, live, prev in ops:
            op = Acked((node, seq), tuple(el), live, tuple((p[0], p[1]) for p in prev))
            self.acked[op.id] = op
            if live:
                self.writes += 1
            else:
                self.deletes += 1

    def scan_unacked(self, shard: Path) -> int:
        """Record the complete ops of a shard that were never acknowledged (call after killing
        its writer, before anything compacts it)."""
        if not shard.exists():
            return 0
        found = 0
        for op in ShardReader(shard).poll().ops:
            if op.id not in self.acked and op.id not in self.durable:
                self.durable[op.id] = op.prev or ()
                found += 1
        return found


@dataclass
class Replica:
    name: str
    state: State
    ops: dict[OpId, bytes]
    tombstones: set[OpId] = field(default_factory=set)

    def observable(self) -> dict[Key, tuple[object, ...]]:
        return observable(self.state, self.tombstones)


def read_replica(name: str, directory: Path) -> Replica:
    store = Store(Settings(dir=directory, node_id=name, fsync=False))
    state: State = {}
    for key, el in store.fold.elements.items():
        heads = frozenset(el.heads) if el.heads is not None else frozenset({el.winner.id})
        state[key] = (el.winner.id, el.winner.val, heads)
    ops: dict[OpId, bytes] = {}
    tombstones: set[OpId] = set()
    for shard in sorted(directory.glob("*.jsonl")):
        for raw in shard.read_bytes().splitlines():
            try:
                op = decode(raw)
            except OpError:
                continue
            if op.stub:
                continue  # what compaction left of dropped ops (PROTOCOL.md §13.3): no op
            ops[op.id] = raw.strip()
            if op.val is None:
                tombstones.add(op.id)
    return Replica(name, state, ops, tombstones)


def visible(state: State) -> dict[Key, object]:
    """What a reader shows: the live winners."""
    return {k: v for k, (_, v, _) in state.items() if v is not None}


def observable(state: State, tombstones: set[OpId]) -> dict[Key, tuple[object, ...]]:
    """What a reader can observe, now or through its next write: live elements with their
    winner and live heads. A deleted element and a collected one look alike (PROTOCOL.md §1.4:
    a later write that never saw the tombstones shows the same), so deleted elements and
    tombstone heads are left out."""
    return {
        k: (w, v, frozenset(h for h in heads if h not in tombstones))
        for k, (w, v, heads) in state.items()
        if v is not None
    }


@dataclass
class Report:
    anomalies: list[str] = field(default_factory=list)
    checked: int = 0

    def add(self, kind: str, text: str) -> None:
        self.anomalies.append(f"{kind}: {text}")


def check(history: History, replicas: list[Replica], reported_forks: Iterable[str] = ()) -> Report:
    report = Report()
    first = replicas[0]
    seen = first.observable()
    for other in replicas[1:]:
        theirs = other.observable()
        if theirs != seen:
            diff = sorted(str(k) for k in set(seen) | set(theirs) if seen.get(k) != theirs.get(k))
            report.add("diverged", f"{first.name} and {other.name} differ on {diff[:5]}")
    # Forks: one identity, two contents, on two replicas.
    reported = set(reported_forks)
    for other in replicas[1:]:
        for op_id, raw in other.ops.items():
            mine = first.ops.get(op_id)
            if mine is not None and mine != raw and op_id[0] not in reported:
                report.add(
                    "fork",
                    f"{op_id} differs between {first.name} and {other.name} "
                    "and no daemon reported it",
                )
    # Causality: everything that any known op names is superseded.
    superseded: set[OpId] = set()
    for acked in history.acked.values():
        superseded.update(acked.prev)
    for prev in history.durable.values():
        superseded.update(prev)
    for replica in replicas:
        for raw in replica.ops.values():
            op = decode(raw)
            superseded.update(op.prev or ())
    for replica in replicas:
        heads = {h: k for k, (_, _, hs) in replica.state.items() for h in hs}
        for op_id in sorted(superseded & heads.keys()):
            report.add(
                "resurrected",
                f"{op_id} on {heads[op_id]} is a head on "
                f"{replica.name} although a later op supersedes it",
            )
        for acked in history.acked.values():
            if acked.id in superseded:
                continue
            if acked.id in heads:
                continue
            if not acked.live and acked.id not in replica.ops:
                continue  # a collected delete: the resurrection check covers what it named
            report.add(
                "lost",
                f"acknowledged {'write' if acked.live else 'delete'} "
                f"{acked.id} on {acked.key} is not a head on {replica.name}",
            )
    report.checked = len(history.acked)
    return report
