"""A stdio session reads a line only up to its bound (noon.mcp.stdio_lines): an over-long message
is read past, answered with a JSON-RPC error and logged, the session's memory stays bounded, and
it goes on serving, the largest legitimate message included."""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.mcp.stdio_lines import LINE_LIMIT, leading_id, next_line
from noon.mcp.uri_base import LONG_TEXT_CHARS
from tests.harness.mcp import INITIALIZE, serve_env

MIB = 1 << 20


class Answers:
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    async def write(self, data: bytes) -> None:
        self.lines.append(data)

    async def flush(self) -> None:
        pass


async def _lines_of(pieces: list[bytes], limit: int) -> tuple[list[bytes], list[Any]]:
    reader = asyncio.StreamReader(limit=limit)
    for piece in pieces:
        reader.feed_data(piece)
    reader.feed_eof()
    answers = Answers()
    lines = []
    while line := await next_line(reader, answers):
        lines.append(line)
    return lines, [json.loads(a) for a in answers.lines]


@given(
    lines=st.lists(st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    split=st.integers(1, 97),
)
def test_lines_within_the_bound_pass_and_longer_ones_are_answered(
    lines: list[bytes], split: int
) -> None:
    limit = 100
    sent = [b'{"id": %d, "x": "' % i + line + b'"}\n' for i, line in enumerate(lines)]
    data = b"".join(sent)
    pieces = [data[i : i + split] for i in range(0, len(data), split)]
    got, answers = asyncio.run(_lines_of(pieces, limit))
    assert got == [x for x in sent if len(x) <= limit]
    assert [a["id"] for a in answers] == [i for i, x in enumerate(sent) if len(x) > limit]
    assert all(a["error"]["code"] == -32600 for a in answers)


@given(st.one_of(st.integers(-(10**17), 10**17), st.text(max_size=50)))
def test_the_id_a_line_starts_with_is_found(request_id: int | str) -> None:
    for message in (
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"id": 0}},
        {"id": request_id, "jsonrpc": "2.0"},
    ):
        assert leading_id(json.dumps(message).encode()[:4096]) == request_id
    assert leading_id(json.dumps({"method": "x", "id": request_id}).encode()) is None


def test_the_bound_holds_the_largest_legitimate_message() -> None:
    most = {"old_string": "\U0001f600" * LONG_TEXT_CHARS, "new_string": "\x01" * LONG_TEXT_CHARS}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": most})
    assert len(line) + 1 < LINE_LIMIT == 32_388_608  # as docs/knowledge-graph.md says


def _reader(pipe: IO[bytes], into: queue.Queue[bytes]) -> None:
    for line in pipe:
        into.put(line)
    into.put(b"")


def _answer(got: queue.Queue[bytes]) -> dict[str, Any]:
    line = got.get(timeout=120)
    assert line, "the session ended"
    answer: dict[str, Any] = json.loads(line)
    return answer


def _peak_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def _send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    pipe.write(json.dumps(message).encode() + b"\n")
    pipe.flush()


def _create(request_id: int, content: str) -> dict[str, Any]:
    args = {"parent_uri": "core://", "content": content, "priority": 1, "disclosure": "probe"}
    params = {"name": "create_memory", "arguments": args}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.mark.integration
def test_an_over_long_line_is_refused_with_bounded_memory_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "noon", "serve", "--dir", str(tmp_path), "--node-id", "n1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=serve_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    got: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, got), daemon=True).start()
    try:
        _send(proc.stdin, INITIALIZE)
        assert _answer(got)["id"] == 1
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert _answer(got) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        before = _peak_rss(proc.pid)

        hostile = 5 * LINE_LIMIT // MIB * MIB  # one create_memory, five times the bound
        head, tail = json.dumps(_create(3, "\0")).encode().split(b"\\u0000")
        started = time.monotonic()
        proc.stdin.write(head)
        for _ in range(hostile // MIB):
            proc.stdin.write(b"x" * MIB)
        proc.stdin.write(tail + b"\n")
        proc.stdin.flush()
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 4, "method": "ping"})
        refused = _answer(got)
        assert refused["id"] == 3
        assert refused["error"]["code"] == -32600
        assert f"longer than {LINE_LIMIT} bytes" in refused["error"]["message"]
        assert _answer(got) == {"jsonrpc": "2.0", "id": 4, "result": {}}
        took = time.monotonic() - started
        grew = _peak_rss(proc.pid) - before
        assert grew < 2 * LINE_LIMIT + 32 * MIB, f"the session grew {grew >> 20} MiB"
        assert took < 120

        largest = "\U0001f600" * LONG_TEXT_CHARS  # sent escaped: 12 bytes a character
        _send(proc.stdin, _create(5, largest))
        created = _answer(got)
        assert created["id"] == 5 and not created["result"].get("isError"), created
        uri = created["result"]["structuredContent"]["uri"]
        read = {"name": "read_memory", "arguments": {"uri": uri}}
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": read})
        assert largest in _answer(got)["result"]["content"][0]["text"]
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)
    stderr = proc.stderr.read().decode()
    assert proc.returncode == 0, stderr
    assert f"refused a message of {len(head) + hostile + len(tail) + 1} bytes (id 3)" in stderr, (
        stderr
    )
    print(f"refused {hostile >> 20} MiB in {took:.2f} s; peak RSS grew {grew >> 20} MiB")
