"""A transaction that takes out an op it added to an element held before and adds one under the
same identity to another element: each element settles from the ops stored when it finishes,
not from the one taken out (:meth:`noon.store.readmodel.apply.Transaction._load` reuses the
ops a transaction added rather than read their rows back)."""

from __future__ import annotations

from pathlib import Path

from noon.core.ops import Op
from noon.store.readmodel import schema
from noon.store.readmodel.apply import Transaction
from noon.store.readmodel.documents import Dirty


def entity(node: str, seq: int, hlc: int, name: str, etype: str, digest: int) -> Op:
    return Op(
        node, seq, hlc, ("entity", "default", name), {"type": etype}, None, None, None, True, digest
    )


def test_an_op_taken_out_and_added_again_under_another_element(tmp_path: Path) -> None:
    conn, _ = schema.connect(None, tmp_path)
    conn.execute("BEGIN")
    first = Transaction(conn, Dirty())
    first.add([entity("b", 1, 10, "y", "held", 1), entity("c", 1, 10, "z", "held", 4)])
    first.finish()
    conn.execute("COMMIT")

    conn.execute("BEGIN")
    tx = Transaction(conn, Dirty())
    tx.add([entity("a", 1, 20, "z", "taken out", 2)])
    tx.remove_ops("a", [1])
    tx.add([entity("a", 1, 30, "y", "added again", 3)])
    tx.finish()
    conn.execute("COMMIT")

    assert conn.execute("SELECT name, type FROM entities ORDER BY name").fetchall() == [
        ("y", "added again"),
        ("z", "held"),
    ]
    assert conn.execute(
        "SELECT key, w_node, w_seq, w_hlc FROM elements ORDER BY key"
    ).fetchall() == [
        ('["entity","default","y"]', "a", 1, 30),
        ('["entity","default","z"]', "c", 1, 10),
    ]
