"""A set of names given to one SQL statement as a single parameter, however many there are.

``IN (?, ?, ...)`` takes a statement per few hundred names, and its answers come back sorted
per statement, not overall; ``IN (SELECT value FROM json_each(?2))`` is searched the same way
(SQLite builds the set once and probes the column's index for each member) from one JSON
array. SQLite (3.40) cuts a JSON string at an escaped NUL, and a name may hold one: then each
name is written with ``\\x01`` as ``\\x01a`` and NUL as ``\\x01b``, and the set's statement
turns them back (every ``\\x01`` of the written name starts one of these pairs, so the first
``replace`` finds exactly the NULs and the second exactly the ``\\x01``s). Names without
either are given as they are: the two ``replace`` calls cost about a millisecond for the
3,500 names of a common word's relations at 1M ops.
"""

from __future__ import annotations

from collections.abc import Collection

import orjson

_PLAIN = "SELECT value FROM json_each(?2)"
_ESCAPED = (
    "SELECT replace(replace(value, char(1, 98), char(0)), char(1, 97), char(1)) FROM json_each(?2)"
)


def name_set(names: Collection[str]) -> tuple[str, str]:
    """The statement giving ``names`` (for ``IN (...)``) and its second parameter."""
    if any("\x00" in n or "\x01" in n for n in names):
        escaped = [n.replace("\x01", "\x01a").replace("\x00", "\x01b") for n in names]
        return _ESCAPED, orjson.dumps(escaped).decode()
    return _PLAIN, orjson.dumps(list(names)).decode()
