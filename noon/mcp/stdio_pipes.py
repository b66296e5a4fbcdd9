"""stdin and stdout for the SDK's stdio transport, read and written on the event loop.

The SDK's ``stdio_server()`` wraps the standard streams in ``anyio.wrap_file``, which hands every
line read, every write and every flush to a worker thread: three thread hand-offs per message
even for a ping, each waiting for the interpreter lock whenever another thread holds it. When
both standard streams are pipes (as an MCP client starts a server), the same lines are read and
written here through the event loop's pipe transports instead, and fd 0 and fd 1 are diverted
while serving by the SDK's own ``_claim_fd``, so stray output misses the wire. Anything else (a
file, a terminal) is served by the SDK's ``stdio_server`` whole.

On pipes the server is given its two streams as the SDK's ``ReadStream`` and ``WriteStream``
protocols describe them, without the SDK's reader and writer tasks and their memory streams:
:class:`LineMessages` validates each line with the SDK's adapter in the task that reads it (the
SDK's runner), :class:`WireMessages` frames each message as the SDK's ``model_dump_json`` does and
writes it in the task that sends it. Two task hand-offs fewer per message (a ping's CPU in one
process about 0.20 -> 0.15 ms), and no message is held after it is written: the SDK's writer
held its last one until the next arrived, so a 50k-entity read_graph answer (its whole dumped
tree) was freed inside the next request, and a ping grew with the store it never reads.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, BinaryIO, Self

import anyio
import mcp_types
import orjson
from mcp.server import stdio as sdk_stdio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCMessage

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
    """Bytes written to a pipe; ``flush`` waits while the pipe's reader is behind."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, data: bytes) -> None:
        self._writer.write(data)

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


class _Closable:
    """A stream end the server closes (``aclose``, or leaving ``async with``): once closed it
    refuses to be used, as the SDK's memory streams do."""

    _closed = False

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class LineMessages(_Closable):
    """The server's read stream (the SDK's ``ReadStream``): each line validated into a JSON-RPC
    message as the SDK's stdio reader does it, in the task that reads, with no task or memory
    stream between; a line that fails is passed on as its error, as the SDK's reader does."""

    last_context = None
    """No sender's context to carry (the SDK's runner then uses the reading task's own)."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self._lines = lines

    async def receive(self) -> SessionMessage | Exception:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            line = await anext(self._lines)
        except StopAsyncIteration:
            raise anyio.EndOfStream from None
        try:
            return SessionMessage(
                mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            )
        except Exception as exc:
            return exc

    def __aiter__(self) -> LineMessages:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


_PLAIN_JSON = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_PLAIN_JSON |= orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_APPEND_NEWLINE


def framed(message: JSONRPCMessage) -> bytes:
    """The line the SDK's stdio writer sends for ``message``: ``model_dump_json(by_alias=True,
    exclude_unset=True)`` encoded in UTF-8, and a newline.

    The SDK writes that str encoded again; here the serializer's UTF-8 bytes are written as they
    come. An answer (a ``JSONRPCResponse``: its three fields required, none aliased) is framed by
    orjson instead, about twice as fast on a large tree: its result is the SDK runner's dump in
    JSON mode (plain dicts, lists, str, int, float, bool, None), which orjson writes in the very
    same bytes as pydantic (the same escapes, float spelling, key order and raw UTF-8; a test
    holds them side by side on arbitrary JSON). Anything orjson would write otherwise or refuses
    (a subclass, a dataclass, a datetime, an int past 64 bits, a lone surrogate) raises
    ``TypeError`` and is framed by pydantic."""
    if type(message) is mcp_types.JSONRPCResponse:
        wire = {"jsonrpc": message.jsonrpc, "id": message.id, "result": message.result}
        try:
            return orjson.dumps(wire, option=_PLAIN_JSON)
        except TypeError:
            pass
    serializer = message.__pydantic_serializer__
    return serializer.to_json(message, by_alias=True, exclude_unset=True) + b"\n"


class WireMessages(_Closable):
    """The server's write stream (the SDK's ``WriteStream``): each message framed as the SDK's
    stdio writer frames it and written by the task that sends it, so it is held only until
    written; a pipe whose reader left is a closed stream to the SDK.

    The bytes are those of the SDK's writer (:func:`framed` says how they are made cheaper)."""

    def __init__(self, out: PipeWriter) -> None:
        self._out = out

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        data = framed(item.message)
        try:
            await self._out.write(data)
            await self._out.flush()
        except (BrokenPipeError, ConnectionResetError) as gone:
            raise anyio.BrokenResourceError from gone


@asynccontextmanager
async def message_streams(
    lines: AsyncIterator[str], out: PipeWriter
) -> AsyncIterator[tuple[LineMessages, WireMessages]]:
    """The server's read and write streams over ``lines`` and ``out`` (see above)."""
    read, write = LineMessages(lines), WireMessages(out)
    try:
        yield read, write
    finally:
        await read.aclose()
        await write.aclose()


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
