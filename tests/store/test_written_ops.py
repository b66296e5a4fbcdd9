"""A write hands the fold the ops it built from its validated drafts, instead of the fold decoding
the lines just appended a second time: those ops must be the ops the lines decode to."""

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noon.core.ops import EDGES, Draft, Op, decode
from noon.names import shard_file
from noon.store import shard
from tests.harness.stores import open_store

part = st.text(max_size=12)
texts = st.text(max_size=40)
drafts = st.one_of(
    st.builds(lambda ns, n, t: Draft(("content", ns, n), {"text": t}), part, part, texts),
    st.builds(
        lambda ns, p, name, child, prio, d: Draft(
            ("edge", ns, p, name), {"child": child, "priority": prio, "disclosure": d}
        ),
        part,
        part,
        part,
        part,
        st.integers(-(2**31), 2**31 - 1),
        texts,
    ),
    st.builds(lambda ns, k, n: Draft(("keyword", ns, k, n), {}), part, part, part),
    st.builds(lambda ns, n: Draft(("boot", ns, n), {"uri": "core://x"}), part, part),
    st.builds(lambda ns, n, t: Draft(("entity", ns, n), {"type": t}), part, part, part),
    st.builds(
        lambda ns, e, o, s, t: Draft(("obs", ns, e, o, str(s)), {"text": t}),
        part,
        part,
        part,
        st.integers(0, 3),
        texts,
    ),
    st.builds(lambda ns, n: Draft(("content", ns, n), None), part, part),
)


def _fields(op: Op) -> tuple[Any, ...]:
    return (op.node, op.seq, op.hlc, op.el, op.val, op.prev, op.by, op.bat, op.known,
            op.digest, op.via, op.stub)  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(drafts, min_size=1, max_size=6), min_size=1, max_size=3),
    st.text(max_size=200),
    st.sampled_from(EDGES),
)
def test_the_ops_a_write_hands_the_fold_are_its_lines_decoded(
    batches: list[list[Draft]], client: str, via: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp))
        handed: list[Op] = []
        for batch in batches:

            def plan(fold: object, batch: list[Draft] = batch) -> list[Draft]:
                return batch

            handed += store.write(plan, client=client, via=via)
        lines = (Path(tmp) / shard_file(store.node)).read_bytes().splitlines()
        assert [_fields(op) for op in handed] == [_fields(decode(line)) for line in lines]
        # the fold took every one of them (a shortcut that stopped working leaves them here)
        assert not set(lines) & set(shard._written)
        store.close()
