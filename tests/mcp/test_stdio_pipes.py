"""``noon serve`` on pipes reads and writes its messages on the event loop (noon.mcp.stdio_pipes):
no worker thread is woken for a message, the SDK's adapter and dump still validate and frame
every one, stray output still misses the wire; on anything but pipes the SDK's own streams
serve."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import anyio
import mcp_types
import pytest
from mcp.shared.message import SessionMessage

from noon.mcp.stdio_pipes import message_streams
from tests.harness.mcp import serve_env

pytestmark = pytest.mark.integration

PROBE = """
import sys
import anyio.to_thread

hops = []
hand_off = anyio.to_thread.run_sync


async def counted(fn, *args, **kwargs):
    hops.append(getattr(fn, "__qualname__", repr(fn)))
    return await hand_off(fn, *args, **kwargs)


anyio.to_thread.run_sync = counted

import noon.mcp.command as command

options = command.initialization_options


def printing(server):  # runs once serving has claimed stdout: the print must miss the wire
    print("stray output while serving", flush=True)
    return options(server)


command.initialization_options = printing
from noon.cli import main

try:
    main(["serve", "--tools", "kg", "--dir", sys.argv[1], "--node-id", "probe"])
finally:
    print("HOPS", len(hops), sorted(set(hops)), file=sys.stderr)
"""
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "probe", "version": "1"},
}


def _send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    pipe.write(json.dumps(message).encode() + b"\n")
    pipe.flush()


def _session(tmp_path: Path, stdout: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", PROBE, str(tmp_path / "store")],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=serve_env(),
    )


def _requests(pipe: IO[bytes]) -> None:
    _send(pipe, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
    _send(pipe, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i in range(3):
        _send(pipe, {"jsonrpc": "2.0", "id": 10 + i, "method": "ping"})
    _send(pipe, {"jsonrpc": "2.0", "id": 20, "method": "tools/list"})
    _send(pipe, {"jsonrpc": "2.0", "id": 21, "method": "nope"})


def _check(answers: list[dict[str, Any]]) -> None:
    by_id = {a["id"]: a for a in answers}
    assert set(by_id) == {1, 10, 11, 12, 20, 21}
    assert by_id[1]["result"]["serverInfo"]["name"] == "noon"
    assert all(by_id[i]["result"] == {} for i in (10, 11, 12))
    assert len(by_id[20]["result"]["tools"]) == 9
    assert by_id[21]["error"]["code"] == -32601  # the SDK's answer to an unknown method


def _ended(proc: subprocess.Popen[bytes]) -> bytes:
    """Close the session's stdin (the end of the session) and its stderr once it exits."""
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    proc.wait(timeout=60)
    return proc.stderr.read()


def _hops(stderr: bytes) -> int:
    line = next(x for x in stderr.decode().splitlines() if x.startswith("HOPS "))
    return int(line.split()[1])


def test_messages_on_pipes_wake_no_worker_thread(tmp_path: Path) -> None:
    proc = _session(tmp_path, subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _requests(proc.stdin)
        lines = [proc.stdout.readline() for _ in range(6)]
    finally:
        stderr = _ended(proc)
    _check([json.loads(line) for line in lines])
    assert b"stray output while serving" in stderr
    assert proc.returncode == 0
    assert _hops(stderr) == 0  # the SDK's own streams hand each read, write and flush over


def test_stdout_to_a_file_is_served_by_the_sdk_streams(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with out.open("wb") as sink:
        proc = _session(tmp_path, sink)
        assert proc.stdin is not None
        try:
            _requests(proc.stdin)
            deadline = time.monotonic() + 60
            while len(out.read_bytes().splitlines()) < 6 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stderr = _ended(proc)
    _check([json.loads(line) for line in out.read_bytes().splitlines()])
    assert b"stray output while serving" in stderr
    assert _hops(stderr) > 0


class _Out:
    """Answers written by :func:`message_streams`; ``flushed`` is set at each flush."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.flushed = asyncio.Event()

    async def write(self, data: bytes) -> None:
        self.lines.append(data)

    async def flush(self) -> None:
        self.flushed.set()


class _Tree(dict[str, Any]):
    """A part of an answer that a weak reference can watch."""


async def _lines(texts: list[str]) -> AsyncIterator[str]:
    for text in texts:
        yield text


async def test_an_answer_is_let_go_once_written() -> None:
    """The SDK's stdio writer held its last answer until the next one came, so a 50k-entity
    read_graph answer was freed inside the next request (a ping grew with the store); here the
    task that sends an answer writes it, and nothing holds it after."""
    out = _Out()
    request = '{"jsonrpc": "2.0", "id": 7, "method": "ping"}\n'
    async with message_streams(_lines(["not json\n", request]), out) as (read, write):  # type: ignore[arg-type]
        bad, good = await read.receive(), await read.receive()
        assert isinstance(bad, Exception)  # as the SDK's reader passes a bad line on
        assert isinstance(good, SessionMessage)
        assert good.message == mcp_types.jsonrpc_message_adapter.validate_json(request)
        with pytest.raises(anyio.EndOfStream):
            await read.receive()
        tree = _Tree(entities=[{"name": "e1", "observations": ["fact 1"]}])
        watch = weakref.ref(tree)
        answer = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=7, result={"graph": tree})
        await write.send(SessionMessage(answer))
        del tree, answer
        assert out.flushed.is_set()
        assert json.loads(out.lines[0])["result"]["graph"]["entities"][0]["name"] == "e1"
        assert watch() is None  # written and freed, with no next answer yet
    with pytest.raises(anyio.ClosedResourceError):  # as the SDK's streams after the session
        await write.send(SessionMessage(answer_to(8)))


def answer_to(request_id: int) -> mcp_types.JSONRPCResponse:
    return mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={})


class _Gone(_Out):
    async def flush(self) -> None:
        raise BrokenPipeError(32, "the client left")


async def test_a_pipe_whose_reader_left_is_a_broken_stream_to_the_sdk() -> None:
    """The SDK's dispatcher drops an answer to a closed or broken stream (and logs it) rather
    than failing the session on an OSError it does not expect."""
    async with message_streams(_lines([]), _Gone()) as (read, write):  # type: ignore[arg-type]
        with pytest.raises(anyio.BrokenResourceError):
            await write.send(SessionMessage(answer_to(1)))
        assert [m async for m in read] == []
