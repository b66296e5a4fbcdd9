"""stdin and stdout for the SDK's stdio transport, read and written on the event loop.

The SDK's ``stdio_server()`` wraps the standard streams in ``anyio.wrap_file``, which hands every
line read, every write and every flush to a worker thread: three thread hand-offs per message
even for a ping, each waiting for the interpreter lock whenever another thread holds it. When
both standard streams are pipes (as an MCP client starts a server), the same lines are read and
written here through the event loop's pipe transports instead, and fd 0 and fd 1 are diverted
while serving by the SDK's own ``_claim_fd``, so stray output misses the wire. Anything else (a
file, a terminal) is served by the SDK's ``stdio_server`` whole.

On pipes, :func:`message_streams` is the SDK's ``stdio_server`` loops (each line validated
into a JSON-RPC message with the SDK's adapter, each answer framed with the SDK's
``model_dump_json``) with one difference: each message is let go as soon as it has been passed
on or written. The SDK's loops hold their last message until the next one arrives, so a
read_graph answer of 50k entities (its whole dumped tree) was freed on the next request's way,
inside the next ping: a ping grew with the store it never reads.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from typing import Any, BinaryIO

import anyio
import mcp_types
from mcp.server import stdio as sdk_stdio
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

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
async def message_streams(
    lines: AsyncIterator[str], out: PipeWriter
) -> AsyncIterator[tuple[Any, Any]]:
    """The server's read and write streams over ``lines`` and ``out``, as the SDK's
    ``stdio_server`` makes them, each message dropped once passed on or written (see above)."""
    to_server, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, from_server = create_context_streams[SessionMessage](0)

    async def read_lines() -> None:
        with suppress(anyio.ClosedResourceError):  # the server stopped reading (as the SDK's)
            async with to_server:
                async for line in lines:
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(
                            line, by_name=False
                        )
                    except Exception as exc:  # the SDK's reader passes a bad line's error on
                        await to_server.send(exc)
                        continue
                    await to_server.send(SessionMessage(message))
                    del line, message  # a bulk request's tree is the server's now

    async def write_messages() -> None:
        with suppress(anyio.ClosedResourceError):
            async with from_server:
                async for sent in from_server:
                    text = sent.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await out.write(text + "\n")
                    await out.flush()
                    del sent, text  # freed once written, not on the next answer's way

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_lines)
        tasks.start_soon(write_messages)
        yield read_stream, write_stream


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The server's streams: on the event loop when stdin and stdout are pipes, else the SDK's
    ``stdio_server``'s."""
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
        async with message_streams(PipeLines(reader, answers), answers) as streams:
            yield streams
