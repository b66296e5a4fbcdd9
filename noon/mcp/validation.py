"""Tool arguments checked against a tool's input schema, reported the way the official memory
server (zod through the TypeScript SDK) reports them: one line per problem, in schema order,
``Invalid input: expected string, received undefined at entities[0].entityType``."""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import ValidationError

Path = tuple[str | int, ...]


def js_type(value: object) -> str:
    """What zod calls the type of a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def format_path(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _schema_at(schema: dict[str, Any], path: Path) -> dict[str, Any]:
    for part in path:
        if isinstance(part, int):
            schema = schema.get("items", {})
        else:
            schema = schema.get("properties", {}).get(part, {})
    return schema


def _position(schema: dict[str, Any], path: Path) -> tuple[int, ...]:
    """Sort key: where each path step sits in the schema (properties in declaration order)."""
    key = []
    for part in path:
        if isinstance(part, int):
            key.append(part)
            schema = schema.get("items", {})
        else:
            props = list(schema.get("properties", {}))
            key.append(props.index(part) if part in props else len(props))
            schema = schema.get("properties", {}).get(part, {})
    return tuple(key)


_UNKNOWN = "\x00unknown"
"""Path marker of an unknown-keys problem: sorts last, not shown."""


def _line(path: Path, text: str) -> str:
    shown = path[:-1] if path and path[-1] == _UNKNOWN else path
    return f"{text} at {format_path(shown)}" if shown else text


_SIMPLE_KEYWORDS = frozenset(
    (
        "$schema",
        "type",
        "properties",
        "required",
        "items",
        "additionalProperties",
        "description",
        "title",
        "default",
        *("minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems"),
    )
)
Check = Callable[[Any], bool]
_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_BOUNDS: tuple[tuple[str, str, Check, Callable[[Any], float]], ...] = (
    ("minLength", "maxLength", _TYPES["string"], len),
    ("minimum", "maximum", _TYPES["number"], lambda number: number),
    ("minItems", "maxItems", _TYPES["array"], len),
)
"""The bounds JSON Schema sets on a kind of value and ignores on the others: the lower and the
upper keyword, the values they apply to, and the measure they bound (a string's length in code
points, as Python's ``len``)."""


def _simple(schema: Any) -> bool:
    """Whether :func:`_compiled` understands every keyword of ``schema``."""
    if not isinstance(schema, dict) or not set(schema) <= _SIMPLE_KEYWORDS:
        return False
    if not isinstance(schema.get("type", "object"), str):
        return False
    if schema.get("type", "object") not in _TYPES:
        return False
    extra = schema.get("additionalProperties", True)
    bounds = [schema[k] for low, high, _, _ in _BOUNDS for k in (low, high) if k in schema]
    if not all(_TYPES["number"](b) for b in bounds):
        return False
    return (
        all(_simple(s) for s in schema.get("properties", {}).values())
        and ("items" not in schema or _simple(schema["items"]))
        and isinstance(extra, bool)
    )


def _compiled(schema: dict[str, Any]) -> Check:
    """A check of ``schema`` (one :func:`_simple` accepts) built once per tool: the same
    verdict as jsonschema, without reading the schema again on every call (a bulk
    create_entities of 500 entities is some 3,000 values to check)."""
    kind = schema.get("type")
    type_ok: Check | None = _TYPES[kind] if kind is not None else None
    props = {name: _compiled(sub) for name, sub in schema.get("properties", {}).items()}
    required = tuple(schema.get("required", ()))
    closed = schema.get("additionalProperties", True) is False
    items = _compiled(schema["items"]) if "items" in schema else None
    bounded = _bounds(schema)
    if type_ok is not None and kind not in ("object", "array") and bounded is None:
        return type_ok  # a leaf: its type is all there is to check

    def check(value: Any) -> bool:
        if type_ok is not None and not type_ok(value):
            return False
        if bounded is not None and not bounded(value):
            return False
        if isinstance(value, dict):
            for name in required:
                if name not in value:
                    return False
            for key, item in value.items():
                sub = props.get(key)
                if sub is None:
                    if closed:
                        return False
                elif not sub(item):
                    return False
            return True
        if items is not None and isinstance(value, list):
            for item in value:
                if not items(item):
                    return False
        return True

    return check


def _within(applies: Check, measure: Callable[[Any], float], low: float, high: float) -> Check:
    return lambda value: not applies(value) or low <= measure(value) <= high


def _bounds(schema: dict[str, Any]) -> Check | None:
    """The check of the length, size and range bounds ``schema`` sets; None when it sets none."""
    checks = [
        _within(applies, measure, schema.get(low, -math.inf), schema.get(high, math.inf))
        for low, high, applies, measure in _BOUNDS
        if low in schema or high in schema
    ]
    if not checks:
        return None
    return lambda value: all(check(value) for check in checks)


class ArgumentValidator:
    def __init__(self, schema: dict[str, Any], *, hints: bool = False) -> None:
        self.schema = schema
        self.hints = hints
        self.simple = _simple(schema)
        self._fast_check = _compiled(schema) if self.simple else None

    @cached_property
    def validator(self) -> Draft7Validator:
        """jsonschema (with its referencing stack) is imported on the first argument the fast
        check refuses or cannot judge, not when ``noon serve`` starts: no valid call needs it."""
        from jsonschema import Draft7Validator

        return Draft7Validator(self.schema)

    def problems(self, args: dict[str, Any]) -> list[str]:
        """Every problem with ``args``, one line each; empty when they are valid."""
        if self._fast_check is not None and self._fast_check(args):
            return []
        found: dict[Path, str] = {}
        for error in self.validator.iter_errors(args):
            for path, text in self._describe(error):
                found.setdefault(path, text)
        ordered = sorted(found.items(), key=lambda item: _position(self.schema, item[0]))
        return [_line(path, text) for path, text in ordered]

    def _describe(self, error: ValidationError) -> list[tuple[Path, str]]:
        path: Path = tuple(error.absolute_path)
        value: Any = error.validator_value
        schema: Any = error.schema
        instance: Any = error.instance
        if error.validator == "required":
            missing = [p for p in value if p not in instance]
            out = []
            for name in missing:
                expected = _schema_at(self.schema, (*path, name)).get("type", "value")
                text = f"Invalid input: expected {expected}, received undefined"
                out.append(((*path, name), text))
            return out
        if error.validator == "type":
            expected = value
            got = js_type(instance)
            return [(path, f"Invalid input: expected {expected}, received {got}")]
        if error.validator == "additionalProperties":
            allowed = set(schema.get("properties", {}))
            extra = sorted(k for k in instance if k not in allowed)
            text = ", ".join(f'"{k}"' for k in extra)
            plural = "s" if len(extra) > 1 else ""
            if self.hints:
                guesses = [
                    f'"{k}" -> "{m[0]}"'
                    for k in extra
                    if (m := difflib.get_close_matches(k, sorted(allowed), n=1, cutoff=0.6))
                ]
                if guesses:
                    text += f" (did you mean {', '.join(guesses)}?)"
            # UNKNOWN sorts after every declared property, as zod lists unknown keys last
            return [((*path, _UNKNOWN), f"Unrecognized key{plural}: {text}")]
        return [(path, f"Invalid input: {error.message}")]
