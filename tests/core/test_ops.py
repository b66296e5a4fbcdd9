import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.core.ops import MAX_HLC, MAX_SEQ, Draft, OpError, decode, encode, encode_batch

GOOD = {
    "v": 1,
    "node": "laptop",
    "seq": 3,
    "hlc": 12345,
    "el": ["content", "default", "m"],
    "val": {"text": "hello"},
    "prev": [["laptop", 2]],
    "by": "claude-code",
}


def line(**changes):
    obj = {**GOOD, **changes}
    return orjson.dumps({k: v for k, v in obj.items() if v is not ...})


def test_round_trip():
    op = decode(line())
    assert op.id == ("laptop", 3) and op.prev == (("laptop", 2),) and op.by == "claude-code"
    assert op.known and not op.is_tombstone


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"node": "../etc"}, "node"),
        ({"node": "a/b"}, "node"),
        ({"node": ""}, "node"),
        ({"seq": 0}, "seq"),
        ({"seq": "3"}, "seq"),
        ({"seq": True}, "seq"),
        ({"hlc": -1}, "hlc"),
        ({"hlc": 1.5}, "hlc"),
        ({"el": "content"}, "el"),
        ({"el": ["content"]}, "el"),
        ({"el": ["content", "default", 5]}, "el"),
        ({"val": [1]}, "val"),
        ({"val": {"text": 5}}, "text"),
        ({"prev": [["laptop"]]}, "prev"),
        ({"prev": "x"}, "prev"),
        ({"by": "x" * 500}, "by"),
        ({"bat": 2}, "bat"),
        ({"v": 0}, "v"),
        ({"v": ...}, "v"),
    ],
)
def test_invalid_ops_are_refused_with_the_field_named(changes, message):
    with pytest.raises(OpError, match=message):
        decode(line(**changes))


@pytest.mark.parametrize("raw", [b"", b"{", b"[1,2]", b"null", b'"x"', b"\x00\x00\x00"])
def test_non_objects_are_refused(raw):
    with pytest.raises(OpError):
        decode(raw)


def test_newer_version_and_unknown_kind_are_kept_but_not_known():
    newer = decode(line(v=2, el=...))
    assert not newer.known and newer.id == ("laptop", 3)
    kind = decode(line(el=["telepathy", "default", "x"], val={"anything": 1}))
    assert not kind.known


def test_unknown_fields_are_ignored_on_read():
    assert decode(line(extra={"future": True})).known


@given(st.text(max_size=50), st.integers(1, 2**53 - 1), st.integers(0, MAX_HLC))
def test_encode_decode(text, seq, stamp):
    op = decode(
        encode(node="n-1", seq=seq, hlc=stamp, el=("content", "ns", "x"), val={"text": text})
    )
    assert (op.seq, op.hlc, op.val) == (seq, stamp, {"text": text})


def test_drafts_refuse_unknown_kinds_and_bad_values():
    with pytest.raises(OpError, match="unknown element kind"):
        Draft(("nope", "default", "x"), {})
    with pytest.raises(OpError, match="priority"):
        Draft(("edge", "d", "p", "n"), {"child": "c", "priority": "high", "disclosure": ""})


def test_integers_beyond_64_bits_are_refused():
    with pytest.raises(OpError):
        decode(line().replace(b'"hlc":12345', b'"hlc":18446744073709551616'))


def test_a_string_seen_as_a_namespace_never_passes_for_a_node_id():
    decode(line(el=["content", "", "m"], by=""))  # "" is a fine namespace and client name
    with pytest.raises(OpError, match="node"):
        decode(line(node=""))


keys = st.sampled_from([("content", "ns", "m"), ("obs", "", "e1", "fact", "0")])
values = st.one_of(st.none(), st.fixed_dictionaries({"text": st.text(max_size=20)}))
prevs = st.one_of(
    st.none(), st.lists(st.tuples(st.sampled_from(["a", "b-2"]), st.integers(1, 99)), max_size=3)
)


@given(
    st.lists(st.tuples(keys, values, prevs), min_size=1, max_size=20),
    st.integers(1, 2**40),
    st.integers(0, 2**60),
    st.one_of(st.none(), st.text(max_size=8)),
    st.sampled_from([None, "mcp"]),
    st.one_of(st.none(), st.text(max_size=8)),
)
def test_a_batch_is_encoded_line_by_line_in_the_canonical_order(items, seq, hlc, by, via, req):
    """Each line of a batch is the op the module docstring spells, keys in its order: seq and
    stamp counted up from the first, ``by``, ``bat`` and ``via`` on every line, ``req`` on the
    first alone; one op alone is what ``encode`` writes."""
    batch = [(el, val, None if p is None else tuple(p)) for el, val, p in items]
    bat = seq + len(batch) - 1 if len(batch) > 1 else None
    lines = encode_batch(
        node="n-1", seq=seq, hlc=hlc, items=batch, by=by, bat=bat, via=via, req=req
    )
    for i, ((el, val, prev), got) in enumerate(zip(batch, lines, strict=True)):
        fields = {
            "v": 1,
            "node": "n-1",
            "seq": seq + i,
            "hlc": hlc + i,
            "el": list(el),
            "val": val,
            "prev": None if prev is None else [list(p) for p in prev],
            "by": by,
            "bat": bat,
            "via": via,
            "req": req if i == 0 else None,
        }
        assert got == orjson.dumps({k: v for k, v in fields.items() if v is not None})
        op = decode(got)
        assert (op.seq, op.hlc, op.el, op.val, op.prev) == (seq + i, hlc + i, el, val, prev)
    one = encode(node="n-1", seq=seq, hlc=hlc, el=batch[0][0], val=batch[0][1], prev=batch[0][2])
    assert one == encode_batch(node="n-1", seq=seq, hlc=hlc, items=batch[:1])[0]


def test_a_batch_running_past_the_last_seq_or_stamp_is_refused_whole():
    item = (("content", "ns", "m"), {"text": "x"}, None)
    with pytest.raises(OpError, match="cannot take more ops"):
        encode_batch(node="n-1", seq=MAX_SEQ - 1, hlc=1, items=[item] * 3)
    with pytest.raises(OpError, match="stamp"):
        encode_batch(node="n-1", seq=1, hlc=MAX_HLC - 1, items=[item] * 3)
    assert len(encode_batch(node="n-1", seq=MAX_SEQ - 2, hlc=MAX_HLC - 2, items=[item] * 3)) == 3
