"""The checkpoint that brings unsigned history into an author's chain (noon/core/checkpoint.py,
PROTOCOL.md §13.5): any replica's copy of the unsigned lines, compacted any way, goes on to
verify once the author signed its checkpoint; what the checkpoint does not cover is refused,
and so is a checkpoint no certified key signed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from noon.core import chain
from noon.core import checkpoint as cps
from noon.core.ops import encode
from tests.harness.chains import KEY, OTHER, check, numbered

unsigned_history = st.lists(st.text(max_size=6), min_size=1, max_size=25)


def unsigned(node: str, texts: list[str], start: int = 0) -> list[bytes]:
    return [
        encode(
            node=node,
            seq=start + i,
            hlc=(1_700_000_000_000 << 16) + start + i,
            el=("content", "default", f"m{(start + i) % 4}"),
            val={"text": t},
        )
        for i, t in enumerate(texts, 1)
    ]


def subset(data: st.DataObject, lines: list[bytes]) -> list[bytes]:
    """Any copy compaction may leave: some lines gone, never the last."""
    return [raw for i, raw in enumerate(lines) if i == len(lines) - 1 or data.draw(st.booleans())]


@given(unsigned_history, st.lists(st.text(max_size=6), min_size=1, max_size=6), st.data())
@settings(deadline=None)
def test_any_copy_of_unsigned_history_goes_on_under_the_authors_checkpoint(old, new, data):
    history = unsigned("a", old)
    author = subset(data, history)  # what the author held when it started signing
    cp = cps.make("a", numbered(author), KEY.sign)
    assert cps.parse(cp.encode(), "a", check) == cp
    # The author signs its next batch onto the checkpoint's link.
    more = unsigned("a", new, len(old))
    link = chain.sign_batch(cp.link, more, len(old) + len(new), KEY.sign)
    assert chain.walk("a", numbered(author + more), cp) == chain.Head(len(old) + len(new), link)
    # A replica holding any part of the old lines, author's or not, and pulling the rest.
    replica = subset(data, history)
    covered = [raw for raw in replica if raw in author]
    refused = [raw for raw in replica if raw not in author]
    if refused:
        with pytest.raises(chain.ChainError, match="does not cover"):
            chain.verify("a", chain.empty("a"), numbered(refused[:1]), check, cp)
    head = chain.walk("a", numbered(covered), cp)
    rest = [raw for raw in author + more if chain_seq(raw) > head.seq]
    proven = chain.verify("a", head, numbered(rest), check, cp)
    assert proven.head.seq == len(old) + len(new)
    # Whatever either side compacts afterwards still verifies from the genesis.
    whole = covered + rest
    items = numbered(whole)
    last = len(items) - 1
    keep = [(s, raw, i == last or data.draw(st.booleans())) for i, (s, raw) in enumerate(items)]
    compacted = chain.restub("a", keep, cp=cp)
    assert chain.verify("a", chain.empty("a"), numbered(compacted), check, cp).head.chain == link
    # A change to any signed line is still caught.
    if len(compacted) > 1:
        forged = [*compacted[:-1], compacted[-1].replace(b'"text":"', b'"text":"x', 1)]
        if forged != compacted:
            with pytest.raises(chain.ChainError):
                chain.verify("a", chain.empty("a"), numbered(forged), check, cp)


def chain_seq(raw: bytes) -> int:
    return numbered([raw])[0][0]


def test_a_checkpoint_signed_by_another_key_or_changed_is_refused():
    history = unsigned("a", ["one", "two", "three"])
    cp = cps.make("a", numbered(history), KEY.sign)
    forged = cps.make("a", numbered(history), OTHER.sign)
    with pytest.raises(chain.ChainError, match="not signed by a certified key"):
        cps.parse(forged.encode(), "a", check)
    widened = cps.Checkpoint("a", cp.leaves + chain.leaf(b"x"), cp.sig)
    with pytest.raises(chain.ChainError, match=r"malformed|not signed"):
        cps.parse(widened.encode(), "a", check)
    with pytest.raises(chain.ChainError, match="not a checkpoint of b"):
        cps.parse(cp.encode(), "b", check)
    # An import shard's checkpoint does not pass for its node's.
    imported = cps.make("a-import", numbered(unsigned("a-import", ["x"])), KEY.sign)
    with pytest.raises(chain.ChainError):
        cps.parse(imported.encode().replace(b'"a-import"', b'"a"'), "a", check)


def test_a_line_the_author_no_longer_held_is_not_covered_nor_a_checkpoint_forged_over_it():
    history = unsigned("a", ["one", "two", "three"])
    cp = cps.make("a", numbered([history[0], history[2]]), KEY.sign)
    assert cp.covers(1, history[0]) and cp.covers(3, history[2])
    assert not cp.covers(2, history[1])
    assert not cp.covers(4, history[2])
    with pytest.raises(chain.ChainError, match="does not cover"):
        chain.verify("a", chain.Head(1, None, True), numbered(history[1:]), check, cp)
