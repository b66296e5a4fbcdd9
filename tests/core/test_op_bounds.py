"""What op validation bounds on receipt: the depth of a value (every value accepted must
re-serialise inside any envelope noon and its clients wrap around it) and the HLC stamp (every
stamp accepted is a date some calendar can show)."""

from __future__ import annotations

import datetime as dt
import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.core.hlc import physical
from noon.core.ops import MAX_DEPTH, MAX_HLC, MAX_SEQ, OpError, decode, encode


def nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for i in range(depth - 1):
        value = {"a": value} if i % 2 else {"l": [value]}
    return value


def depth_of(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def line(val: object, hlc: int = 5) -> bytes:
    return orjson.dumps(
        {"v": 1, "node": "a", "seq": 1, "hlc": hlc, "el": ["keyword", "ns", "k", "n"], "val": val}
    )


@given(st.integers(1, 160))
def test_values_deeper_than_the_limit_are_refused_and_the_rest_reserialise(depth):
    val = nested(depth)
    raw = line(val)
    if depth_of(val) > MAX_DEPTH:
        with pytest.raises(OpError, match="nested deeper"):
            decode(raw)
        return
    op = decode(raw)
    # Forty levels of envelopes (an MCP answer or the /graph route use a handful): still below
    # every encoder's limit.
    envelope: object = op.val
    for _ in range(40):
        envelope = {"result": [envelope]}
    assert orjson.loads(orjson.dumps(envelope)) == envelope
    json.dumps(envelope)


def test_a_hostile_depth_is_refused_without_exhausting_the_stack():
    deep = b'{"a":' * 1000 + b"{}" + b"}" * 1000
    raw = line(None)[:-1] + b',"val":' + deep + b"}"
    with pytest.raises(OpError):
        decode(raw)


@given(st.integers(0, (1 << 64) - 1))
def test_every_stamp_accepted_is_a_date(stamp):
    raw = line({}, hlc=stamp)
    if stamp > MAX_HLC:
        with pytest.raises(OpError, match="after year 9999"):
            decode(raw)
        return
    when = dt.datetime.fromtimestamp(physical(decode(raw).hlc) / 1000, dt.UTC)
    assert when.year <= 9999
    assert when.isoformat()


@pytest.mark.parametrize(
    "envelope",
    [
        {"seq": MAX_SEQ + 1, "hlc": 1},
        {"seq": 0, "hlc": 1},
        {"seq": 1, "hlc": MAX_HLC + 1},
        {"seq": 5, "hlc": 1, "bat": 4},
    ],
)
def test_a_writer_never_encodes_an_envelope_readers_refuse(envelope):
    with pytest.raises(OpError):
        encode(node="a", el=("content", "ns", "x"), val={"text": "t"}, **envelope)


def test_a_shard_at_the_last_seq_refuses_a_write_before_anything_reaches_disk(tmp_path):
    from noon.config import Settings
    from noon.core.ops import Draft
    from noon.store.store import Store

    last = encode(node="a", seq=MAX_SEQ, hlc=1, el=("content", "ns", "x"), val={"text": "t"})
    (tmp_path / "a.jsonl").write_bytes(last + b"\n")
    store = Store(Settings(dir=tmp_path, node_id="a", fsync=False))
    with pytest.raises(OpError, match="cannot take more ops"):
        store.write(lambda fold: [Draft(("content", "ns", "y"), {"text": "new"})])
    assert (tmp_path / "a.jsonl").read_bytes() == last + b"\n"
