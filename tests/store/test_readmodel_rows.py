"""An op stored in the read model reads back as the op folded: a short value from its row, a
long one from its line in the author's shard (by offset, checked by digest; found again by
digest when a compaction moved the lines; never taken from another line)."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.core.ops import Op, line_digest
from noon.errors import Unavailable
from noon.store.readmodel.rows import INSERT, PACK_MIN, ROW, key_text, op_of, op_row
from noon.store.readmodel.schema import TABLES
from noon.store.readmodel.shardvalues import register

texts = st.text(max_size=400)
values = st.one_of(
    st.fixed_dictionaries({"text": texts}),
    st.fixed_dictionaries(
        {"child": st.text(max_size=30), "priority": st.integers(0, 9), "disclosure": texts}
    ),
    st.dictionaries(
        st.text(max_size=10), st.one_of(texts, st.integers(-(2**63), 2**63 - 1), st.booleans())
    ),
)


EL = ("content", "default", "x")


def _line(seq: int, val: dict[str, Any]) -> bytes:
    """A shard line as written (read back without validation: its digest was folded)."""
    return orjson.dumps(
        {"v": 1, "node": "n1", "seq": seq, "hlc": 1 << 20, "el": EL, "val": val, "by": "c"}
    )


def _op(line: bytes) -> Op:
    obj = orjson.loads(line)
    return Op("n1", obj["seq"], 1 << 20, EL, obj["val"], None, "c", None, True, line_digest(line))


def _model(d: Path, op: Op, at: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    register(conn, d)
    conn.executescript(TABLES)
    conn.execute("INSERT INTO elements (id, key) VALUES (7, ?)", (key_text(op.el),))
    conn.execute(INSERT, op_row(op, 7, at))
    return conn


def _read(conn: sqlite3.Connection) -> Op:
    return op_of(conn.execute(f"SELECT {ROW} FROM ops").fetchone())


def _fields(op: Op) -> tuple[Any, ...]:
    return (op.node, op.seq, op.hlc, op.el, op.val, op.prev, op.by, op.bat, op.digest, op.via)


@given(values, st.lists(values, max_size=3))
def test_a_value_reads_back_from_its_row_or_its_shard_line(
    val: dict[str, Any], before: list[dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as name:
        d = Path(name)
        earlier = b"".join(_line(i + 1, v) + b"\n" for i, v in enumerate(before))
        line = _line(len(before) + 1, val)
        (d / "n1.jsonl").write_bytes(earlier + line + b"\n")
        op = _op(line)
        conn = _model(d, op, len(earlier))
        stored, at = conn.execute("SELECT val, at FROM ops").fetchone()
        if len(orjson.dumps(val)) >= PACK_MIN:
            assert stored is None and at == len(earlier), "a long value is the shard's to keep"
        else:
            assert orjson.loads(stored) == val and at is None
        assert _fields(_read(conn)) == _fields(op)


def test_a_line_that_moved_is_found_by_its_digest_and_a_gone_one_is_not_guessed(
    tmp_path: Path,
) -> None:
    long = {"text": "a text long enough to be read from the shard, not kept twice " * 3}
    lines = [_line(seq, {**long, "n": seq}) for seq in (1, 2, 3)]
    shard = tmp_path / "n1.jsonl"
    shard.write_bytes(b"".join(raw + b"\n" for raw in lines))
    op = _op(lines[1])
    conn = _model(tmp_path, op, len(lines[0]) + 1)
    assert _read(conn).val == op.val
    shard.write_bytes(lines[1] + b"\n" + lines[2] + b"\n")  # compacted: line 1 went
    assert _read(conn).val == op.val  # at points into line 2's neighbour now: found by digest
    shard.write_bytes(lines[0] + b"\n" + lines[2] + b"\n")  # line 2 itself went
    with pytest.raises(Unavailable, match="read it again"):
        _read(conn)


names = st.one_of(st.none(), st.sampled_from(["", "0", "-1"]), st.text(max_size=12))


@given(
    by=names,
    via=names,
    bat=st.one_of(st.none(), st.integers(1, 2**40)),
    at=st.one_of(st.none(), st.just(0), st.integers(1, 2**40)),
    val=st.one_of(st.none(), values),
    known=st.booleans(),
    eid=st.one_of(st.none(), st.integers(1, 2**40)),
)
def test_a_row_stores_none_as_null_and_every_other_value_as_given(
    by: str | None,
    via: str | None,
    bat: int | None,
    at: int | None,
    val: dict[str, Any] | None,
    known: bool,
    eid: int | None,
) -> None:
    """Stand-ins for NULL (:data:`INSERT`) never swallow a real value: an empty or "0"
    client, a line at byte 0, a placement of a child named "0" are stored as they are."""
    el = ("edge", "ns", "p", "n") if known else ("future-kind", "ns")
    op = Op("n1", 5, 1 << 20, el, val, None, by, bat, known, 123, via)
    conn = sqlite3.connect(":memory:")
    conn.executescript(TABLES)
    conn.execute(INSERT, op_row(op, eid, at))
    row = conn.execute("SELECT ns, val, at, prev, client, bat, via, eid, child FROM ops").fetchone()
    ns, stored_val, stored_at, prev, client, stored_bat, stored_via, stored_eid, child = row
    assert (client, stored_via, stored_bat, stored_eid, prev) == (by, via, bat, eid, None)
    assert ns == ("ns" if known else None)
    if known and val is not None:
        raw = orjson.dumps(val)
        inline = len(raw) < PACK_MIN or at is None
        assert stored_val == (raw.decode() if inline else None)
        assert stored_at == (None if inline else at)
        placed = val.get("child")
        assert child == (placed if isinstance(placed, str) else None)
    else:
        assert (stored_val, stored_at, child) == (None, None, None)
