"""Issue 26: a ``noon serve`` killed (SIGKILL) after a call's batch was fsync'd and before it
answered; the agent calls again through a real MCP client on a new ``noon serve``: exactly one
memory exists, and the answer says it was already written. A deliberate second identical call
after the window is written."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from noon.core.ops import decode
from noon.store.retries import WINDOW_MS
from tests.harness.mesh import ROOT, subprocess_env

pytestmark = pytest.mark.integration

AGENT = Implementation(name="agent", version="1")
CREATE = {"parent_uri": "core://", "content": "the one memory", "priority": 1, "disclosure": "d"}
APPEND = {"uri": "core://1", "append": "one more line"}


def serve(d: Path, *, die_at: int | None = None, **env: str) -> StdioServerParameters:
    args = ["serve", "--tools", "uri", "--dir", str(d), "--node-id", "n1"]
    if die_at is not None:
        command = ["-m", "tests.harness.die_after_append", str(die_at), *args]
    else:
        command = ["-m", "noon", *args]
    return StdioServerParameters(
        command=sys.executable, args=command, env=subprocess_env(**env), cwd=str(ROOT)
    )


def texts(d: Path) -> list[str]:
    ops = [decode(line) for line in (d / "n1.jsonl").read_bytes().splitlines()]
    return [str(op.val["text"]) for op in ops if op.el[0] == "content" and op.val]


async def call(params: StdioServerParameters, name: str, args: dict[str, Any]) -> Any:
    async with Client(params, client_info=AGENT, mode="legacy") as client:
        with anyio.fail_after(60):
            return await client.call_tool(name, args)


async def lost(params: StdioServerParameters, name: str, args: dict[str, Any]) -> None:
    """The call is made and its server dies before answering: the client gets no result."""
    with pytest.raises(Exception) as raised:  # whatever the client raises on EOF
        await call(params, name, args)
    assert not isinstance(raised.value, TimeoutError)


async def test_a_call_retried_after_the_server_died_between_fsync_and_answer(
    tmp_path: Path,
) -> None:
    d = tmp_path / "noon"
    await lost(serve(d, die_at=1), "create_memory", CREATE)
    assert texts(d) == ["the one memory"]  # durable, though never answered

    again = await call(serve(d), "create_memory", CREATE)
    said = again.content[0].text
    assert not again.is_error, said
    assert said.startswith("Success (already written): this same call (create_memory"), said
    assert "it was not written again" in said and "Memory: core://1 " in said
    assert again.structured_content["uri"] == "core://1"
    assert texts(d) == ["the one memory"]

    await lost(serve(d, die_at=1), "update_memory", APPEND)
    again = await call(serve(d), "update_memory", APPEND)
    assert not again.is_error and "already written" in again.content[0].text
    assert texts(d) == ["the one memory", "the one memory\none more line"]

    later = str(WINDOW_MS + 60_000)  # a deliberate second identical call, after the window
    again = await call(serve(d, NOON_CLOCK_OFFSET_MS=later), "create_memory", CREATE)
    assert again.content[0].text.startswith("Success: Memory created at 'core://2'")
    assert texts(d).count("the one memory") == 2
