"""Reading a JSON body into typed fields at a bounded cost: the size is capped before parsing,
the nesting by the parser (orjson refuses more than 1024 levels), each list by a stated bound,
and a field of the wrong type or out of range is one :class:`BodyError` naming the field.

The messages themselves (:mod:`noon.daemon_link.bodies`) are written with :class:`Fields`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import orjson

from noon.errors import Invalid

T = TypeVar("T")

MAX_INT = (1 << 63) - 1
MAX_TEXT = 1 << 16
"""Characters of one string field (an error message, a URL): longer is not an honest body."""


class BodyError(Invalid):
    """A body that is not the message its route promises; the message says where and how."""


def parse(raw: bytes, *, limit: int, what: str) -> dict[str, object]:
    """A JSON object of at most ``limit`` bytes. Raises :class:`BodyError`."""
    if len(raw) > limit:
        raise BodyError(f"{what}: {len(raw)} bytes, more than the {limit} read")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BodyError(f"{what}: not JSON ({str(exc)[:120]})") from None
    if not isinstance(obj, dict):
        raise BodyError(f"{what}: not a JSON object")
    return obj


class Fields:
    """The fields of one JSON object, each read as the type it must have. ``where`` names the
    object in errors (``/status claims[2]``)."""

    def __init__(self, obj: object, where: str) -> None:
        if not isinstance(obj, dict):
            raise BodyError(f"{where}: not a JSON object")
        self.obj: dict[str, object] = obj
        self.where = where

    def _fail(self, name: str, must: str) -> BodyError:
        seen = repr(self.obj.get(name))[:80]
        return BodyError(f"{self.where}: {name!r} must be {must}, not {seen}")

    def has(self, name: str) -> bool:
        return name in self.obj

    def text(self, name: str, default: str | None = None, limit: int = MAX_TEXT) -> str:
        value = self.obj.get(name, default)
        if not isinstance(value, str) or len(value) > limit:
            raise self._fail(name, f"a string of at most {limit} characters")
        return value

    def integer(self, name: str, default: int | None = None, lo: int = 0, hi: int = MAX_INT) -> int:
        value = self.obj.get(name, default)
        if type(value) is not int or not lo <= value <= hi:
            raise self._fail(name, f"an integer in {lo}..{hi}")
        return value

    def number(self, name: str, default: float | None = None) -> float:
        value = self.obj.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(name, "a number ≥ 0")
        if not 0 <= value <= MAX_INT:
            raise self._fail(name, "a number ≥ 0")
        return float(value)

    def number_or_none(self, name: str) -> float | None:
        return None if self.obj.get(name) is None else self.number(name)

    def flag(self, name: str, default: bool | None = None) -> bool:
        value = self.obj.get(name, default)
        if type(value) is not bool:
            raise self._fail(name, "true or false")
        return value

    def flag_or_none(self, name: str) -> bool | None:
        return None if self.obj.get(name) is None else self.flag(name)

    def items(self, name: str, limit: int, default: list[object] | None = None) -> list[object]:
        value = self.obj.get(name, default)
        if not isinstance(value, list) or len(value) > limit:
            raise self._fail(name, f"a list of at most {limit} items")
        return value

    def each(self, name: str, limit: int, read: Callable[[Fields], T]) -> tuple[T, ...]:
        """Every object of the list ``name``, read by ``read``; an absent list is empty."""
        return tuple(
            read(Fields(item, f"{self.where} {name}[{i}]"))
            for i, item in enumerate(self.items(name, limit, []))
        )

    def texts(self, name: str, limit: int, default: list[object] | None = None) -> tuple[str, ...]:
        out = self.items(name, limit, default)
        if not all(isinstance(s, str) and len(s) <= MAX_TEXT for s in out):
            raise self._fail(name, "a list of strings")
        return tuple(str(s) for s in out)

    def counts(self, name: str, limit: int) -> dict[str, int]:
        """An object of non-negative integers by name (shard heads); absent: empty."""
        value = self.obj.get(name, {})
        if not isinstance(value, dict) or len(value) > limit:
            raise self._fail(name, f"an object of at most {limit} counts")
        if not all(type(v) is int and 0 <= v <= MAX_INT for v in value.values()):
            raise self._fail(name, "an object of integers ≥ 0")
        return dict(value)

    def nested(self, name: str) -> Fields:
        return Fields(self.obj.get(name, {}), f"{self.where} {name}")
