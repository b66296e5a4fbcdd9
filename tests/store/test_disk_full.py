"""Issue 26 items 2 and 3: a disk that fills up, met by a real ``noon serve`` over MCP on a
small tmpfs the test mounts.

Before: a write whose batch was already fsync'd in the shard was reported as failed (the read
model could not fold it), so a retry duplicated it; then every read failed with the same error
and a new ``noon serve`` exited at start. Now a write is reported done exactly when it is
durable, reads serve what the read model holds and say why it is behind, writes are refused
with the reason (nothing written, so a retry cannot duplicate), a new session starts, and the
store catches up by itself once space returns."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from noon.core.ops import decode
from tests.harness.mcp import serve_env, serve_process
from tests.harness.small_disk import PAGE, empty_wal, fill, small_disk

pytestmark = pytest.mark.integration

BEHIND = "⚠ This machine's memory is shown as it was at"


def _args(d: Path) -> list[str]:
    return ["--dir", str(d), "--node-id", "n1", "--tools", "uri"]


def texts(result: Any) -> list[str]:
    return [c.text for c in result.content]


def shard_texts(d: Path) -> list[str]:
    ops = [decode(line) for line in (d / "n1.jsonl").read_bytes().splitlines()]
    return [str(op.val["text"]) for op in ops if op.val and "text" in op.val]


async def create(client: Client, title: str, content: str) -> Any:
    return await client.call_tool(
        "create_memory",
        {
            "parent_uri": "core://",
            "title": title,
            "content": content,
            "priority": 1,
            "disclosure": "When testing",
        },
    )


async def read(client: Client, uri: str) -> list[str]:
    result = await client.call_tool("read_memory", {"uri": uri})
    assert not result.is_error, texts(result)
    return texts(result)


async def test_a_durable_write_is_reported_done_and_reads_go_on_while_the_disk_is_full(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        d = disk / "noon"
        with serve_process(_args(d), serve_env()) as served:
            async with Client(streamable_http_client(served.url)) as client:
                assert not (await create(client, "a", "first memory")).is_error
                empty_wal(d / ".noon" / "readmodel.sqlite3")
                filler = fill(disk, leave_pages=1)  # the shard's append fits, the fold cannot

                written = await create(client, "b", "second memory")
                said = texts(written)
                assert not written.is_error, said
                assert shard_texts(d).count("second memory") == 1
                assert "core://b" in said[0]
                assert said[-1].startswith(BEHIND) and "is full" in said[-1], said

                retried = await create(client, "b", "second memory")
                assert retried.is_error
                assert texts(retried)[0].startswith("Not written: the disk holding"), retried
                assert "Nothing was written" in texts(retried)[0]
                assert shard_texts(d).count("second memory") == 1  # the retry duplicated nothing

                first = await read(client, "core://a")
                assert "first memory" in first[0] and first[-1].startswith(BEHIND)

                with serve_process(_args(d), serve_env()) as late:  # a new session starts
                    async with Client(streamable_http_client(late.url)) as other:
                        seen = await read(other, "core://a")
                        assert "first memory" in seen[0] and seen[-1].startswith(BEHIND)
                    assert "Traceback" not in late.stderr()

                filler.unlink()  # space returns: the next read catches up, by itself
                now = await read(client, "core://b")
                assert "second memory" in now[0] and not any(BEHIND in t for t in now), now
                again = await create(client, "c", "third memory")
                assert not again.is_error and not any(BEHIND in t for t in texts(again))
            assert "Traceback" not in served.stderr()
        assert shard_texts(d).count("second memory") == 1


async def test_an_append_the_disk_cannot_hold_is_refused_and_taken_back(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk") as disk:
        d = disk / "noon"
        with serve_process(_args(d), serve_env()) as served:
            async with Client(streamable_http_client(served.url)) as client:
                assert not (await create(client, "a", "first memory")).is_error
                before = (d / "n1.jsonl").read_bytes()
                filler = fill(disk)
                big = "x" * (4 * PAGE)  # more than the last page of the shard can take
                refused = await create(client, "big", big)
                assert refused.is_error
                said = texts(refused)[0]
                assert said.startswith("Not written: no space left on the disk for"), said
                assert str(d / "n1.jsonl") in said and "Nothing was written" in said
                assert (d / "n1.jsonl").read_bytes() == before  # the partial append is gone
                assert "first memory" in (await read(client, "core://a"))[0]

                filler.unlink()
                assert not (await create(client, "big", big)).is_error  # the retry, once
                assert big in (await read(client, "core://big"))[0]
        assert shard_texts(d).count(big) == 1


async def test_a_session_starts_on_a_full_disk_with_no_other_session_open(tmp_path: Path) -> None:
    """The last session closed the read model (SQLite removed its shared-memory file), so a
    new one cannot open it on a full disk: it folds the shards in its own memory and serves."""
    with small_disk(tmp_path / "disk") as disk:
        d = disk / "noon"
        with serve_process(_args(d), serve_env()) as served:
            async with Client(streamable_http_client(served.url)) as client:
                assert not (await create(client, "a", "first memory")).is_error
        read_model = d / ".noon" / "readmodel.sqlite3"
        last = sqlite3.connect(read_model)
        last.execute("SELECT count(*) FROM ops").fetchone()
        last.close()  # the last connection closes: SQLite removes its WAL and shared memory
        assert not Path(f"{read_model}-shm").exists()
        filler = fill(disk)
        with serve_process(_args(d), serve_env()) as late:
            async with Client(streamable_http_client(late.url)) as client:
                assert "first memory" in (await read(client, "core://a"))[0]
                refused = await create(client, "big", "y" * (4 * PAGE))
                assert refused.is_error and "Nothing was written" in texts(refused)[0]
            assert "Traceback" not in late.stderr()
            assert "folds the shards into its own memory" in late.stderr()
        assert read_model.stat().st_size > 0  # kept: a full disk is not a damaged file
        filler.unlink()
