"""Issue 26: a retry of a call whose answer was lost does not write it again.

The store side (``noon.store.retries`` through ``Store.write``): a call's request key on the
first op of its batch, found again within the window while what it wrote stands; the MCP side:
each URI tool that is not idempotent answers a retry from the earlier batch, in its own result
shape (the client checks it against the tool's ``outputSchema``), and the knowledge-graph adds
need nothing (a retry adds nothing). The real crash between the fsync and the answer is in
``tests/store/test_retry_after_crash.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from noon.core.ops import Draft, Op, decode, encode
from noon.mcp.server import create_server
from noon.store import retries
from noon.store.retries import WINDOW_MS, earlier_batch, request_key, requesting
from noon.store.store import AlreadyWritten, Store
from tests.harness.mcp import make_settings, tool_text
from tests.harness.stores import open_store
from tests.harness.uri import Session, make_server
from tests.harness.uri import open_store as open_uri_store

KEY = ("content", "default", "m")
T0 = 1_780_000_000_000


def append_text(text: str):
    def plan(graph: Any) -> list[Draft]:
        el = graph.element(KEY)
        before = el.winner.val["text"] if el is not None and not el.deleted else ""
        return [Draft(KEY, {"text": before + text})]

    return plan


def text(store: Store) -> str:
    store.refresh()
    el = store.fold.elements.get(KEY)
    val = None if el is None else el.winner.val
    return "" if val is None else str(val["text"])


class Clock:
    def __init__(self) -> None:
        self.ms = T0

    def __call__(self) -> int:
        return self.ms


def store_at(d: Path, clock: Clock) -> Store:
    return Store(make_settings(d, "a"), clock_ms=clock)


# -- the key ------------------------------------------------------------------------------


@given(st.dictionaries(st.sampled_from("abcdef"), st.integers() | st.text(max_size=5)))
def test_a_key_names_the_call_whatever_the_order_of_its_arguments(args: dict[str, Any]) -> None:
    reordered = dict(reversed(list(args.items())))
    key = request_key("t", args, "ns", "c")
    assert key == request_key("t", {**reordered, "unset": None}, "ns", "c")
    assert len(key) == retries.KEY_CHARS and int(key, 16) >= 0
    others = {
        request_key("u", args, "ns", "c"),
        request_key("t", args, "other", "c"),
        request_key("t", args, "ns", "d"),
        request_key("t", {**args, "g": 1}, "ns", "c"),
    }
    assert key not in others and len(others) == 4


# -- finding the earlier batch in a shard's bytes -----------------------------------------

batches = st.lists(
    st.tuples(
        st.integers(1, 3),  # ops in the batch
        st.sampled_from(["k1", "k2", None]),  # its request key
        st.integers(0, 4 * WINDOW_MS // 3),  # ms since the batch before
    ),
    max_size=12,
)


@given(batches, st.sampled_from(["k1", "k2"]), st.integers(0, 8 * WINDOW_MS), st.booleans())
def test_the_earlier_batch_is_the_last_whole_one_with_the_key_since_the_time_asked(
    spec: list[tuple[int, str | None, int]], key: str, since_after: int, torn: bool
) -> None:
    lines: list[bytes] = []
    firsts: list[tuple[list[Op], str | None]] = []
    seq, ms = 0, T0
    for size, req, gap in spec:
        ms += gap
        batch = []
        for i in range(size):
            seq += 1
            line = encode(
                node="a",
                seq=seq,
                hlc=(ms << 16) | i,
                el=("content", "default", f"m{seq}"),
                val={"text": f"{req} {ms} {i}"},
                bat=seq - i + size - 1 if size > 1 else None,
                req=req if i == 0 else None,
            )
            lines.append(line)
            batch.append(decode(line))
        firsts.append((batch, req))
    since = T0 + since_after
    expected = next(
        (b for b, req in reversed(firsts) if req == key and b[0].hlc >> 16 >= since), None
    )
    if torn and firsts and firsts[-1][0][-1].bat:  # the last batch lost its last line
        lines.pop()
        if expected is firsts[-1][0]:
            expected = next(
                (b for b, req in reversed(firsts[:-1]) if req == key and b[0].hlc >> 16 >= since),
                None,
            )
    buf = b"".join(line + b"\n" for line in lines)
    found = earlier_batch(buf, len(buf), "a", key, since)
    assert [op.id for op in found or []] == [op.id for op in expected or []]


def hex_key(name: str) -> str:
    """A request key as the store makes them (32 hex digits) for a short name like ``k1``."""
    return name.replace("k", "f").rjust(retries.KEY_CHARS, "0")


def shard_of(spec: list[tuple[int, str | None, int]], seq: int = 0, ms: int = T0) -> list[bytes]:
    """The lines of batches (size, request key, ms since the batch before) after ``seq``."""
    lines: list[bytes] = []
    for size, req, gap in spec:
        ms += gap
        for i in range(size):
            seq += 1
            lines.append(
                encode(
                    node="a",
                    seq=seq,
                    hlc=(ms << 16) | i,
                    el=("content", "default", f"m{seq}"),
                    val={"text": f"{req} {ms} {i}"},
                    bat=seq - i + size - 1 if size > 1 else None,
                    req=hex_key(req) if req and i == 0 else None,
                )
            )
    return lines


def repaired(lines: list[bytes]) -> list[bytes]:
    """``lines`` without an unfinished last batch, as a writer repairs a shard's tail."""
    ops = [decode(line) for line in lines]
    while ops and ops[-1].bat is not None and ops[-1].seq < ops[-1].bat:
        ops.pop()
    return lines[: len(ops)]


