"""Reading a request's parameters: every value checked for type, size and range, with a message
that names the parameter (HTTP 400, nothing written). Every string, in the query or anywhere
in a JSON body, is refused if it holds a NUL or a lone surrogate (no text of noon can hold
them: SQLite would cut the string at the NUL, UTF-8 cannot encode the surrogate)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from noon.app.actor import NAMESPACE
from noon.errors import Invalid

MAX_URI = 4096
MAX_TEXT_CHARS = 1 << 20
MAX_SHORT = 4096
MAX_ITEMS = 100


BODY_TIMEOUT: web.AppKey[float] = web.AppKey("body_timeout", float)
"""Seconds a request body may take to arrive (see :mod:`noon.web.listener`)."""


class BadInput(Invalid):
    """A parameter missing, of the wrong type, or out of range."""


class SlowBody(BadInput):
    """The body did not arrive in time (HTTP 408)."""


def _encodable(where: str, value: str) -> str:
    if "\x00" in value:
        raise BadInput(f"{where} holds a NUL character, which no text of noon may hold.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{where} holds a lone surrogate (not a Unicode character).") from None
    return value


def _check_strings(where: str, value: object, depth: int = 0) -> None:
    """Every string in a JSON value, keys too (as deep as the parser allows: orjson refuses
    deeper nesting than Python's recursion limit)."""
    if isinstance(value, str):
        _encodable(where, value)
    elif isinstance(value, list):
        for item in value:
            _check_strings(where, item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _encodable(f"A key of {where.lower()}", key)
            _check_strings(f"Field {key[:40]!r}" if depth == 0 else where, item, depth + 1)


def query_params(request: web.Request) -> None:
    """Refuse a query whose names or values hold what no text may hold."""
    for name, value in request.query.items():
        _encodable("A query parameter's name", name)
        _encodable(f"Query parameter {name[:40]!r}", value)


def query_str(
    request: web.Request, name: str, *, default: str | None = None, limit: int = MAX_URI
) -> str:
    value = request.query.get(name)
    if value is None or value == "":
        if default is None:
            raise BadInput(f"Missing query parameter '{name}'.")
        return default
    if len(value) > limit:
        raise BadInput(f"Query parameter '{name}' is longer than {limit} characters.")
    return value


def query_int(request: web.Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or len(raw) > 12:
        raise BadInput(f"Query parameter '{name}' must be a whole number, got {raw[:40]!r}.")
    value = int(raw)
    if not lo <= value <= hi:
        raise BadInput(f"Query parameter '{name}' must be between {lo} and {hi}, got {value}.")
    return value


def namespace(value: object, default: str) -> str:
    if value is None or value == "":
        return default
    if not isinstance(value, str) or not NAMESPACE.match(value):
        raise BadInput(
            f"Bad namespace {str(value)[:80]!r}: use 1 to 64 letters, digits, '.', '_' or '-'."
        )
    return value


async def json_body(request: web.Request) -> dict[str, Any]:
    if request.content_type != "application/json":
        raise BadInput("Send a JSON object with Content-Type: application/json.")
    seconds = request.app.get(BODY_TIMEOUT, 30.0)
    try:
        async with asyncio.timeout(seconds):
            raw = await request.read()
    except TimeoutError:
        raise SlowBody(f"The body did not arrive within {seconds:g} s.") from None
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"The body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadInput("The body must be a JSON object.")
    _check_strings("The body", body)
    return body


class Body:
    """Typed access to a JSON object's fields; unknown fields are refused by name."""

    def __init__(self, data: dict[str, Any], allowed: set[str]) -> None:
        unknown = sorted(set(data) - allowed - {"ns"})
        if unknown:
            raise BadInput(
                f"Unknown field(s) {', '.join(repr(u[:40]) for u in unknown[:5])}; expected "
                f"{', '.join(sorted(allowed))}."
            )
        self.data = data

    def text(self, name: str, *, required: bool = True, limit: int = MAX_SHORT) -> str | None:
        value = self.data.get(name)
        if value is None:
            if required:
                raise BadInput(f"Missing field '{name}'.")
            return None
        if not isinstance(value, str):
            raise BadInput(f"Field '{name}' must be a string.")
        if len(value) > limit:
            raise BadInput(f"Field '{name}' is longer than {limit} characters.")
        return value

    def need(self, name: str, *, limit: int = MAX_SHORT) -> str:
        value = self.text(name, limit=limit)
        assert value is not None
        if not value.strip():
            raise BadInput(f"Field '{name}' is empty.")
        return value

    def number(self, name: str, lo: int, hi: int, *, required: bool = True) -> int | None:
        value = self.data.get(name)
        if value is None:
            if required:
                raise BadInput(f"Missing field '{name}'.")
            return None
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise BadInput(f"Field '{name}' must be a whole number from {lo} to {hi}.")
        return value

    def flag(self, name: str) -> bool:
        value = self.data.get(name, False)
        if not isinstance(value, bool):
            raise BadInput(f"Field '{name}' must be true or false.")
        return value

    def texts(self, name: str, *, limit: int = MAX_URI, items: int = MAX_ITEMS) -> list[str]:
        value = self.data.get(name, [])
        if not isinstance(value, list) or len(value) > items:
            raise BadInput(f"Field '{name}' must be a list of at most {items} strings.")
        for v in value:
            if not isinstance(v, str) or not v or len(v) > limit:
                raise BadInput(f"Field '{name}' holds an empty, non-string or too long item.")
        return value

    def seqs(self, name: str) -> dict[str, int] | None:
        value = self.data.get(name)
        if value is None:
            return None
        if not isinstance(value, dict) or len(value) > 10_000:
            raise BadInput(f"Field '{name}' must map node ids to seqs.")
        for k, v in value.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0 or len(k) > 64:
                raise BadInput(f"Field '{name}' must map node ids to seqs.")
        return value
