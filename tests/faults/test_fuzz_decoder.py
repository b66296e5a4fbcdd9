"""Hostile bytes in shards: the decoder and the incremental reader never crash, and never lose
a valid line however garbage surrounds it or however the file grows between polls."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from noon.core.elements import KINDS
from noon.core.ops import Op, OpError, decode, encode
from noon.store.shard import ShardReader

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
node_ids = st.sampled_from(["a", "node-1", "x.y_z", "", "..", "a/b", "é", "a" * 65, "A9"])
kinds = st.sampled_from([*sorted(KINDS), "unknown-kind", ""])


@st.composite
def op_objects(draw: st.DrawFn) -> dict[str, object]:
    """Something shaped like an op, with any field possibly wrong, missing or extra."""
    obj: dict[str, object] = {
        "v": draw(st.sampled_from([1, 1, 1, 2, 0, -1, "1", 2**40])),
        "node": draw(node_ids),
        "seq": draw(st.sampled_from([1, 2, 7, 0, -3, 2**53, 2**53 - 1, 1.5, "2"])),
        "hlc": draw(st.sampled_from([0, 5, 2**64 - 1, 2**64, -1, 1.0, None])),
        "el": draw(
            st.lists(st.text(max_size=6), max_size=5).map(lambda parts: [draw(kinds), *parts])
            | json_values
        ),
    }
    for name in ("val", "prev", "by", "bat"):
        if draw(st.booleans()):
            obj[name] = draw(json_values | st.just({"text": "t"}) | st.just([["a", 1]]))
    for name in list(obj):
        if draw(st.integers(0, 9)) == 0:
            del obj[name]
    if draw(st.booleans()):
        obj[draw(st.text(max_size=5))] = draw(json_values)
    return obj


def decodes_or_refuses(raw: bytes) -> Op | None:
    try:
        return decode(raw)
    except OpError as exc:
        assert str(exc)  # a refusal says why
        return None


@given(st.binary(max_size=300))
def test_arbitrary_bytes_decode_or_give_an_op_error(raw: bytes) -> None:
    decodes_or_refuses(raw)


@given(op_objects())
def test_op_shaped_garbage_decodes_or_gives_an_op_error(obj: dict[str, object]) -> None:
    op = decodes_or_refuses(json.dumps(obj).encode())
    if op is not None:  # anything accepted is a well-formed op that re-encodes to itself
        assert op.node == obj["node"] and op.seq == obj["seq"]
        if op.known:
            again = encode(
                node=op.node,
                seq=op.seq,
                hlc=op.hlc,
                el=op.el,
                val=op.val,
                prev=op.prev,
                by=op.by,
                bat=op.bat,
            )
            assert decode(again).id == op.id


@given(st.binary(max_size=200), st.integers(1, 40), st.integers(0, 30))
def test_deeply_nested_json_is_refused_not_a_crash(prefix: bytes, depth: int, extra: int) -> None:
    nested = b'{"v":1,"val":' + b"[" * (depth * 100 + extra) + b"]" * (depth * 100 + extra) + b"}"
    decodes_or_refuses(nested)
    decodes_or_refuses(prefix + nested)


def valid_line(i: int) -> bytes:
    return encode(
        node="w",
        seq=i,
        hlc=(1_700_000_000_000 << 16) + i,
        el=("content", "default", f"k{i}"),
        val={"text": f"v{i}"},
    )


garbage_lines = (
    st.binary(max_size=120)
    .map(lambda b: b.replace(b"\n", b" "))
    .filter(lambda b: decodes_or_refuses(b) is None)
)


@given(
    st.lists(garbage_lines, max_size=12),
    st.lists(st.integers(0, 10_000), max_size=6),
    st.integers(1, 12),
)
def test_the_reader_keeps_every_valid_line_among_garbage(
    tmp_path_factory, garbage, cuts, valid
) -> None:
    lines: list[bytes] = []
    for i in range(1, valid + 1):
        lines.append(valid_line(i))
        if garbage:
            lines.append(garbage.pop())
    lines += garbage
    data = b"".join(line + b"\n" for line in lines)
    path = tmp_path_factory.mktemp("fuzz") / "w.jsonl"
    path.write_bytes(b"")
    reader = ShardReader(path)
    got: list[Op] = []
    written = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        with open(path, "ab") as f:  # the file grows in arbitrary pieces, mid-line too
            f.write(data[written:cut])
        written = cut
        got += reader.poll().ops
    assert [op.seq for op in got] == list(range(1, valid + 1))
    assert reader.offset == len(data)


@given(st.binary(max_size=2000))
def test_the_reader_survives_any_file(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "x.jsonl"
    path.write_bytes(data)
    result = ShardReader(path).poll()
    complete = data[: data.rfind(b"\n") + 1] if b"\n" in data else b""
    assert len(result.corrupt) <= complete.count(b"\n")
