"""stdin and stdout for the SDK's stdio transport, read and written on the event loop.

The SDK's ``stdio_server()`` wraps the standard streams in ``anyio.wrap_file``, which hands every
line read, every write and every flush to a worker thread: three thread hand-offs per message
even for a ping, each waiting for the interpreter lock whenever another thread holds it. When
both standard streams are pipes (as an MCP client starts a server), the same lines are read and
written here through the event loop's pipe transports instead, and given to the SDK's own
``stdio_server`` as its streams: the SDK still parses, validates and frames every message, and
still diverts fd 0 and fd 1 while serving (its ``_claim_fd``) so stray output misses the wire.
Anything else (a file, a terminal) is served by the SDK's default streams.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, BinaryIO

from mcp.server import stdio as sdk_stdio

from noon.mcp.stdio_lines import LINE_LIMIT, next_line


class PipeLines:
    """The lines of a pipe, decoded as the SDK decodes them (UTF-8, bad bytes replaced); an
    over-long one is answered on ``answers`` and skipped (:mod:`noon.mcp.stdio_lines`)."""

    def __init__(self, reader: asyncio.StreamReader, answers: PipeWriter) -> None:
        self._reader = reader
        self._answers = answers

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await next_line(self._reader, self._answers)
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class PipeWriter:
    """Text written to a pipe; ``flush`` waits while the pipe's reader is behind."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _claimed(
    fd: int, stream: Any, mode: str, divert: Callable[[], int], stack: AsyncExitStack
) -> BinaryIO:
    """The SDK's claim of a standard stream (fd diverted while serving), released on exit."""
    wire, release = sdk_stdio._claim_fd(fd, stream, mode, divert)  # type: ignore[arg-type]
    if release is not None:
        stack.callback(release)
    return wire


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server`` streams, on the event loop when stdin and stdout are pipes."""
    if not (_is_pipe(0) and _is_pipe(1)):
        async with sdk_stdio.stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    async with AsyncExitStack() as stack:
        wire_in = _claimed(0, sys.stdin, "rb", sdk_stdio._open_stdin_diversion, stack)
        wire_out = _claimed(1, sys.stdout, "wb", sdk_stdio._open_stdout_diversion, stack)
        reader = asyncio.StreamReader(limit=LINE_LIMIT, loop=loop)
        reading, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), wire_in
        )
        stack.callback(reading.close)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, wire_out
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        stack.callback(transport.close)
        answers = PipeWriter(writer)
        async with sdk_stdio.stdio_server(PipeLines(reader, answers), answers) as streams:  # type: ignore[arg-type]
            yield streams
