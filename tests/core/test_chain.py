"""The signed chain of a shard (noon/core/chain.py, PROTOCOL.md §13): what it proves, and that
it keeps proving what a replica holds after any compaction or collection it may do."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from noon.config import Settings
from noon.core import chain
from noon.core.ops import Draft, decode, encode
from noon.store.compact import compact_dir, kept_lines
from tests.harness.chains import KEY, OTHER, check, numbered
from tests.harness.stores import plan_of


def shard(node: str, batches: list[list[str]], sign: chain.Sign = KEY.sign) -> list[bytes]:
    """``node``'s lines: one batch per list, each batch's last line signed."""
    out: list[bytes] = []
    link = chain.genesis(node)
    seq = 0
    for texts in batches:
        end = seq + len(texts)
        lines = [
            encode(
                node=node,
                seq=seq + i,
                hlc=(1_700_000_000_000 << 16) + seq + i,
                el=("content", "default", f"m{(seq + i) % 5}"),
                val={"text": t},
                bat=end if len(texts) > 1 else None,
            )
            for i, t in enumerate(texts, 1)
        ]
        link = chain.sign_batch(link, lines, end, sign)
        out += lines
        seq = end
    return out


batches = st.lists(st.lists(st.text(max_size=8), min_size=1, max_size=4), min_size=1, max_size=12)


@given(batches, st.data())
@settings(deadline=None)
def test_what_remains_after_any_drops_still_verifies_and_stays_tamper_evident(hist, data):
    lines = shard("a", hist)
    whole = chain.verify("a", chain.empty("a"), numbered(lines), check)
    assert whole.head == chain.walk("a", numbered(lines))
    # Any drops but the last line (never dropped: it keeps the seq), twice over, as two
    # compactions or a compaction and a collection one after the other would.
    current = lines
    for _ in range(2):
        items = numbered(current)
        keep = [
            (s, raw, i == len(items) - 1 or data.draw(st.booleans()))
            for i, (s, raw) in enumerate(items)
        ]
        current = chain.restub("a", keep)
        proven = chain.verify("a", chain.empty("a"), numbered(current), check)
        assert proven.head == whole.head  # the same chain, provable from what remains
        assert chain.walk("a", numbered(current)) == whole.head
    # Changing any byte of what remains is caught: of a line, or of the leaves a stub holds
    # (its "d" is bookkeeping the chain does not cover, PROTOCOL.md §13.3).
    victim = data.draw(st.integers(0, len(current) - 1))
    line = current[victim]
    stub = chain.parse_stub(line)
    if stub is None:
        at = data.draw(st.integers(0, len(line) - 1))
    else:
        value = chain.b64(stub.leaves)
        start = line.index(value)
        at = data.draw(st.integers(start, start + len(value) - 1))
    flipped = line[:at] + bytes([line[at] ^ 0x01]) + line[at + 1 :]
    tampered = [*current[:victim], flipped, *current[victim + 1 :]]
    try:
        items = numbered(tampered)
    except AssertionError:
        return  # no longer a line at all: the validation before the chain refuses it
    if [s for s, _ in items] != [s for s, _ in numbered(current)]:
        return  # the seq changed: refused as out of order before the chain is read
    with pytest.raises(chain.ChainError):
        chain.verify("a", chain.empty("a"), items, check)


@given(batches, st.data())
@settings(deadline=None)
def test_a_page_from_any_signed_point_verifies_from_the_head_before_it(hist, data):
    """Pulled page by page: each page ends on a signed line (a batch end), and verifies from
    the head its reader's copy ends on, however the server's copy was compacted."""
    lines = shard("a", hist)
    items = numbered(lines)
    keep = [
        (s, raw, i == len(items) - 1 or data.draw(st.booleans()))
        for i, (s, raw) in enumerate(items)
    ]
    served = numbered(chain.restub("a", keep))
    ends = [i for i, (_, raw) in enumerate(served) if chain.split_sig(raw)[1] is not None]
    cuts = sorted(set(data.draw(st.lists(st.sampled_from(ends), max_size=4))) | {ends[-1]})
    head = chain.empty("a")
    start = 0
    for cut in cuts:
        head = chain.verify("a", head, served[start : cut + 1], check).head
        start = cut + 1
    assert head == chain.walk("a", items)


@given(batches, st.data())
@settings(deadline=None)
def test_two_differently_compacted_copies_merge_into_one_that_verifies(hist, data):
    """A re-fetch merges a peer's copy with ours (noon/store/receive.py replace): both were
    compacted on their own; the merge keeps lines of either, and stubs bridge the gaps."""
    lines = shard("a", hist)
    items = numbered(lines)

    def compacted() -> list[tuple[int, bytes]]:
        keep = [
            (s, r, i == len(items) - 1 or data.draw(st.booleans()))
            for i, (s, r) in enumerate(items)
        ]
        return numbered(chain.restub("a", keep))

    ours, theirs = compacted(), compacted()
    values = chain.known("a", theirs)
    for seq, value in chain.known("a", ours).items():
        values.setdefault(seq, value)
    ops_ours = {s: r for s, r in ours if chain.parse_stub(r) is None}
    ops_theirs = {s: r for s, r in theirs if chain.parse_stub(r) is None}
    pick = {**ops_ours, **ops_theirs}
    chosen = sorted(s for s in pick if s == items[-1][0] or data.draw(st.booleans()))
    merged = chain.bridge("a", [(s, pick[s]) for s in chosen], values)
    proven = chain.verify("a", chain.empty("a"), numbered(merged), check)
    assert proven.head == chain.walk("a", items)


def test_splices_moves_other_keys_and_missing_signatures_are_refused():
    x = shard("a", [["1", "2"], ["3", "4"]])
    y = shard("a", [["1", "2"], ["other", "4"]])
    with pytest.raises(chain.ChainError, match="does not verify"):
        chain.verify("a", chain.empty("a"), numbered(x[:2] + y[2:3] + x[3:]), check)
    signed_by_other = shard("a", [["1"]], sign=OTHER.sign)
    with pytest.raises(chain.ChainError, match="does not verify"):
        chain.verify("a", chain.empty("a"), numbered(signed_by_other), check)
    with pytest.raises(chain.ChainError, match="without a signature"):
        chain.verify("a", chain.empty("a"), numbered(x[:1]), check)
    with pytest.raises(chain.ChainError, match="gap nothing covers"):
        chain.verify("a", chain.empty("a"), numbered(x[:1] + x[2:]), check)
    as_b = [raw.replace(b'"node":"a"', b'"node":"b"') for raw in x]
    with pytest.raises(chain.ChainError):
        chain.verify("b", chain.empty("b"), numbered(as_b), check)  # another author's chain


def test_a_stores_compaction_leaves_a_shard_that_verifies_and_an_unsigned_one_as_before(
    tmp_path: Path,
):
    """The store signs with its key; compacting the shard (history 0) drops superseded
    versions and leaves stubs, and the file still verifies from its first line. A shard
    written without a key compacts as in revision 1 (no stubs)."""
    from noon import certs
    from noon.store.store import Store

    certs.init_ca(tmp_path / "ca")
    signing = certs.issue_signing_cert(tmp_path / "ca", "a", tmp_path / "keys")
    signer = certs.read_signer(signing.cert, tmp_path / "ca" / "ca.crt")
    for keyed in (True, False):
        d = tmp_path / ("signed" if keyed else "plain")
        store = Store(
            Settings(dir=d, node_id="a", fsync=False, signing_key=signing.key if keyed else None)
        )
        for i in range(30):
            store.write(plan_of([Draft(("content", "default", f"m{i % 3}"), {"text": str(i)})]))
        store.close()
        compact_dir(d, ["a.jsonl"], history=0)
        lines = (d / "a.jsonl").read_bytes().splitlines()
        stubs = [raw for raw in lines if chain.parse_stub(raw) is not None]
        ops = [decode(raw) for raw in lines if chain.parse_stub(raw) is None]
        assert len(ops) < 30
        if keyed:
            assert stubs and len(stubs) <= len(ops) + 1
            proven = chain.verify("a", chain.empty("a"), numbered(lines), signer.verify)
            assert proven.head.seq == 30
            fresh = Store(Settings(dir=d, node_id="a", fsync=False), shared=False)
            assert {el[2] for el in fresh.fold.elements} == {"m0", "m1", "m2"}
            fresh.close()
        else:
            assert not stubs


def test_kept_lines_leaves_shards_with_foreign_or_corrupt_lines_as_in_revision_1():
    lines = shard("a", [["1"], ["2"], ["3"]])
    ops = [(raw, decode(raw)) for raw in lines]
    drops = {("a", 1)}
    assert len(kept_lines("a.jsonl", ops, drops)) == 3  # stub + 2 lines
    corrupt = [*ops[:2], (b"not json", None), ops[2]]
    assert kept_lines("a.jsonl", corrupt, drops) == [lines[1], b"not json", lines[2]]
