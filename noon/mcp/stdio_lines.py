"""The longest message a stdio session reads, and what an over-long line gets.

The SDK's own stdio reader reads a line of any length; a client could make a session hold as
much memory as it cares to send. Here a line is read only up to :data:`LINE_LIMIT` bytes (the
reader holds at most twice that before it stops reading the pipe). An over-long line is read
past and dropped, logged to stderr, and answered with a JSON-RPC ``Invalid Request`` error, as
the SDK's HTTP transport answers a body it cannot take; the session goes on serving. The error
carries the request's id when the line starts with it (the SDK's clients write ``jsonrpc`` and
``id`` first), so the caller learns at once, and ``null`` otherwise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Protocol

from noon.mcp.uri_base import LONG_TEXT_CHARS

log = logging.getLogger("noon.serve")

LONGEST_JSON_CHAR = 12
"""Bytes of one character at its longest JSON spelling: an escaped surrogate pair."""
LINE_LIMIT = 2 * LONG_TEXT_CHARS * LONGEST_JSON_CHAR + (8 << 20)
"""Longest line read (bytes, about 31 MiB): update_memory's old_string and new_string, each at
its bound in characters and every character at its longest JSON spelling, and 8 MiB for the
rest of the message."""

_SKIP_CHUNK = 1 << 20
_LEADING_ID = re.compile(
    rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,1000}")'
)
INVALID_REQUEST = -32600


def leading_id(head: bytes) -> int | str | None:
    """The request id a line starts with, if it does."""
    found = _LEADING_ID.match(head)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def refusal(request_id: int | str | None) -> bytes:
    """The JSON-RPC error line answering an over-long message."""
    error = {
        "code": INVALID_REQUEST,
        "message": f"message refused: longer than {LINE_LIMIT} bytes (the longest line read)",
    }
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\n").encode()


async def _skip_line(reader: asyncio.StreamReader) -> int:
    """Read past the rest of a line (in pieces, so the copy stays small); its length read."""
    skipped = 0
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError as over:
            skipped += len(await reader.read(min(max(over.consumed, 1), _SKIP_CHUNK)))
        except asyncio.IncompleteReadError as end:
            return skipped + len(end.partial)
        else:
            return skipped + len(line)


class Answers(Protocol):
    async def write(self, data: bytes) -> None: ...
    async def flush(self) -> None: ...


async def next_line(reader: asyncio.StreamReader, answers: Answers) -> bytes:
    """The next line of at most :data:`LINE_LIMIT` bytes (``b""`` at the end of input); each
    longer one before it read past, logged and answered on ``answers``."""
    while True:
        try:
            return await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:
            return end.partial
        except asyncio.LimitOverrunError:
            head = await reader.read(4096)
        length = len(head) + await _skip_line(reader)
        request_id = leading_id(head)
        log.warning(
            "stdio: refused a message of %d bytes (id %s): longer than %d bytes",
            length,
            json.dumps(request_id),
            LINE_LIMIT,
        )
        await answers.write(refusal(request_id))
        await answers.flush()
