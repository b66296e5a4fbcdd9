import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.core.ops import MAX_HLC, Draft, OpError, decode, encode

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
