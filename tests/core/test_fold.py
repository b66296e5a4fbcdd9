import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.core.fold import ForkError
from noon.core.ops import decode, encode
from tests.harness.fold import Fold
from tests.harness.sim import actions, run, skews, summary


def fold_of(ops):
    f = Fold()
    f.apply_all(ops)
    return summary(f)


def unknown_op(node: str, seq: int) -> bytes:
    return b'{"v":9,"node":"%s","seq":%d,"hlc":5,"future":{"x":1}}' % (node.encode(), seq)


@given(actions, skews, st.randoms(use_true_random=False))
def test_fold_is_a_function_of_the_op_set(acts, sk, rnd):
    nodes = run(acts, sk)
    all_ops = [op for n in nodes for op in n.ops]
    all_ops += [decode(unknown_op("future", i)) for i in range(1, 3)]
    expected = fold_of(all_ops)
    shuffled = all_ops[:]
    rnd.shuffle(shuffled)
    assert fold_of(shuffled) == expected  # order-insensitive
    assert fold_of(all_ops + shuffled) == expected  # idempotent under duplicate delivery
    a, b, c = (all_ops[i::3] for i in range(3))
    assert fold_of(a + b + c) == fold_of(c + a + b) == fold_of(b + c + a)  # associative


@given(actions, skews)
def test_replicas_that_exchanged_everything_converge(acts, sk):
    nodes = run(acts, sk)
    for n in nodes:
        for m in nodes:
            n.receive(m.ops, 1_800_000_000_000)
    states = [summary(n.fold) for n in nodes]
    assert all(s == states[0] for s in states)


def test_unknown_ops_are_counted_and_skipped():
    f = Fold()
    f.apply(decode(unknown_op("x", 1)))
    assert f.skipped == 1 and f.elements == {} and f.holds("x", 1)


def _w(node, seq, hlc, text, prev=None, key=("content", "default", "m")):
    return decode(
        encode(node=node, seq=seq, hlc=hlc, el=key, val=text and {"text": text}, prev=prev)
    )


def test_concurrent_writes_make_heads_and_a_write_naming_them_resolves():
    base = _w("a", 1, 10, "base")
    left = _w("a", 2, 20, "left", prev=(("a", 1),))
    right = _w("b", 1, 15, "right", prev=(("a", 1),))
    f = Fold()
    f.apply_all([base, left, right])
    el = f.elements[("content", "default", "m")]
    assert set(el.heads) == {("a", 2), ("b", 1)} and el.conflicted
    assert el.winner.val == {"text": "left"}
    merge = _w("b", 2, 30, "merged", prev=(("a", 2), ("b", 1)))
    f.apply(merge)
    assert set(el.heads) == {("b", 2)} and not el.conflicted


def test_a_superseded_version_never_wins_even_with_a_larger_stamp():
    # The writer of v2 saw v1 (named it) but its clock was behind: v1 must not come back.
    v1 = _w("a", 1, 1000, "v1")
    v2 = _w("b", 1, 10, "v2", prev=(("a", 1),))
    for order in ([v1, v2], [v2, v1]):
        f = Fold()
        f.apply_all(order)
        assert f.elements[("content", "default", "m")].winner.val == {"text": "v2"}


def test_a_delete_removes_only_what_it_saw():
    base = _w("a", 1, 10, "base")
    delete = _w("a", 2, 30, None, prev=(("a", 1),))
    edit = _w("b", 1, 20, "edited", prev=(("a", 1),))
    f = Fold()
    f.apply_all([edit, delete, base])
    el = f.elements[("content", "default", "m")]
    # The edit did not see the delete: it survives, and the delete stays visible as a head.
    assert not el.deleted and el.winner.val == {"text": "edited"}
    assert set(el.heads) == {("a", 2), ("b", 1)} and el.conflicted
    f.apply(_w("a", 3, 40, None, prev=(("a", 2), ("b", 1))))
    assert el.deleted and not el.conflicted


def test_prev_cycle_is_order_independent():
    x = _w("a", 1, 10, "x", prev=(("b", 1),))
    y = _w("b", 1, 20, "y", prev=(("a", 1),))
    outcomes = set()
    for order in ([x, y], [y, x]):
        f = Fold()
        f.apply_all(order)
        outcomes.add(tuple(summary(f).items()))
    assert len(outcomes) == 1


def test_same_identity_different_bytes_is_a_fork():
    f = Fold()
    f.apply(_w("a", 1, 10, "one"))
    assert f.apply(_w("a", 1, 10, "one")) is False  # duplicate
    with pytest.raises(ForkError) as info:
        f.apply(_w("a", 1, 10, "two"))
    assert (info.value.node, info.value.seq) == ("a", 1)


def test_concurrent_writes_resolve_by_clock_and_node_in_any_order():
    key = ("keyword", "default", "k", "m")
    ops = [
        decode(encode(node=n, seq=1, hlc=h, el=key, val=v))
        for n, h, v in [("a", 5, {}), ("b", 5, {"x": 1}), ("c", 4, {}), ("d", 9, None)]
    ]
    for _ in range(5):
        random.shuffle(ops)
        f = Fold()
        f.apply_all(ops)
        el = f.elements[key]
        assert el.winner.node == "b" and not el.deleted and len(el.heads) == 4
