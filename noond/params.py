"""What a request to noond brings, validated and bounded before a route acts on it: query
parameters, the node id in the path, the body (size and time); and ``Refused``, the refusal a
route raises, which carries its JSON ``{"error", "code"}`` answer (PROTOCOL.md §3)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from noon.core.ops import MAX_SEQ, valid_node_id
from noon.errors import NoonError
from noon.store import serve
from noond.wire import Code, hex16, parse_checks, uint


def error_response(status: int, code: Code, message: str, **extra: Any) -> web.Response:
    return web.Response(
        body=orjson.dumps({"error": message, "code": code.value, **extra}),
        status=status,
        content_type="application/json",
    )


def json_response(obj: Any) -> web.Response:
    return web.Response(body=orjson.dumps(obj), content_type="application/json")


class Refused(NoonError):
    def __init__(
        self, status: int, code: Code, message: str, *, logged: bool = True, **extra: Any
    ) -> None:
        super().__init__(message)
        self.code = code
        self.logged = logged
        """False when the reason is logged elsewhere, once (a full disk)."""
        self.body = orjson.dumps({"error": message, "code": code.value, **extra})
        """The JSON answer (also what a stream sends before it closes, §5.1)."""
        self.response = web.Response(body=self.body, status=status, content_type="application/json")


def uint_param(request: web.Request, name: str, default: int | None, hi: int = MAX_SEQ) -> int:
    raw = request.query.get(name)
    if raw is None:
        if default is None:
            raise Refused(400, Code.BAD_REQUEST, f"query parameter {name!r} is required")
        return default
    value = uint(raw, 0, hi)
    if value is None:
        raise Refused(400, Code.BAD_REQUEST, f"{name!r} must be an integer in [0, {hi}]")
    return value


def check_param(request: web.Request) -> int | None:
    raw = request.query.get("check")
    if raw is None:
        return None
    value = hex16(raw)
    if value is None:
        raise Refused(400, Code.BAD_REQUEST, "'check' must be 16 hex digits")
    return value


def checks_param(request: web.Request) -> serve.Checks:
    """``checks=seq:digest,...``: more of the caller's ops for a fork to show on (§4)."""
    raw = request.query.get("checks")
    if not raw:
        return []
    checks = parse_checks(raw)
    if checks is None:
        raise Refused(
            400,
            Code.BAD_REQUEST,
            f"'checks' must be at most {serve.MAX_CHECKS} seq:digest pairs (16 hex digits), "
            "comma-separated",
        )
    return checks


def shard_param(request: web.Request) -> str:
    node = request.match_info["node"]
    if not valid_node_id(node):
        raise Refused(400, Code.BAD_REQUEST, "invalid node id in path")
    return node


async def read_body(request: web.Request, max_body: int, timeout: float) -> bytes:
    declared = request.content_length
    if declared is not None and declared > max_body:
        raise Refused(413, Code.TOO_LARGE, f"body larger than {max_body} bytes")
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            while True:
                chunk = await request.content.read(1 << 16)
                if not chunk:
                    break
                body += chunk
                if len(body) > max_body:
                    raise Refused(413, Code.TOO_LARGE, f"body larger than {max_body} bytes")
    except TimeoutError:
        raise Refused(408, Code.TIMEOUT, "the body did not arrive in time") from None
    return bytes(body)