@given(batches, batches, st.integers(0, 40), st.integers(0, 8 * WINDOW_MS))
def test_reading_on_from_where_it_was_read_finds_what_reading_it_whole_finds(
    first: list[tuple[int, str | None, int]],
    then: list[tuple[int, str | None, int]],
    torn_at: int,
    since_after: int,
) -> None:
    """The store's :class:`Recent` reads each byte once, across appends line by line (batches
    seen unfinished), and a torn batch cut and written over by another writer: after each step
    it answers as :func:`earlier_batch` over the whole shard does, for every key."""
    recent = retries.Recent()
    lines = shard_of(first)
    torn = repaired(lines[: torn_at % (len(lines) + 1)] if lines else [])
    last = decode(torn[-1]) if torn else None
    after = shard_of(then, last.seq if last else 0, (last.hlc >> 16) + 1 if last else T0)
    steps = [lines[:n] for n in range(len(lines) + 1)] + [
        torn + after[:n] for n in range(len(after) + 1)
    ]
    since = T0 + since_after
    for step in steps:
        buf = b"".join(line + b"\n" for line in step)
        for key in ("k1", "k2"):
            k = hex_key(key)
            want = earlier_batch(buf, len(buf), "a", k, since)
            got = recent.batch(buf, len(buf), (1, 1), "a", k, since)
            assert [op.id for op in got or []] == [op.id for op in want or []]


# -- the store ----------------------------------------------------------------------------


def test_a_retry_within_the_window_raises_with_the_earlier_batch_and_writes_nothing(
    noon_dir: Path,
) -> None:
    clock = Clock()
    store = store_at(noon_dir, clock)
    with requesting("a" * 32):
        written = store.write(append_text("+x"))
    size = (noon_dir / "a.jsonl").stat().st_size
    clock.ms += WINDOW_MS - 1
    with requesting("a" * 32), pytest.raises(AlreadyWritten) as raised:
        store.write(append_text("+x"))
    assert [op.id for op in raised.value.batch] == [op.id for op in written]
    assert (noon_dir / "a.jsonl").stat().st_size == size and text(store) == "+x"
    with requesting("b" * 32):  # another call
        store.write(append_text("+x"))
    assert text(store) == "+x+x"


def test_after_the_window_the_same_call_writes_again(noon_dir: Path) -> None:
    clock = Clock()
    store = store_at(noon_dir, clock)
    with requesting("a" * 32):
        store.write(append_text("+x"))
    clock.ms += WINDOW_MS + 1
    with requesting("a" * 32):
        store.write(append_text("+x"))
    assert text(store) == "+x+x"


def test_once_written_over_or_deleted_the_same_call_writes_again(noon_dir: Path) -> None:
    store = open_store(noon_dir)
    with requesting("a" * 32):
        store.write(append_text("+x"))
    store.write(lambda g: [Draft(KEY, None)])  # deleted since
    with requesting("a" * 32):
        store.write(append_text("+x"))
    assert text(store) == "+x"
    store.write(append_text("+y"))  # written over since
    with requesting("a" * 32):
        store.write(append_text("+x"))
    assert text(store) == "+x+y+x"


def test_a_second_write_within_one_call_is_its_own(noon_dir: Path) -> None:
    store = open_store(noon_dir)
    with requesting("a" * 32):
        store.write(append_text("+x"))
        store.write(append_text("+y"))
    assert text(store) == "+x+y"
    lines = (noon_dir / "a.jsonl").read_bytes().splitlines()
    assert [b'"req":"' in line for line in lines] == [True, False]


def test_another_process_of_the_machine_sees_the_call_written(noon_dir: Path) -> None:
    first, second = open_store(noon_dir), open_store(noon_dir)
    with requesting("a" * 32):
        first.write(append_text("+x"))
    with requesting("a" * 32), pytest.raises(AlreadyWritten):
        second.write(append_text("+x"))
    assert text(second) == "+x"


