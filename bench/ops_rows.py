"""What one ``ops`` row costs the fold to insert, by how it is bound and how wide it is.

Run: ``.venv/bin/python -m bench.ops_rows`` (100k ops of ``bench.core``'s generated store).

The rows are the fold's own: the store's lines decoded and turned into rows by
:func:`noon.store.readmodel.rows.op_row`, inserted in shard order into a fresh read model file
in one transaction. Each figure is CPU microseconds per row, the best of three (a shared machine
disturbs CPU time far less than wall time), beside the anchor of the same rows bound as plain
``executemany`` does, every ``None`` included. Also the bare cost of binding a NULL in
Python's ``sqlite3``.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.core import generate
from noon.core.ops import decode
from noon.store.readmodel.rows import COLUMNS, INSERT, key_text, op_row
from noon.store.readmodel.schema import TABLES

OPS_DDL = TABLES[TABLES.index("CREATE TABLE ops") : TABLES.index("CREATE TABLE elements")]
NAMES = [c.strip() for c in COLUMNS.split(",")]
NARROW = ["node", "seq", "digest", "hlc", "at", "eid"]
STAND_INS = {4: 0, 6: 0, 7: -1, 8: 0, 9: 0, 10: 0, 11: 0, 12: 0, 13: 0}
"""Column index -> the value :func:`op_row` gives for NULL there."""
NARROW_DDL = """
CREATE TABLE ops (node TEXT, seq INTEGER, digest INTEGER, hlc INTEGER, at INTEGER, eid INTEGER,
    PRIMARY KEY (node, seq)) WITHOUT ROWID;
CREATE INDEX ops_by_element ON ops (eid);
CREATE INDEX ops_by_time ON ops (hlc);
"""


def with_nulls(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """``row`` with ``None`` where :func:`op_row` put a stand-in for NULL."""
    return tuple(
        None if i in STAND_INS and type(v) is int and v == STAND_INS[i] else v
        for i, v in enumerate(row)
    )


def by_shape(conn: sqlite3.Connection, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
    """One ``executemany`` per shape (which columns are NULL), naming only the others: no NULL
    bound, but each shape inserted apart, out of key order."""
    groups: dict[tuple[bool, ...], list[tuple[Any, ...]]] = {}
    for row in rows:
        present = tuple(v is not None for v in row)
        groups.setdefault(present, []).append(tuple(v for v in row if v is not None))
    for present, group in groups.items():
        named = [c for c, p in zip(columns, present, strict=True) if p]
        marks = ",".join("?" * len(named))
        conn.executemany(f"INSERT INTO ops ({', '.join(named)}) VALUES ({marks})", group)


def fold_rows(d: Path) -> list[tuple[Any, ...]]:
    """The ``ops`` rows a fold of ``d``'s shards writes, in shard order (with stand-ins)."""
    ids: dict[str, int] = {}
    rows = []
    for shard in sorted(d.glob("*.jsonl")):
        at = 0
        for line in shard.read_bytes().splitlines(keepends=True):
            op = decode(line)
            eid = ids.setdefault(key_text(op.el), len(ids) + 1)
            rows.append(op_row(op, eid, at))
            at += len(line)
    return rows


def best_cpu(ddl: str, load: Callable[[sqlite3.Connection], object], d: Path) -> float:
    """The least CPU seconds of three inserts into a fresh file (WAL, as the read model)."""
    best = float("inf")
    for _ in range(3):
        for old in d.glob("rows.sqlite3*"):
            old.unlink()
        conn = sqlite3.connect(d / "rows.sqlite3", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(ddl)
        start = time.process_time()
        conn.execute("BEGIN")
        load(conn)
        conn.execute("COMMIT")
        best = min(best, time.process_time() - start)
        conn.close()
    return best


def null_binding(n: int = 200_000) -> dict[str, float]:
    """CPU microseconds per row of six integers, and of six NULLs, into a table in memory."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a, b, c, d, e, f)")
    out = {}
    for name, row in (("six_ints_us", (1, 2, 3, 4, 5, 6)), ("six_nulls_us", (None,) * 6)):
        rows = [row] * n
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            conn.executemany("INSERT INTO t VALUES (?,?,?,?,?,?)", rows)
            best = min(best, time.process_time() - start)
        out[name] = best / n * 1e6
    return out


def measure(ops: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="noon-bench-rows-") as tmp:
        d = Path(tmp)
        generate(d, ops)
        rows = fold_rows(d)
        nulled = [with_nulls(r) for r in rows]
        marks = ",".join("?" * len(NAMES))
        plain = f"INSERT INTO ops ({COLUMNS}) VALUES ({marks})"
        bare = OPS_DDL.split(";")[0] + ";"
        narrow = [tuple(r[NAMES.index(c)] for c in NARROW) for r in nulled]
        narrow_marks = ",".join("?" * len(NARROW))
        narrow_insert = f"INSERT INTO ops ({', '.join(NARROW)}) VALUES ({narrow_marks})"
        figures = {
            "every_null_bound": best_cpu(OPS_DDL, lambda c: c.executemany(plain, nulled), d),
            "one_insert_a_shape": best_cpu(OPS_DDL, lambda c: by_shape(c, NAMES, nulled), d),
            "stand_ins_nullif": best_cpu(OPS_DDL, lambda c: c.executemany(INSERT, rows), d),
            "stand_ins_no_secondary_index": best_cpu(
                bare, lambda c: c.executemany(INSERT, rows), d
            ),
            "narrow_row_two_indexes": best_cpu(
                NARROW_DDL, lambda c: c.executemany(narrow_insert, narrow), d
            ),
        }
    per_row = {k: v / len(rows) * 1e6 for k, v in figures.items()}
    nulls = sum(v is None for r in nulled for v in r) / len(rows)
    return {"rows": len(rows), "nulls_per_row": nulls, "us_per_row": per_row, **null_binding()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=100_000)
    res = measure(ap.parse_args().ops)
    print(f"{res['rows']:,} ops rows, {res['nulls_per_row']:.1f} NULLs a row on average")
    anchor = res["us_per_row"]["every_null_bound"]
    for name, us in res["us_per_row"].items():
        print(f"  {name:30s} {us:6.2f} µs CPU a row ({us / anchor:.2f}x every NULL bound)")
    print(
        f"binding six ints {res['six_ints_us']:.2f} µs a row, six NULLs "
        f"{res['six_nulls_us']:.2f} µs a row (a table in memory)"
    )


if __name__ == "__main__":
    main()