# -- the MCP tools ------------------------------------------------------------------------


async def session_test(tmp_path: Path, fn: Any) -> Store:
    store, settings = open_uri_store(tmp_path, "laptop")
    async with Client(make_server(store, settings)) as client:
        await fn(Session(client))
    return store


def shard_lines(d: Path) -> list[bytes]:
    return (d / "laptop.jsonl").read_bytes().splitlines()


RETRIED = "Success (already written): this same call ("


async def test_every_uri_tool_that_is_not_idempotent_answers_a_retry_without_writing(
    tmp_path: Path,
) -> None:
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    async def run(s: Session) -> None:
        await s.create("core://", "base", "the base text")
        await s.create("core://", "other", "another text")
        _, history = await s.call("memory_history", uri="core://base")
        first = history["versions"][-1]["version"]
        await s.call("update_memory", uri="core://base", append="a second line")
        made: dict[str, dict[str, Any]] = {
            "create_memory": {
                "parent_uri": "core://",
                "content": "numbered",
                "priority": 2,
                "disclosure": "When counting",
            },
            "update_memory": {"uri": "core://base", "append": "a third line"},
            "add_alias": {"new_uri": "core://base/again", "target_uri": "core://other"},
            "move_memory": {"uri": "core://other", "new_uri": "core://renamed"},
            "rollback_memory": {"uri": "core://base", "version": first},
        }
        for name, args in made.items():
            before = len(shard_lines(tmp_path))
            _, data = await s.call(name, **args)
            after = len(shard_lines(tmp_path))
            retried, again = await s.call(name, **args)
            assert retried.startswith(RETRIED + name), retried
            assert "it was not written again" in retried and "call again after" in retried
            assert len(shard_lines(tmp_path)) == after > before, name
            if name == "update_memory":
                assert (await s.read("core://base")).count("a third line") == 1
            calls.append((name, data, again))
        # undo_change too: the alias's change, found where memory_history lists it
        _, history = await s.call("memory_history", uri="core://renamed")
        alias = next(c for c in history["changes"] if "core://base/again" in " ".join(c["what"]))
        args = {"changes": [alias["change"]]}
        before = len(shard_lines(tmp_path))
        _, data = await s.call("undo_change", **args)
        after = len(shard_lines(tmp_path))
        retried, again = await s.call("undo_change", **args)
        assert retried.startswith(RETRIED + "undo_change"), retried
        assert len(shard_lines(tmp_path)) == after > before
        await s.fail("read_memory", uri="core://base/again")
        calls.append(("undo_change", data, again))
        assert "numbered" in await s.read("core://1")
        await s.fail("read_memory", uri="core://2")
        assert "a second line" not in await s.read("core://base")  # rolled back, once

    await session_test(tmp_path, run)
    for name, data, again in calls:
        assert again == {k: v for k, v in data.items() if k != "related"} | (
            {"related": []} if "related" in data else {}
        ), name


async def test_a_deliberate_second_create_is_written_once_the_first_is_deleted(
    tmp_path: Path,
) -> None:
    async def run(s: Session) -> None:
        args = {"parent_uri": "core://", "content": "twice", "priority": 1, "disclosure": "d"}
        await s.call("create_memory", **args)
        await s.call("delete_memory", uri="core://1")
        text, _ = await s.call("create_memory", **args)
        assert text.startswith("Success: Memory created at 'core://1'"), text  # the number is free
        assert "twice" in await s.read("core://1")
        creates = [line for line in shard_lines(tmp_path) if b'"text":"twice"' in line]
        assert len(creates) == 2

    await session_test(tmp_path, run)


async def test_knowledge_graph_adds_retried_add_nothing(tmp_path: Path) -> None:
    """The drop-in's adds skip what is held, so a retry of each writes no op and the graph is
    the same; its answers stay the official server's (nothing added the second time)."""
    store, settings = open_uri_store(tmp_path, "laptop")
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "create_entities",
            {"entities": [{"name": "A", "entityType": "t", "observations": ["o"]}]},
        ),
        ("create_relations", {"relations": [{"from": "A", "to": "A", "relationType": "r"}]}),
        ("add_observations", {"observations": [{"entityName": "A", "contents": ["p", "p"]}]}),
    ]
    async with Client(create_server(store, settings, {"kg"})) as client:
        for name, args in calls:
            assert not (await client.call_tool(name, args)).is_error
            graph = (await client.call_tool("read_graph", {})).structured_content
            size = len(shard_lines(tmp_path))
            again = await client.call_tool(name, args)
            assert not again.is_error and len(shard_lines(tmp_path)) == size, name
            assert (await client.call_tool("read_graph", {})).structured_content == graph
            assert "already written" not in tool_text(again)
